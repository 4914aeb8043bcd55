// Helpers shared by the fusion rules.
#include "planner/fusion/rule_helpers.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/activation_rules.h"
#include "kernels/node_view.h"

namespace onyx::planner::fusion {

using kernels::ActivationKind;
using kernels::FusedActivation;

const FusionNode& Captured(const FusionGraph& g, const Match& m, const std::string& node_capture) {
  const int id = m.node(node_capture);
  ONYX_CHECK(id >= 0);  // a rule reads only captures its own pattern makes
  return g.node(id);
}

bool IsFloat32(const FusionGraph& g, int slot) {
  if (slot < 0) return false;
  const TypeInfo& t = g.Type(slot);
  return t.is_tensor() && t.elem == DType::kFloat;
}

std::optional<Shape> StaticShape(const FusionGraph& g, int slot) {
  if (slot < 0) return std::nullopt;
  const TypeInfo& t = g.Type(slot);
  if (!t.is_tensor() || !t.shape_is_static()) return std::nullopt;
  return t.static_shape();
}

std::optional<float> ScalarConstant(const FusionGraph& g, int slot) {
  const Tensor* t = g.Constant(slot);
  if (!t || t->dtype() != DType::kFloat || t->numel() != 1) return std::nullopt;
  return t->data<float>()[0];
}

bool Near(double a, double b, double rel) {
  return std::fabs(a - b) <= rel * std::fabs(b);
}

std::optional<std::vector<float>> AxisValues(const FusionGraph& g, int c, const TypeInfo& out,
                                             int64_t axis) {
  const Tensor* t = g.Constant(c);
  if (!t || t->dtype() != DType::kFloat || !out.is_tensor() || !out.has_shape) return std::nullopt;
  const int64_t rank = out.rank();
  if (axis < 0 || axis >= rank || t->rank() > rank || !out.dims[axis].known()) return std::nullopt;
  const int64_t n = out.dims[axis].value;
  // Every other dim of the constant is 1, so the other dims of `out` need not be known.
  for (int64_t d = 0; d < t->rank(); ++d) {
    const int64_t j = rank - t->rank() + d;
    const int64_t size = t->dim(d);
    if (size != 1 && !(j == axis && size == n)) return std::nullopt;
  }
  const float* v = t->data<float>();
  if (t->numel() == 1) return std::vector<float>(static_cast<size_t>(n), v[0]);
  return std::vector<float>(v, v + n);
}

std::optional<std::vector<int64_t>> TransposePerm(const FusionGraph& g, const FusionNode& n) {
  const ir::Attribute* a = n.node->attr("perm");
  if (a) return a->ints;
  if (n.inputs.empty() || n.inputs[0] < 0) return std::nullopt;
  const TypeInfo& t = g.Type(n.inputs[0]);
  if (!t.is_tensor() || !t.has_shape) return std::nullopt;
  std::vector<int64_t> perm;
  for (int64_t i = t.rank() - 1; i >= 0; --i) perm.push_back(i);
  return perm;
}

bool IntAttrIs(const ir::Node& n, const std::string& name, int64_t value) {
  const ir::Attribute* a = n.attr(name);
  return !a || (a->type == ir::AttrType::kInt && a->i == value);
}

bool BatchNormAffine(const FusionGraph& g, const FusionNode& bn, int64_t channels,
                     std::vector<double>* scale, std::vector<double>* shift) {
  const ir::Node& n = *bn.node;
  if (n.domain != "" || n.op_type != "BatchNormalization" || bn.inputs.size() != 5) return false;
  // Named training outputs make onyx's BatchNormalization compute batch statistics.
  for (size_t k = 1; k < bn.outputs.size(); ++k)
    if (bn.outputs[k] >= 0) return false;
  if (!IntAttrIs(n, "spatial", 1) || !IntAttrIs(n, "training_mode", 0)) return false;
  if (!IsFloat32(g, bn.inputs[0])) return false;
  const Tensor* p[4];
  for (int i = 0; i < 4; ++i) {
    p[i] = g.Constant(bn.inputs[i + 1]);
    if (!p[i] || p[i]->dtype() != DType::kFloat || p[i]->numel() != channels) return false;
  }
  const double eps = kernels::NodeView(n).attr_float("epsilon", 1e-5f);
  scale->resize(static_cast<size_t>(channels));
  shift->resize(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    const double s = p[0]->data<float>()[c] / std::sqrt(p[3]->data<float>()[c] + eps);
    (*scale)[c] = s;
    (*shift)[c] = p[1]->data<float>()[c] - p[2]->data<float>()[c] * s;
  }
  return true;
}

std::optional<FusedActivation> ActivationOf(const FusionGraph& g, const FusionNode& n) {
  const ir::Node& node = *n.node;
  if (!node.domain.empty() || n.inputs.empty() || !IsFloat32(g, n.inputs[0])) return std::nullopt;
  const kernels::ActivationRule* rule = kernels::FindActivationRule(node.op_type);
  if (!rule || !rule->fusable) return std::nullopt;
  // The table reads and checks the attributes (an invalid one leaves the node to its kernel).
  StatusOr<FusedActivation> parsed = kernels::ParseActivation(kernels::NodeView(node));
  if (!parsed.ok()) return std::nullopt;
  FusedActivation a = *parsed;
  if (a.kind == ActivationKind::kClip && node.opset >= 11) {
    // From opset 11 the bounds are optional inputs: each must be a constant to fold.
    constexpr float kInf = std::numeric_limits<float>::infinity();
    a.alpha = -kInf;
    a.beta = kInf;
    for (int i : {1, 2}) {
      if (static_cast<int>(n.inputs.size()) <= i || n.inputs[i] < 0) continue;
      const std::optional<float> bound = ScalarConstant(g, n.inputs[i]);
      if (!bound) return std::nullopt;
      (i == 1 ? a.alpha : a.beta) = *bound;
    }
  }
  return a;
}

FusedActivation FusedActivationOf(const ir::Node& n) {
  auto a = kernels::ParseFusedActivation(kernels::NodeView(n));
  return a.ok() ? *a : FusedActivation();
}

bool HasNoActivation(const ir::Node& n) {
  const ir::Attribute* a = n.attr("activation");
  return !a || a->s.empty();
}

ir::Node MakeNode(const std::string& domain, const std::string& op_type, int64_t opset,
                  const ir::Node& anchor) {
  ir::Node n;
  n.name = anchor.name;
  n.index = anchor.index;
  n.domain = domain;
  n.op_type = op_type;
  n.opset = opset;
  return n;
}

ir::Node MakeOnyxNode(const std::string& op_type, const ir::Node& anchor) {
  return MakeNode(kernels::kOnyxDomain, op_type, kernels::kOnyxOpset, anchor);
}

void SetActivation(ir::Node& n, const FusedActivation& a) {
  EraseAttr(n, "activation");
  EraseAttr(n, "activation_params");
  if (a.kind == ActivationKind::kNone) return;
  SetAttr(n, StringAttr("activation", kernels::ActivationName(a.kind)));
  const std::vector<float> params = kernels::ActivationParams(a);
  if (!params.empty()) SetAttr(n, FloatsAttr("activation_params", params));
}

Tensor FloatTensor(const Shape& shape, const std::vector<float>& values) {
  Tensor t = Tensor::Allocate(DType::kFloat, shape);
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(float));
  return t;
}

Tensor Int64Tensor(const std::vector<int64_t>& values) {
  Tensor t = Tensor::Allocate(DType::kInt64, {static_cast<int64_t>(values.size())});
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

Rewrite Single(ir::Node def, std::vector<int> inputs, std::vector<int> outputs) {
  Rewrite r;
  NewNode n;
  n.def = std::move(def);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  r.nodes.push_back(std::move(n));
  return r;
}

}  // namespace onyx::planner::fusion
