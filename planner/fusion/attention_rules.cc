// Scaled dot-product attention as exporters write it (optimization level all):
//
//   q, k, v [B, S, H*D] ─Reshape [B, S, H, D]─Transpose─► Q [B, H, S, D], K^T [B, H, D, S], V
//   softmax(Q x K^T * scale (+ mask)) x V [B, H, S, Dv] ─Transpose─Reshape─► [B, S, H*Dv]
//
// becomes one ai.onnx Attention (opset 23) on the 3-D q, k, v with q_num_heads = kv_num_heads =
// H and the scale made explicit. The scale may be a Div or Mul by a constant scalar after the
// first MatMul, or already folded into a FusedMatMul's alpha; K may arrive transposed by its
// Transpose (perm 0,2,3,1) or through FusedMatMul's transB (perm 0,2,1,3); the additive mask
// must have the scores' last dim and broadcast over the others.
#include <cmath>

#include "kernels/node_view.h"
#include "planner/fusion/rule_helpers.h"
#include "planner/fusion/rules.h"

namespace onyx::planner::fusion {
namespace {

using P = Pattern;

constexpr const char* kProduct = "MatMul|com.onyx:FusedMatMul";
const std::vector<int64_t> kToHeads = {0, 2, 1, 3};   // [B, S, H, D] ↔ [B, H, S, D]
const std::vector<int64_t> kToHeadsT = {0, 2, 3, 1};  // [B, S, H, D] → [B, H, D, S]

// Reshape(t, ...) then Transpose: the head split of a 3-D projection `name`.
P Heads(const std::string& name) {
  return P::Op("Transpose", {P::Op("Reshape", {P::Any(name), P::Any()}).As("reshape_" + name)})
      .As("transpose_" + name);
}

struct HeadSplit {
  int64_t batch = 0, seq = 0, heads = 0, size = 0;
};

// The projection `name` is float [B, S, H*D], reshaped to [B, S, H, D] and transposed by `perm`.
std::optional<HeadSplit> ReadHeads(const Match& m, const FusionGraph& g, const std::string& name,
                                   const std::vector<int64_t>& perm) {
  const int x = m.value(name);
  auto in = StaticShape(g, x);
  auto split = StaticShape(g, Captured(g, m, "reshape_" + name).outputs[0]);
  auto p = TransposePerm(g, Captured(g, m, "transpose_" + name));
  if (!IsFloat32(g, x) || !in || !split || !p || *p != perm || in->size() != 3 ||
      split->size() != 4)
    return std::nullopt;
  const Shape& s = *split;
  if (s[0] != (*in)[0] || s[1] != (*in)[1] || s[2] * s[3] != (*in)[2]) return std::nullopt;
  return HeadSplit{s[0], s[1], s[2], s[3]};
}

// FusedMatMul with nothing but (optionally) alpha, transB and Z; plain MatMul.
struct ProductForm {
  bool ok = false;
  bool trans_b = false;
  float alpha = 1;
  int z = -1;
};

ProductForm ReadProductForm(const FusionNode& n) {
  ProductForm f;
  const ir::Node& node = *n.node;
  if (node.domain.empty()) {
    f.ok = node.op_type == "MatMul";
    return f;
  }
  const kernels::NodeView v(node);
  if (v.attr_int("transA", 0) != 0 || !HasNoActivation(node)) return f;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) return f;  // a bias
  f.trans_b = v.attr_int("transB", 0) != 0;
  f.alpha = v.attr_float("alpha", 1.0f);
  f.z = n.inputs.size() > 3 ? n.inputs[3] : -1;
  f.ok = true;
  return f;
}

struct AttentionShape {
  int64_t heads = 0;
  float scale = 1;
  int mask = -1;
};

std::optional<AttentionShape> ReadAttention(const Match& m, const FusionGraph& g) {
  const ProductForm qk = ReadProductForm(Captured(g, m, "qk"));
  const ProductForm pv = ReadProductForm(Captured(g, m, "pv"));
  if (!qk.ok || !pv.ok || pv.trans_b || pv.alpha != 1 || pv.z >= 0) return std::nullopt;
  auto q = ReadHeads(m, g, "q", kToHeads);
  auto k = ReadHeads(m, g, "k", qk.trans_b ? kToHeads : kToHeadsT);
  auto v = ReadHeads(m, g, "v", kToHeads);
  if (!q || !k || !v || k->batch != q->batch || v->batch != q->batch || k->heads != q->heads ||
      v->heads != q->heads || k->size != q->size || v->seq != k->seq)
    return std::nullopt;
  AttentionShape a;
  a.heads = q->heads;
  // The scale: FusedMatMul's alpha times a Div / Mul by a scalar after the product.
  double scale = qk.alpha;
  if (m.node("scale") >= 0) {
    auto s = ScalarConstant(g, m.value("scale"));
    if (!s || *s == 0 || g.Constant(m.value("scale"))->rank() > 4) return std::nullopt;
    scale = g.node(m.node("scale")).node->op_type == "Div" ? scale / *s : scale * *s;
  }
  if (!std::isfinite(scale) || scale == 0) return std::nullopt;
  a.scale = static_cast<float>(scale);
  // The mask: an Add after the scale, or the FusedMatMul's Z (added after its alpha); a Z
  // followed by a separate scale would scale the mask too.
  a.mask = m.value("mask");
  if (qk.z >= 0) {
    if (a.mask >= 0 || m.node("scale") >= 0) return std::nullopt;
    a.mask = qk.z;
  }
  if (a.mask >= 0) {
    auto ms = StaticShape(g, a.mask);
    const Shape scores = {q->batch, q->heads, q->seq, k->seq};
    if (!IsFloat32(g, a.mask) || !ms || ms->empty() || ms->size() > 4 || ms->back() != k->seq)
      return std::nullopt;
    for (size_t r = 0; r < ms->size(); ++r) {
      const int64_t d = (*ms)[r];
      if (d != 1 && d != scores[4 - ms->size() + r]) return std::nullopt;
    }
  }
  // Softmax over the last axis (before opset 13 it flattens at `axis`, which is the same).
  const FusionNode& sm = Captured(g, m, "softmax");
  const int64_t axis = kernels::NodeView(*sm.node).attr_int("axis", sm.node->opset < 13 ? 1 : -1);
  if (axis != 3 && axis != -1) return std::nullopt;
  // Back to [B, S, H*Dv].
  auto back = TransposePerm(g, Captured(g, m, "transpose_out"));
  auto out = StaticShape(g, m.root_value);
  if (!back || *back != kToHeads || !out || *out != Shape{q->batch, q->seq, q->heads * v->size} ||
      !IsFloat32(g, m.root_value))
    return std::nullopt;
  return a;
}

}  // namespace

void AddAttentionRules(std::vector<Rule>& rules) {
  const P scores = P::Op(kProduct, {Heads("q"), Heads("k")}).As("qk");
  const P scaled =
      P::Alt({P::Op("Div", {scores, P::Const("scale")}).As("scale"),
              P::Op("Mul", {scores, P::Const("scale")}).Commutative().As("scale"), scores});
  const P masked =
      P::Alt({P::Op("Add", {scaled, P::Any("mask")}).Commutative().As("mask_add"), scaled});
  const P context =
      P::Op(kProduct, {P::Op("Softmax", {masked}).As("softmax"), Heads("v")}).As("pv");
  Rule r;
  r.name = "Attention";
  r.kind = "Attention";
  r.pattern =
      P::Op("Reshape", {P::Op("Transpose", {context}).As("transpose_out"), P::Any()}).As("out");
  r.valid = [](const Match& m, const FusionGraph& g) { return ReadAttention(m, g).has_value(); };
  r.rewrite = [](const Match& m, FusionGraph& g) {
    const AttentionShape a = *ReadAttention(m, g);
    ir::Node def = MakeNode("", "Attention", 23, *Captured(g, m, "qk").node);
    def.attributes.push_back(IntAttr("q_num_heads", a.heads));
    def.attributes.push_back(IntAttr("kv_num_heads", a.heads));
    def.attributes.push_back(FloatAttr("scale", a.scale));
    std::vector<int> inputs = {m.value("q"), m.value("k"), m.value("v")};
    if (a.mask >= 0) inputs.push_back(a.mask);
    return Single(std::move(def), inputs, {m.root_value});
  };
  rules.push_back(std::move(r));
}

}  // namespace onyx::planner::fusion
