// Bounds of `onyx check` (docs/check.md). A step's fast kernel and the reference kernels of the
// nodes it replaced both round; for a sum of K products each lies within gamma_K*S of the exact
// value (S = the sum of the products' magnitudes, gamma_K ~ K*u), so they differ by at most about
// 2*K*u*S whatever order they add in. Steps made of ops without such a rule (Softmax, Erf chains,
// normalisations) get a normwise bound scaled by the value's largest magnitude.
#include "engine/check/check_bounds.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

namespace onyx::check {
namespace {

// Constants in front of K*u (docs/check.md says why each is what it is).
constexpr double kDirectC = 2;    // two roundings of the same sum (fast and reference)
constexpr double kNormwiseC = 8;  // transcendental approximations and normalisations

// Ops that move, select or compare elements without arithmetic: bit-identical or wrong.
const std::set<std::string>& ExactOps() {
  static const std::set<std::string> ops = {"Identity",
                                            "Reshape",
                                            "Flatten",
                                            "Squeeze",
                                            "Unsqueeze",
                                            "Transpose",
                                            "Concat",
                                            "Split",
                                            "Slice",
                                            "Gather",
                                            "GatherND",
                                            "GatherElements",
                                            "Expand",
                                            "Tile",
                                            "Pad",
                                            "MaxPool",
                                            "GlobalMaxPool",
                                            "Relu",
                                            "Max",
                                            "Min",
                                            "Abs",
                                            "Neg",
                                            "Shape",
                                            "Size",
                                            "ReduceMax",
                                            "ReduceMin",
                                            "ArgMax",
                                            "ArgMin",
                                            "Where",
                                            "Equal",
                                            "Less",
                                            "Greater",
                                            "LessOrEqual",
                                            "GreaterOrEqual",
                                            "Not",
                                            "And",
                                            "Or",
                                            "Xor",
                                            "DepthToSpace",
                                            "SpaceToDepth",
                                            "Constant",
                                            "ConstantOfShape",
                                            "Dropout",
                                            "NonZero",
                                            "TopK",
                                            "Clip",
                                            "OneHot",
                                            "Compress",
                                            "ReverseSequence",
                                            "Trilu",
                                            "Sign",
                                            "Floor",
                                            "Ceil",
                                            "Round",
                                            "Cast",
                                            "ScatterND",
                                            "ScatterElements"};
  return ops;
}

// Ops whose magnitude is the same op on |inputs|: sums of products, averages, and the exact ops
// above that only move or pick elements.
const std::set<std::string>& SameOpOnMagnitudes() {
  static const std::set<std::string> ops = {"Conv",
                                            "ConvTranspose",
                                            "MatMul",
                                            "Gemm",
                                            "Add",
                                            "Mul",
                                            "Div",
                                            "Sum",
                                            "Mean",
                                            "AveragePool",
                                            "GlobalAveragePool",
                                            "ReduceSum",
                                            "ReduceMean",
                                            "MaxPool",
                                            "GlobalMaxPool",
                                            "Relu",
                                            "Max",
                                            "Concat",
                                            "Reshape",
                                            "Flatten",
                                            "Squeeze",
                                            "Unsqueeze",
                                            "Transpose",
                                            "Slice",
                                            "Gather",
                                            "Split",
                                            "Pad",
                                            "Expand",
                                            "Tile",
                                            "Abs",
                                            "DepthToSpace",
                                            "SpaceToDepth",
                                            "Identity",
                                            "Cast"};
  return ops;
}

// Elementwise functions whose slope is at most about 1 (Erf's is 2/sqrt(pi) = 1.13): an error in
// the input passes on at most that large, so their magnitude is the input's.
const std::set<std::string>& ContractingOps() {
  static const std::set<std::string> ops = {"Neg", "Clip",    "LeakyRelu",   "Sigmoid",  "Tanh",
                                            "Erf", "Dropout", "HardSigmoid", "Softplus", "Min"};
  return ops;
}

// Ops whose integer outputs round a real value to the quantized grid.
bool Quantizes(const ir::Node& n) {
  static const std::set<std::string> ops = {"QuantizeLinear",
                                            "DynamicQuantizeLinear",
                                            "QLinearConv",
                                            "QLinearMatMul",
                                            "QLinearAdd",
                                            "QLinearMul",
                                            "QLinearSigmoid",
                                            "QLinearLeakyRelu",
                                            "QLinearAveragePool",
                                            "QLinearGlobalAveragePool",
                                            "QLinearConcat",
                                            "QLinearSoftmax",
                                            "QGemm",
                                            "QAttention",
                                            "DynamicQuantizeMatMul"};
  return ops.count(n.op_type) > 0;
}

// Functions whose fast kernels approximate: their own error is relative to the result, which
// the magnitude of their input does not bound (Sigmoid(0) = 0.5). Each kernel within 4 ulp of
// the exact value, and 4 ulp <= 8u relative, gives kFunctionR.
constexpr double kFunctionR = 16;
const std::set<std::string>& FunctionOps() {
  static const std::set<std::string> ops = {"Sigmoid", "Tanh", "Erf", "Softplus", "HardSigmoid"};
  return ops;
}

int64_t Prod(const TypeInfo& t, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to && i < t.dims.size(); ++i)
    if (t.dims[i].value > 0) p *= t.dims[i].value;
  return p;
}

const TypeInfo* TypeOf(const std::map<std::string, TypeInfo>& types, const std::string& name) {
  auto it = types.find(name);
  return it == types.end() || !it->second.has_shape ? nullptr : &it->second;
}

int64_t AttrInt(const ir::Node& n, const std::string& name, int64_t def) {
  const ir::Attribute* a = n.attr(name);
  return a ? a->i : def;
}

int64_t SumLength(const ir::Node& n, const std::map<std::string, TypeInfo>& types);

// The roundings one pass through a subgraph may add up: its nodes' sum lengths together (types
// from its initializers and declared value infos where `types` has none).
int64_t BodyLength(const ir::Graph& g, std::map<std::string, TypeInfo> types) {
  for (const auto& [name, t] : g.initializers)
    types.emplace(name, TypeInfo::TensorWithShape(t.dtype(), t.shape()));
  for (const auto& [name, t] : g.value_info) types.emplace(name, t);
  int64_t k = 0;
  for (const auto& n : g.nodes) k += SumLength(n, types);
  return std::max<int64_t>(1, k);
}

// A control-flow node: its subgraphs' lengths (the larger If branch), times the iterations where
// the types tell them (Scan: the first scanned input's axis; Loop: its first scan output's).
int64_t ControlFlowLength(const ir::Node& n, const std::map<std::string, TypeInfo>& types) {
  int64_t body = 1;
  for (const auto& a : n.attributes) {
    if (a.g) body = std::max(body, BodyLength(*a.g, types));
    for (const auto& sg : a.graphs) body = std::max(body, BodyLength(*sg, types));
  }
  int64_t iterations = 1;
  const auto dim0 = [&](const std::string& name) -> int64_t {
    auto it = types.find(name);
    return it != types.end() && it->second.has_shape && !it->second.dims.empty()
               ? std::max<int64_t>(1, it->second.dims[0].value)
               : 1;
  };
  if (n.op_type == "Scan") {
    const int64_t scans = AttrInt(n, "num_scan_inputs", 0);
    const size_t first = n.inputs.size() - static_cast<size_t>(std::max<int64_t>(0, scans));
    if (scans > 0 && first < n.inputs.size()) iterations = dim0(n.inputs[first]);
  } else if (n.op_type == "Loop") {
    const size_t carried = n.inputs.size() >= 2 ? n.inputs.size() - 2 : 0;
    if (n.outputs.size() > carried) iterations = dim0(n.outputs[carried]);
  }
  return body * iterations;
}

// The longest sum one output element of `n` is made of.
int64_t SumLength(const ir::Node& n, const std::map<std::string, TypeInfo>& types) {
  const std::string& op = n.op_type;
  for (const auto& a : n.attributes)
    if (a.g || !a.graphs.empty()) return ControlFlowLength(n, types);
  auto in = [&](size_t i) -> const TypeInfo* {
    return i < n.inputs.size() && !n.inputs[i].empty() ? TypeOf(types, n.inputs[i]) : nullptr;
  };
  const bool bias = n.inputs.size() > 2 && !n.inputs[2].empty();
  if (op == "Conv") {
    const TypeInfo* w = in(1);
    return w ? Prod(*w, 1, w->dims.size()) + bias : 1;
  }
  if (op == "ConvTranspose") {
    const TypeInfo* w = in(1);
    if (!w || w->dims.empty()) return 1;
    const int64_t group = std::max<int64_t>(1, AttrInt(n, "group", 1));
    return std::max<int64_t>(1, Prod(*w, 0, 1) / group) * Prod(*w, 2, w->dims.size()) + bias;
  }
  if (op == "MatMul") {
    const TypeInfo* a = in(0);
    return a && !a->dims.empty() ? std::max<int64_t>(1, a->dims.back().value) : 1;
  }
  if (op == "Gemm") {
    const TypeInfo* a = in(0);
    if (!a || a->dims.size() != 2) return 1;
    return std::max<int64_t>(1, a->dims[AttrInt(n, "transA", 0) ? 0 : 1].value) + bias;
  }
  if (op == "Sum" || op == "Mean") return static_cast<int64_t>(n.inputs.size());
  if (op == "Attention" && n.domain.empty()) {
    // Q K^T sums over the head size, the Softmax and P V over the keys.
    const TypeInfo *q = in(0), *k = in(1);
    if (!q || !k || q->dims.empty() || k->dims.size() < 2) return 1;
    return std::max<int64_t>(1, q->dims.back().value) +
           std::max<int64_t>(1, k->dims[k->dims.size() - 2].value);
  }
  // (x - mean) * (scale / sqrt(var + eps)) + B: four roundings on each side, more than one node's.
  if (op == "BatchNormalization") return 4;
  const TypeInfo* x = in(0);
  if (!x) return 1;
  const size_t rank = x->dims.size();
  if (op == "GlobalAveragePool" || op == "GlobalLpPool") return Prod(*x, 2, rank);
  if (op == "AveragePool" || op == "LpPool") {
    const ir::Attribute* k = n.attr("kernel_shape");
    int64_t p = 1;
    if (k)
      for (int64_t v : k->ints) p *= v;
    return p;
  }
  if (op.rfind("Reduce", 0) == 0 && !n.outputs.empty()) {
    const TypeInfo* y = TypeOf(types, n.outputs[0]);
    if (!y) return 1;
    return std::max<int64_t>(1,
                             Prod(*x, 0, rank) / std::max<int64_t>(1, Prod(*y, 0, y->dims.size())));
  }
  if (op == "Softmax" || op == "LogSoftmax" || op == "LayerNormalization" ||
      op == "SimplifiedLayerNormalization") {
    // Softmax before opset 13 defaults to axis 1 and flattens from it.
    const bool old_softmax = (op == "Softmax" || op == "LogSoftmax") && n.opset < 13;
    int64_t axis = AttrInt(n, "axis", old_softmax ? 1 : -1);
    if (axis < 0) axis += static_cast<int64_t>(rank);
    axis = std::clamp<int64_t>(axis, 0, static_cast<int64_t>(rank));
    const bool flat = old_softmax || (op != "Softmax" && op != "LogSoftmax");
    return flat ? Prod(*x, axis, rank) : Prod(*x, axis, axis + 1);
  }
  if (op == "InstanceNormalization") return Prod(*x, 2, rank);
  if (op == "LRN") return AttrInt(n, "size", 1);
  return 1;
}

}  // namespace

const char* BoundKindName(BoundKind k) {
  switch (k) {
    case BoundKind::kExact:
      return "exact";
    case BoundKind::kMagnitude:
      return "magnitude";
    case BoundKind::kNormwise:
      return "normwise";
  }
  return "?";
}

double Bound::Element(double s, double ref, double ref_max) const {
  switch (kind) {
    case BoundKind::kExact:
      return 0;
    case BoundKind::kMagnitude:
      return (c * static_cast<double>(k) * s + r * std::fabs(ref)) * kUnitRoundoff;
    case BoundKind::kNormwise:
      return c * static_cast<double>(k) * kUnitRoundoff * ref_max;
  }
  return 0;
}

bool MagnitudeRule(const ir::Node& n, ir::Node* out, std::vector<MagnitudeInput>* inputs) {
  *out = n;
  inputs->assign(n.inputs.size(), MagnitudeInput::kAbs);
  if (!n.domain.empty()) return false;
  const std::string& op = n.op_type;
  if (SameOpOnMagnitudes().count(op)) return true;
  if (op == "Sub") {  // |a - b| <= |a| + |b|
    out->op_type = "Add";
    return true;
  }
  if (ContractingOps().count(op)) {
    out->op_type = "Identity";
    out->inputs.resize(1);
    out->outputs.resize(1);
    out->attributes.clear();
    inputs->resize(1);
    return true;
  }
  if (op == "BatchNormalization" && n.inputs.size() == 5) {
    // (|x| + |mean|) * |scale| / sqrt(var + eps) + |B| bounds every term of the fused form.
    (*inputs)[3] = MagnitudeInput::kNegAbs;
    (*inputs)[4] = MagnitudeInput::kKeep;
    out->outputs.resize(1);
    return true;
  }
  return false;
}

bool WinogradMagnitude(const ir::Node& conv, const Tensor& w, const std::string& wsum_name,
                       std::vector<ir::Node>* nodes, Tensor* wsum) {
  if (w.dtype() != DType::kFloat || w.rank() != 4 || AttrInt(conv, "group", 1) != 1) return false;
  if (const ir::Attribute* a = conv.attr("auto_pad"); a && !a->s.empty() && a->s != "NOTSET")
    return false;
  std::vector<int64_t> pads(4, 0);
  if (const ir::Attribute* a = conv.attr("pads"); a && a->ints.size() == 4) pads = a->ints;
  const int64_t m = w.dim(0), c = w.dim(1), taps = w.dim(2) * w.dim(3);
  *wsum = Tensor::Allocate(DType::kFloat, {m, c, 1, 1});
  for (int64_t i = 0; i < m * c; ++i) {
    double sum = 0;
    for (int64_t t = 0; t < taps; ++t) sum += std::fabs(w.data<float>()[i * taps + t]);
    wsum->data<float>()[i] = static_cast<float>(sum);
  }
  ir::Node pool;
  pool.name = conv.name + "|patch";
  pool.op_type = "MaxPool";
  pool.opset = conv.opset;
  pool.inputs = {conv.inputs[0]};
  pool.outputs = {conv.outputs[0] + "|patch"};
  pool.attributes = {ir::IntsAttr("kernel_shape", {w.dim(2) + 6, w.dim(3) + 6}),
                     ir::IntsAttr("pads", {pads[0] + 3, pads[1] + 3, pads[2] + 3, pads[3] + 3}),
                     ir::IntsAttr("strides", {1, 1})};
  ir::Node sum = conv;
  sum.inputs[0] = pool.outputs[0];
  sum.inputs[1] = wsum_name;
  sum.attributes = {ir::IntsAttr("kernel_shape", {1, 1})};
  *nodes = {pool, sum};
  return true;
}

Bound BoundFor(const std::vector<const ir::Node*>& nodes,
               const std::map<std::string, TypeInfo>& types, bool winograd) {
  Bound b;
  bool exact = true, magnitude = true;
  int64_t longest = 1;
  for (const ir::Node* n : nodes) {
    if (!n->domain.empty() || !ExactOps().count(n->op_type)) exact = false;
    ir::Node unused;
    std::vector<MagnitudeInput> how;
    if (!MagnitudeRule(*n, &unused, &how)) magnitude = false;
    longest = std::max(longest, SumLength(*n, types));
  }
  std::ostringstream text;
  for (const ir::Node* n : nodes)
    if (Quantizes(*n)) b.integer_tolerance = 1;
  const std::string integers = b.integer_tolerance ? "; integers |d| <= 1" : "";
  if (exact) {
    b.kind = BoundKind::kExact;
    b.text = "|d| = 0" + integers;
    return b;
  }
  b.k = longest + static_cast<int64_t>(nodes.size());
  if (magnitude) {
    b.kind = BoundKind::kMagnitude;
    b.c = kDirectC;
    for (const ir::Node* n : nodes)
      if (n->domain.empty() && FunctionOps().count(n->op_type)) b.r = kFunctionR;
    text << "|d| <= " << b.c << "*K*u*" << (winograd ? "S_patch" : "S");
    if (b.r > 0) text << " + " << b.r << "*u*|ref|";
    text << ", K=" << b.k;
  } else {
    b.kind = BoundKind::kNormwise;
    b.c = kNormwiseC;
    text << "|d| <= " << b.c << "*K*u*max|ref|, K=" << b.k;
  }
  b.text = text.str() + integers;
  return b;
}

}  // namespace onyx::check
