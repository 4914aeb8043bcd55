// MatMul / Gemm rules (optimization level all). Everything ends in com.onyx FusedMatMul:
//   Y = act(alpha * A' x B' + Bias + Z)
// - an activation after MatMul / Gemm / FusedMatMul is its post-op;
// - an Add of a constant varying only along the last axis is its Bias;
// - an Add (or two-input Sum) of a same-shaped value is its residual Z;
// - a Mul / Div by a constant scalar scales alpha (and the bias);
// - a Transpose swapping the last two axes of A or B becomes transA / transB (Gemm keeps Gemm);
// - a BatchNormalization of a 2-D product folds into B's columns and the bias.
// Gemm converts when its C is absent, a constant row vector (beta folded in), or has Y's shape.
#include <cmath>
#include <optional>

#include "kernels/activation_rules.h"
#include "kernels/node_view.h"
#include "planner/fusion/rule_helpers.h"
#include "planner/fusion/rules.h"

namespace onyx::planner::fusion {
namespace {

using P = Pattern;
using kernels::ActivationKind;
using kernels::FusedActivation;

constexpr const char* kMatMul = "MatMul|Gemm|com.onyx:FusedMatMul";

// A matrix product read as FusedMatMul's operands and attributes.
struct Product {
  const FusionNode* node = nullptr;
  int a = -1, b = -1;
  int bias = -1;                   // constant [N] slot, or -1
  std::vector<float> bias_values;  // bias still to be materialised (Gemm's beta * C)
  int z = -1;                      // residual slot, or -1
  bool trans_a = false, trans_b = false;
  float alpha = 1;
  FusedActivation act;

  bool has_bias() const { return bias >= 0 || !bias_values.empty(); }
  // The bias as values (empty when absent).
  std::vector<float> Bias(const FusionGraph& g) const {
    if (!bias_values.empty()) return bias_values;
    if (bias < 0) return {};
    const Tensor* t = g.Constant(bias);
    return std::vector<float>(t->data<float>(), t->data<float>() + t->numel());
  }
};

// Reads MatMul, Gemm and FusedMatMul nodes with float32 operands; nullopt for anything else
// (a Gemm whose C is neither absent, a constant row vector nor Y-shaped; a non-constant bias).
std::optional<Product> ReadProduct(const FusionGraph& g, const FusionNode& n) {
  const ir::Node& node = *n.node;
  if (n.inputs.size() < 2 || n.outputs.size() != 1 || !IsFloat32(g, n.inputs[0]) ||
      !IsFloat32(g, n.inputs[1]) || !IsFloat32(g, n.outputs[0]))
    return std::nullopt;
  Product p;
  p.node = &n;
  p.a = n.inputs[0];
  p.b = n.inputs[1];
  const kernels::NodeView v(node);
  if (node.domain.empty() && node.op_type == "MatMul") return p;
  p.trans_a = v.attr_int("transA", 0) != 0;
  p.trans_b = v.attr_int("transB", 0) != 0;
  p.alpha = v.attr_float("alpha", 1.0f);
  if (node.domain == kernels::kOnyxDomain && node.op_type == "FusedMatMul") {
    p.act = FusedActivationOf(node);
    if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
      const Tensor* t = g.Constant(n.inputs[2]);
      if (!t || t->dtype() != DType::kFloat) return std::nullopt;
      p.bias = n.inputs[2];
    }
    if (n.inputs.size() > 3) p.z = n.inputs[3];
    return p;
  }
  if (!node.domain.empty() || node.op_type != "Gemm") return std::nullopt;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    const int c = n.inputs[2];
    const float beta = v.attr_float("beta", 1.0f);
    auto row = AxisValues(g, c, g.Type(n.outputs[0]), 1);
    auto cs = StaticShape(g, c);
    auto ys = StaticShape(g, n.outputs[0]);
    if (row) {
      if (beta != 0)
        for (float x : *row) p.bias_values.push_back(beta * x);
    } else if (beta == 1 && cs && ys && *cs == *ys && IsFloat32(g, c)) {
      p.z = c;
    } else {
      return std::nullopt;
    }
  }
  return p;
}

// The FusedMatMul node computing `p` into `output`, named after the product's node.
Rewrite BuildFusedMatMul(FusionGraph& g, const Product& p, int output) {
  ir::Node def = MakeOnyxNode("FusedMatMul", *p.node->node);
  if (p.trans_a) def.attributes.push_back(IntAttr("transA", 1));
  if (p.trans_b) def.attributes.push_back(IntAttr("transB", 1));
  if (p.alpha != 1) def.attributes.push_back(FloatAttr("alpha", p.alpha));
  SetActivation(def, p.act);
  int bias = p.bias;
  if (!p.bias_values.empty()) {
    bias = g.AddConstant(g.Name(output) + "/bias",
                         FloatTensor({static_cast<int64_t>(p.bias_values.size())}, p.bias_values));
  }
  std::vector<int> inputs = {p.a, p.b, bias, p.z};
  while (inputs.size() > 2 && inputs.back() < 0) inputs.pop_back();
  return Single(std::move(def), inputs, {output});
}

bool NoPostOps(const Product& p) {
  return p.act.kind == ActivationKind::kNone && p.z < 0;
}

// The last-axis size N of the product's output, or -1 when unknown.
int64_t Columns(const FusionGraph& g, const Product& p) {
  const TypeInfo& t = g.Type(p.node->outputs[0]);
  if (!t.has_shape || t.dims.empty() || !t.dims.back().known()) return -1;
  return t.dims.back().value;
}

// A Transpose that swaps the last two axes and keeps the others.
bool SwapsLastTwo(const FusionGraph& g, const FusionNode& t) {
  auto perm = TransposePerm(g, t);
  if (!perm || perm->size() < 2) return false;
  const size_t r = perm->size();
  for (size_t i = 0; i + 2 < r; ++i)
    if ((*perm)[i] != static_cast<int64_t>(i)) return false;
  return (*perm)[r - 2] == static_cast<int64_t>(r - 1) &&
         (*perm)[r - 1] == static_cast<int64_t>(r - 2);
}

Rule ActivationRule() {
  Rule r;
  r.name = "MatMulActivation";
  r.kind = "MatMulActivation";
  r.pattern = P::Op(kernels::FusableActivationOps(), {P::Op(kMatMul).As("mm")}).As("act");
  r.valid = [](const Match& m, const FusionGraph& g) {
    auto p = ReadProduct(g, Captured(g, m, "mm"));
    return p && p->act.kind == ActivationKind::kNone &&
           ActivationOf(g, Captured(g, m, "act")).has_value();
  };
  r.rewrite = [](const Match& m, FusionGraph& g) {
    Product p = *ReadProduct(g, Captured(g, m, "mm"));
    p.act = *ActivationOf(g, Captured(g, m, "act"));
    return BuildFusedMatMul(g, p, m.root_value);
  };
  return r;
}

Rule BiasRule() {
  Rule r;
  r.name = "MatMulBias";
  r.kind = "MatMulBias";
  r.pattern = P::Op("Add", {P::Op(kMatMul).As("mm"), P::Const("c")}).Commutative().As("add");
  r.valid = [](const Match& m, const FusionGraph& g) {
    auto p = ReadProduct(g, Captured(g, m, "mm"));
    if (!p || !NoPostOps(*p) || p->has_bias() || !IsFloat32(g, m.root_value)) return false;
    const TypeInfo& y = g.Type(p->node->outputs[0]);
    return y.has_shape && !y.dims.empty() && AxisValues(g, m.value("c"), y, y.rank() - 1);
  };
  r.rewrite = [](const Match& m, FusionGraph& g) {
    Product p = *ReadProduct(g, Captured(g, m, "mm"));
    const TypeInfo& y = g.Type(p.node->outputs[0]);
    p.bias_values = *AxisValues(g, m.value("c"), y, y.rank() - 1);
    return BuildFusedMatMul(g, p, m.root_value);
  };
  return r;
}

Rule ResidualRule() {
  Rule r;
  r.name = "MatMulResidual";
  r.kind = "MatMulResidual";
  r.pattern = P::Op("Add|Sum", {P::Op(kMatMul).As("mm"), P::Any("z")}).Commutative().As("add");
  r.valid = [](const Match& m, const FusionGraph& g) {
    auto p = ReadProduct(g, Captured(g, m, "mm"));
    if (!p || !NoPostOps(*p) || Captured(g, m, "add").inputs.size() != 2) return false;
    const int z = m.value("z");
    auto y = StaticShape(g, p->node->outputs[0]);
    auto zs = StaticShape(g, z);
    auto out = StaticShape(g, m.root_value);
    return IsFloat32(g, z) && y && zs && out && *y == *zs && *y == *out;
  };
  r.rewrite = [](const Match& m, FusionGraph& g) {
    Product p = *ReadProduct(g, Captured(g, m, "mm"));
    p.z = m.value("z");
    return BuildFusedMatMul(g, p, m.root_value);
  };
  return r;
}

Rule ScaleRule(const char* op) {
  const bool div = std::string(op) == "Div";
  Rule r;
  r.name = std::string("MatMulScale/") + op;
  r.kind = "MatMulScale";
  P pattern = P::Op(op, {P::Op(kMatMul).As("mm"), P::Const("s")}).As("scale");
  r.pattern = div ? pattern : pattern.Commutative();
  r.valid = [](const Match& m, const FusionGraph& g) {
    auto p = ReadProduct(g, Captured(g, m, "mm"));
    auto s = ScalarConstant(g, m.value("s"));
    const TypeInfo& y = g.Type(Captured(g, m, "mm").outputs[0]);
    // The scalar must not grow Y's rank; an infinite or zero scale is left alone.
    return p && NoPostOps(*p) && s && std::isfinite(*s) && *s != 0 && y.has_shape &&
           g.Constant(m.value("s"))->rank() <= y.rank() && IsFloat32(g, m.root_value);
  };
  r.rewrite = [div](const Match& m, FusionGraph& g) {
    Product p = *ReadProduct(g, Captured(g, m, "mm"));
    const float s = *ScalarConstant(g, m.value("s"));
    p.alpha = div ? p.alpha / s : p.alpha * s;
    if (p.has_bias()) {
      p.bias_values = p.Bias(g);
      for (float& b : p.bias_values) b = div ? b / s : b * s;
      p.bias = -1;
    }
    return BuildFusedMatMul(g, p, m.root_value);
  };
  return r;
}

Rule BatchNormRule() {
  Rule r;
  r.name = "MatMulBatchNorm";
  r.kind = "MatMulBatchNorm";
  r.pattern = P::Op("BatchNormalization", {P::Op(kMatMul).As("mm")}).As("bn");
  r.valid = [](const Match& m, const FusionGraph& g) {
    auto p = ReadProduct(g, Captured(g, m, "mm"));
    if (!p || !NoPostOps(*p)) return false;
    // BatchNormalization's channel axis is 1: the columns of a 2-D product only.
    const TypeInfo& y = g.Type(p->node->outputs[0]);
    const Tensor* b = g.Constant(p->b);
    const int64_t n = Columns(g, *p);
    std::vector<double> s, t;
    return y.rank() == 2 && b && b->rank() == 2 && n > 0 &&
           BatchNormAffine(g, Captured(g, m, "bn"), n, &s, &t);
  };
  r.rewrite = [](const Match& m, FusionGraph& g) {
    Product p = *ReadProduct(g, Captured(g, m, "mm"));
    const int64_t n = Columns(g, p);
    std::vector<double> s, t;
    BatchNormAffine(g, Captured(g, m, "bn"), n, &s, &t);
    // alpha * A x (B * s) + bias * s + t: scale B's column j (row j when transposed).
    Tensor nb = g.Constant(p.b)->Clone();
    const int64_t rows = nb.dim(0), cols = nb.dim(1);
    float* w = nb.data<float>();
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        w[i * cols + j] = static_cast<float>(w[i * cols + j] * s[p.trans_b ? i : j]);
    std::vector<float> bias = p.Bias(g);
    bias.resize(static_cast<size_t>(n), 0.0f);
    for (int64_t j = 0; j < n; ++j) bias[j] = static_cast<float>(bias[j] * s[j] + t[j]);
    p.b = g.AddConstant(g.Name(m.root_value) + "/folded_B", std::move(nb));
    p.bias = -1;
    p.bias_values = bias;
    return BuildFusedMatMul(g, p, m.root_value);
  };
  return r;
}

// A Transpose of the last two axes feeding operand `which` (0 = A, 1 = B).
Rule TransposeRule(int which) {
  Rule r;
  r.name = which == 0 ? "TransposeMatMul/A" : "TransposeMatMul/B";
  r.kind = "TransposeMatMul";
  const P t = P::Op("Transpose", {P::Any("x")}).As("t");
  r.pattern = P::Op("MatMul|com.onyx:FusedMatMul",
                    which == 0 ? std::vector<P>{t, P::Any()} : std::vector<P>{P::Any(), t})
                  .As("mm");
  r.valid = [](const Match& m, const FusionGraph& g) {
    return ReadProduct(g, Captured(g, m, "mm")) && SwapsLastTwo(g, Captured(g, m, "t"));
  };
  r.rewrite = [which](const Match& m, FusionGraph& g) {
    Product p = *ReadProduct(g, Captured(g, m, "mm"));
    if (which == 0) {
      p.a = m.value("x");
      p.trans_a = !p.trans_a;
    } else {
      p.b = m.value("x");
      p.trans_b = !p.trans_b;
    }
    return BuildFusedMatMul(g, p, m.root_value);
  };
  return r;
}

// Gemm keeps its own op: the Transpose of a 2-D operand toggles transA / transB.
Rule GemmTransposeRule(int which) {
  Rule r;
  r.name = which == 0 ? "TransposeGemm/A" : "TransposeGemm/B";
  r.kind = "TransposeMatMul";
  const P t = P::Op("Transpose", {P::Any("x")}).As("t");
  r.pattern = P::Op("Gemm", which == 0 ? std::vector<P>{t, P::Any()} : std::vector<P>{P::Any(), t})
                  .As("gemm");
  r.valid = [](const Match& m, const FusionGraph& g) {
    auto perm = TransposePerm(g, Captured(g, m, "t"));
    return perm && *perm == std::vector<int64_t>{1, 0};
  };
  r.rewrite = [which](const Match& m, FusionGraph& g) {
    const FusionNode& gemm = Captured(g, m, "gemm");
    ir::Node def = *gemm.node;
    const char* attr = which == 0 ? "transA" : "transB";
    SetAttr(def, IntAttr(attr, kernels::NodeView(*gemm.node).attr_int(attr, 0) != 0 ? 0 : 1));
    std::vector<int> inputs = gemm.inputs;
    inputs[which] = m.value("x");
    return Single(std::move(def), inputs, {m.root_value});
  };
  return r;
}

}  // namespace

void AddMatMulRules(std::vector<Rule>& rules) {
  rules.push_back(ActivationRule());
  rules.push_back(BiasRule());
  rules.push_back(ResidualRule());
  rules.push_back(ScaleRule("Mul"));
  rules.push_back(ScaleRule("Div"));
  rules.push_back(BatchNormRule());
  for (int which : {0, 1}) {
    rules.push_back(TransposeRule(which));
    rules.push_back(GemmTransposeRule(which));
  }
}

}  // namespace onyx::planner::fusion
