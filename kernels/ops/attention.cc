// Attention (opsets 23, 24, 25) and FlexAttention (ai.onnx.preview): scaled dot-product
// attention over Q, K, V with masks, KV caches and (Flex) score / probability modifier graphs.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/op_registry.h"
#include "kernels/ops/attention_helpers.h"

namespace onyx::kernels {
namespace {

using namespace attention_ops;
using reference::AttentionParams;

// ---- Attention (opsets 23, 24, 25) ----

// Inputs: Q, K, V, attn_mask, past_key, past_value, nonpad_kv_seqlen (24+).
// Outputs: Y, present_key, present_value, qk_matmul_output.
struct AttentionPlan {
  AttentionParams p;
  Shape y, present_key, present_value, qk;
};

StatusOr<AttentionPlan> PlanAttention(const NodeView& node, const std::vector<const Shape*>& in) {
  const auto input = [&](int i) { return i < static_cast<int>(in.size()) ? in[i] : nullptr; };
  const Shape* q = input(0);
  const Shape* k = input(1);
  const Shape* v = input(2);
  if (!q || !k || !v) return node.Invalid("inputs Q, K and V are required");
  const size_t rank = q->size();
  if ((rank != 3 && rank != 4) || k->size() != rank || v->size() != rank) {
    return node.Invalid("inputs Q ", ShapeToString(*q), ", K ", ShapeToString(*k), " and V ",
                        ShapeToString(*v), " must all be 3-D or all be 4-D");
  }
  AttentionPlan plan;
  AttentionParams& p = plan.p;
  p.packed_heads = rank == 3;
  p.batch = (*q)[0];
  const int64_t attr_q_heads = node.attr_int("q_num_heads", 0);
  const int64_t attr_kv_heads = node.attr_int("kv_num_heads", 0);
  if (p.packed_heads) {
    if (attr_q_heads <= 0 || attr_kv_heads <= 0) {
      return node.Invalid(
          "attributes 'q_num_heads' and 'kv_num_heads' must be positive for 3-D "
          "inputs, got ",
          attr_q_heads, " and ", attr_kv_heads);
    }
    p.q_heads = attr_q_heads;
    p.kv_heads = attr_kv_heads;
    if ((*q)[2] % p.q_heads != 0 || (*k)[2] % p.kv_heads != 0 || (*v)[2] % p.kv_heads != 0) {
      return node.Invalid("hidden sizes Q ", ShapeToString(*q), ", K ", ShapeToString(*k), ", V ",
                          ShapeToString(*v), " are not divisible by q_num_heads ", p.q_heads,
                          " / kv_num_heads ", p.kv_heads);
    }
    p.q_len = (*q)[1];
    p.kv_len = (*k)[1];
    p.head_size = (*q)[2] / p.q_heads;
    p.v_head_size = (*v)[2] / p.kv_heads;
    if ((*k)[2] / p.kv_heads != p.head_size) {
      return node.Invalid("input K ", ShapeToString(*k), " has head size ", (*k)[2] / p.kv_heads,
                          "; expected Q's head size ", p.head_size);
    }
    if ((*v)[1] != p.kv_len) {
      return node.Invalid("inputs K ", ShapeToString(*k), " and V ", ShapeToString(*v),
                          " have different sequence lengths");
    }
  } else {
    p.q_heads = (*q)[1];
    p.kv_heads = (*k)[1];
    p.q_len = (*q)[2];
    p.kv_len = (*k)[2];
    p.head_size = (*q)[3];
    p.v_head_size = (*v)[3];
    if ((attr_q_heads > 0 && attr_q_heads != p.q_heads) ||
        (attr_kv_heads > 0 && attr_kv_heads != p.kv_heads)) {
      return node.Invalid("attributes 'q_num_heads' ", attr_q_heads, " / 'kv_num_heads' ",
                          attr_kv_heads, " disagree with Q ", ShapeToString(*q), " and K ",
                          ShapeToString(*k));
    }
    if ((*v)[1] != p.kv_heads || (*v)[2] != p.kv_len || (*k)[3] != p.head_size) {
      return node.Invalid("inputs Q ", ShapeToString(*q), ", K ", ShapeToString(*k), " and V ",
                          ShapeToString(*v), " disagree: expected K [B, kv_heads, S, ", p.head_size,
                          "] and V [B, kv_heads, S, Dv]");
    }
  }
  if ((*k)[0] != p.batch || (*v)[0] != p.batch) {
    return node.Invalid("inputs Q ", ShapeToString(*q), ", K ", ShapeToString(*k), " and V ",
                        ShapeToString(*v), " have different batch sizes");
  }
  if (p.kv_heads <= 0 || p.q_heads % p.kv_heads != 0) {
    return node.Invalid("the number of query heads (", p.q_heads,
                        ") must be a multiple of the number of key/value heads (", p.kv_heads, ")");
  }
  // KV cache concatenated in front of K and V.
  const Shape* past_key = input(4);
  const Shape* past_value = input(5);
  if ((past_key == nullptr) != (past_value == nullptr))
    return node.Invalid("inputs past_key and past_value must be given together");
  if (past_key) {
    p.past_len = past_key->size() == 4 ? (*past_key)[2] : -1;
    const Shape want_k = {p.batch, p.kv_heads, p.past_len, p.head_size};
    const Shape want_v = {p.batch, p.kv_heads, p.past_len, p.v_head_size};
    if (*past_key != want_k || *past_value != want_v) {
      return node.Invalid("inputs past_key ", ShapeToString(*past_key), " and past_value ",
                          ShapeToString(*past_value), " must be [B, kv_heads, P, head_size] ",
                          "and [B, kv_heads, P, v_head_size] = ", ShapeToString(want_k), " and ",
                          ShapeToString(want_v));
    }
  }
  int64_t total = 0;
  if (!CheckedAdd(p.past_len, p.kv_len, &total)) {
    return node.Invalid("past_key ", ShapeToString(*past_key), " and K ", ShapeToString(*k),
                        " together have more rows than int64 can count");
  }
  if (const Shape* mask = input(3)) {
    const Shape target = {p.batch, p.q_heads, p.q_len, total};
    bool ok = !mask->empty() && mask->size() <= 4 && mask->back() <= total;
    for (size_t r = 0; ok && r + 1 < mask->size(); ++r) {
      const int64_t d = (*mask)[r];
      const int64_t want = target[4 - mask->size() + r];
      ok = d == 1 || d == want;
    }
    if (!ok) {
      return node.Invalid(Describe(node, 3), " has shape ", ShapeToString(*mask),
                          "; expected a shape broadcastable to ", ShapeToString(target),
                          " whose last dim is at most ", total);
    }
  }
  if (const Shape* nonpad = input(6)) {
    if (past_key)
      return node.Invalid(Describe(node, 6), " cannot be combined with past_key/past_value");
    if (*nonpad != Shape{p.batch})
      return node.Invalid(Describe(node, 6), " has shape ", ShapeToString(*nonpad), "; expected [",
                          p.batch, "]");
  }
  // Attributes.
  const ir::Attribute* scale = node.node().attr("scale");
  p.scale = scale ? static_cast<double>(node.attr_float("scale", 1.0f))
                  : 1.0 / std::sqrt(static_cast<double>(p.head_size));
  p.softcap = node.attr_float("softcap", 0.0f);
  p.causal = node.attr_int("is_causal", 0) != 0;
  // Opset 25's sliding window; -1 leaves a side unbounded.
  p.left_window = node.attr_int("left_window_size", -1);
  p.right_window = node.attr_int("right_window_size", -1);
  for (const auto& [name, value] :
       {std::pair{"left_window_size", p.left_window}, {"right_window_size", p.right_window}}) {
    if (value < -1) return node.Invalid("attribute '", name, "' must be -1 or >= 0, got ", value);
  }
  p.qk_output_mode = static_cast<int>(node.attr_int("qk_matmul_output_mode", 0));
  if (p.qk_output_mode < 0 || p.qk_output_mode > 3) {
    return node.Invalid("attribute 'qk_matmul_output_mode' must be in [0, 3], got ",
                        p.qk_output_mode);
  }
  if (node.has_attr("softmax_precision")) {
    const DType t = static_cast<DType>(node.attr_int("softmax_precision", 0));
    if (!Contains(kFloatTypes, t)) {
      return node.Invalid(
          "attribute 'softmax_precision' must be float, float16, bfloat16 or "
          "double, got ",
          node.attr_int("softmax_precision", 0));
    }
    p.softmax_type = t;
  }
  int64_t y_hidden = 0;  // an empty Q lets q_num_heads be huge: [1, 1, 0] with 2^62 heads
  if (!CheckedMul(p.q_heads, p.v_head_size, &y_hidden)) {
    return node.Invalid("q_num_heads ", p.q_heads, " times V's head size ", p.v_head_size,
                        " overflows int64");
  }
  plan.y = p.packed_heads ? Shape{p.batch, p.q_len, y_hidden}
                          : Shape{p.batch, p.q_heads, p.q_len, p.v_head_size};
  plan.present_key = {p.batch, p.kv_heads, total, p.head_size};
  plan.present_value = {p.batch, p.kv_heads, total, p.v_head_size};
  plan.qk = {p.batch, p.q_heads, p.q_len, total};
  return plan;
}

const std::vector<DType> kMaskTypes = {
    DType::kBool,  DType::kFloat,  DType::kFloat16, DType::kBFloat16, DType::kDouble,
    DType::kUInt8, DType::kUInt16, DType::kUInt32,  DType::kUInt64,   DType::kInt8,
    DType::kInt16, DType::kInt32,  DType::kInt64};

Status InferAttention(InferContext& ctx) {
  const NodeView& node = ctx.node();
  for (int i : {0, 1, 2, 4, 5}) ONYX_RETURN_IF_ERROR(CheckInputType(ctx, i, kFloatTypes));
  ONYX_RETURN_IF_ERROR(CheckSameType(ctx, 0, 1));
  ONYX_RETURN_IF_ERROR(CheckSameType(ctx, 1, 4));
  ONYX_RETURN_IF_ERROR(CheckSameType(ctx, 2, 5));
  ONYX_RETURN_IF_ERROR(CheckInputType(ctx, 3, kMaskTypes));
  if (ctx.num_inputs() > 6) {
    if (node.opset() < 24 && ctx.has_input(6))
      return node.Invalid("input 6 (nonpad_kv_seqlen) needs opset 24, the model uses ",
                          node.opset());
    ONYX_RETURN_IF_ERROR(CheckInputType(ctx, 6, {DType::kInt64}));
  }
  const DType t1 = InputElem(ctx, 0);
  const DType t2 = InputElem(ctx, 2);
  std::vector<Shape> shapes;
  std::vector<const Shape*> ptrs;
  if (StaticShapes(ctx, &shapes, &ptrs)) {
    ONYX_ASSIGN_OR_RETURN(const AttentionPlan plan, PlanAttention(node, ptrs));
    ctx.SetOutputType(0, TensorType(t1, plan.y));
    if (ctx.has_output(1)) ctx.SetOutputType(1, TensorType(t1, plan.present_key));
    if (ctx.has_output(2)) ctx.SetOutputType(2, TensorType(t2, plan.present_value));
    if (ctx.has_output(3)) ctx.SetOutputType(3, TensorType(t1, plan.qk));
    return Status::Ok();
  }
  // Symbolic shapes: the rank is known, the sizes are checked at run time.
  const TypeInfo& q = ctx.input_type(0);
  const int64_t rank = q.rank();
  if (rank >= 0 && rank != 3 && rank != 4)
    return node.Invalid("input 0 (Q) has rank ", rank, "; expected 3 or 4");
  const auto ranked = [](DType t, int64_t r, const std::vector<Dim>& known) {
    TypeInfo ti = TypeInfo::Tensor(t);
    if (r < 0) return ti;
    ti.has_shape = true;
    ti.dims.assign(static_cast<size_t>(r), Dim());
    for (size_t i = 0; i < known.size() && i < ti.dims.size(); ++i) ti.dims[i] = known[i];
    return ti;
  };
  std::vector<Dim> y_dims;
  if (q.has_shape)
    y_dims = rank == 4 ? std::vector<Dim>{q.dims[0], q.dims[1], q.dims[2]}
                       : std::vector<Dim>{q.dims[0], q.dims[1]};
  ctx.SetOutputType(0, ranked(t1, rank, y_dims));
  const std::vector<Dim> batch = q.has_shape ? std::vector<Dim>{q.dims[0]} : std::vector<Dim>{};
  if (ctx.has_output(1)) ctx.SetOutputType(1, ranked(t1, 4, batch));
  if (ctx.has_output(2)) ctx.SetOutputType(2, ranked(t2, 4, batch));
  if (ctx.has_output(3)) ctx.SetOutputType(3, ranked(t1, 4, batch));
  return Status::Ok();
}

Status AttentionKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& q = ctx.input(0);
  const Tensor& k = ctx.input(1);
  const Tensor& v = ctx.input(2);
  ONYX_RETURN_IF_ERROR(CheckDType(node, 0, q.dtype(), kFloatTypes));
  ONYX_RETURN_IF_ERROR(CheckDType(node, 2, v.dtype(), kFloatTypes));
  if (k.dtype() != q.dtype()) return node.Fail(Describe(node, 1), " must have Q's type");
  const Tensor* mask = OptionalInput(ctx, 3);
  const Tensor* past_key = OptionalInput(ctx, 4);
  const Tensor* past_value = OptionalInput(ctx, 5);
  const Tensor* nonpad = node.opset() >= 24 ? OptionalInput(ctx, 6) : nullptr;
  if (mask) ONYX_RETURN_IF_ERROR(CheckDType(node, 3, mask->dtype(), kMaskTypes));
  if (past_key && past_key->dtype() != q.dtype())
    return node.Fail(Describe(node, 4), " must have Q's type");
  if (past_value && past_value->dtype() != v.dtype())
    return node.Fail(Describe(node, 5), " must have V's type");
  std::vector<const Shape*> shapes = RuntimeShapes(ctx);
  if (!nonpad && shapes.size() > 6) shapes[6] = nullptr;
  ONYX_ASSIGN_OR_RETURN(const AttentionPlan plan, PlanAttention(node, shapes));
  const int64_t* nonpad_data = nullptr;
  if (nonpad) {
    if (nonpad->dtype() != DType::kInt64)
      return node.Fail(Describe(node, 6), " has type ", DTypeName(nonpad->dtype()),
                       "; expected int64");
    nonpad_data = nonpad->data<int64_t>();
    for (int64_t b = 0; b < nonpad->numel(); ++b) {
      if (nonpad_data[b] < 0 || nonpad_data[b] > plan.p.total_len()) {
        return node.Fail(Describe(node, 6), " [", b, "] = ", nonpad_data[b], " is outside [0, ",
                         plan.p.total_len(), "]");
      }
    }
  }
  Tensor y = ctx.Output(0, q.dtype(), plan.y);
  Tensor present_key, present_value, qk;
  if (ctx.has_output(1)) present_key = ctx.Output(1, q.dtype(), plan.present_key);
  if (ctx.has_output(2)) present_value = ctx.Output(2, v.dtype(), plan.present_value);
  if (ctx.has_output(3)) qk = ctx.Output(3, q.dtype(), plan.qk);
  // With head sizes 0 every output can be empty while the key length is huge (K [1, 1, 2^40,
  // 0]): the loops over the keys and their scratch rows would then be unbounded.
  if (y.numel() == 0 && present_key.numel() == 0 && present_value.numel() == 0 && qk.numel() == 0)
    return Status::Ok();
  reference::Attention(plan.p, q, k, v, mask, past_key, past_value, nonpad_data, &y,
                       ctx.has_output(1) ? &present_key : nullptr,
                       ctx.has_output(2) ? &present_value : nullptr,
                       ctx.has_output(3) ? &qk : nullptr);
  return Status::Ok();
}

// ---- FlexAttention (ai.onnx.preview 1) ----
// Inputs Q [B, Hq, L, E], K [B, Hkv, S, E], V [B, Hkv, S, Ev]; output Y [B, Hq, L, Ev]. The
// optional score_mod / prob_mod graphs rewrite the scores before and the probabilities after the
// softmax.

StatusOr<reference::FlexAttentionParams> PlanFlexAttention(const NodeView& node,
                                                           const std::vector<const Shape*>& in,
                                                           DType q_type) {
  const Shape& q = *in[0];
  const Shape& k = *in[1];
  const Shape& v = *in[2];
  if (q.size() != 4 || k.size() != 4 || v.size() != 4) {
    return node.Invalid("inputs Q ", ShapeToString(q), ", K ", ShapeToString(k), " and V ",
                        ShapeToString(v), " must be 4-D");
  }
  reference::FlexAttentionParams p;
  p.batch = q[0];
  p.q_heads = q[1];
  p.q_len = q[2];
  p.head_size = q[3];
  p.kv_heads = k[1];
  p.kv_len = k[2];
  p.v_head_size = v[3];
  if (k[0] != p.batch || v[0] != p.batch || v[1] != p.kv_heads || v[2] != p.kv_len ||
      k[3] != p.head_size) {
    return node.Invalid("inputs Q ", ShapeToString(q), ", K ", ShapeToString(k), " and V ",
                        ShapeToString(v), " disagree: expected K [B, Hkv, S, ", p.head_size,
                        "] and V [B, Hkv, S, Ev]");
  }
  if (p.kv_heads <= 0 || p.q_heads % p.kv_heads != 0) {
    return node.Invalid("the number of query heads (", p.q_heads,
                        ") must be a multiple of the number of key/value heads (", p.kv_heads, ")");
  }
  p.scale = node.has_attr("scale") ? static_cast<double>(node.attr_float("scale", 1.0f))
                                   : 1.0 / std::sqrt(static_cast<double>(p.head_size));
  // Softmax runs in float32 unless the inputs are double or softmax_precision says otherwise.
  p.compute = q_type == DType::kDouble ? DType::kDouble : DType::kFloat;
  if (node.has_attr("softmax_precision")) {
    const DType t = static_cast<DType>(node.attr_int("softmax_precision", 0));
    if (!Contains(kFloatTypes, t)) {
      return node.Invalid(
          "attribute 'softmax_precision' must be float, float16, bfloat16 or "
          "double, got ",
          node.attr_int("softmax_precision", 0));
    }
    p.compute = t;
  }
  return p;
}

Status InferFlexAttention(InferContext& ctx) {
  const NodeView& node = ctx.node();
  for (int i = 0; i < 3; ++i) ONYX_RETURN_IF_ERROR(CheckInputType(ctx, i, kFloatTypes));
  ONYX_RETURN_IF_ERROR(CheckSameType(ctx, 0, 1));
  ONYX_RETURN_IF_ERROR(CheckSameType(ctx, 0, 2));
  const DType t = InputElem(ctx, 0);
  std::vector<Shape> shapes;
  std::vector<const Shape*> ptrs;
  if (StaticShapes(ctx, &shapes, &ptrs) && t != DType::kUndefined) {
    ONYX_ASSIGN_OR_RETURN(const auto p, PlanFlexAttention(node, ptrs, t));
    const Shape scores = {p.batch, p.q_heads, p.q_len, p.kv_len};
    for (const char* attr : {"score_mod", "prob_mod"}) {
      if (!node.attr_graph(attr)) continue;
      ONYX_ASSIGN_OR_RETURN(const std::vector<TypeInfo> outs,
                            ctx.InferSubgraph(attr, {TensorType(p.compute, scores)}));
      if (outs.size() != 1) {
        return node.Invalid("attribute '", attr, "' must have exactly one output, has ",
                            outs.size());
      }
    }
    ctx.SetOutputType(0, TensorType(t, {p.batch, p.q_heads, p.q_len, p.v_head_size}));
    return Status::Ok();
  }
  TypeInfo y = TypeInfo::Tensor(t);
  const TypeInfo& q = ctx.input_type(0);
  if (q.has_shape && q.rank() == 4) {
    y.has_shape = true;
    y.dims = {q.dims[0], q.dims[1], q.dims[2], Dim()};
  }
  ctx.SetOutputType(0, y);
  return Status::Ok();
}

// Runs the modifier graph `attr` on `x` and returns its output, which must keep x's shape and
// element type.
StatusOr<Tensor> RunModifier(KernelContext& ctx, const char* attr, const Tensor& x) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(const std::vector<Value> outs, ctx.RunSubgraph(attr, {Value(x)}));
  if (outs.size() != 1 || !outs[0].is_tensor())
    return node.Fail("attribute '", attr, "' must produce exactly one tensor");
  const Tensor& out = outs[0].tensor();
  if (out.shape() != x.shape() || out.dtype() != x.dtype()) {
    return node.Fail("attribute '", attr, "' produced ", DTypeName(out.dtype()),
                     ShapeToString(out.shape()), "; expected ", DTypeName(x.dtype()),
                     ShapeToString(x.shape()));
  }
  return out;
}

Status FlexAttentionKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& q = ctx.input(0);
  const Tensor& k = ctx.input(1);
  const Tensor& v = ctx.input(2);
  ONYX_RETURN_IF_ERROR(CheckDType(node, 0, q.dtype(), kFloatTypes));
  if (k.dtype() != q.dtype() || v.dtype() != q.dtype())
    return node.Fail("inputs Q, K and V must share one type");
  ONYX_ASSIGN_OR_RETURN(const auto p, PlanFlexAttention(node, RuntimeShapes(ctx), q.dtype()));
  const Shape scores_shape = {p.batch, p.q_heads, p.q_len, p.kv_len};
  Tensor scores = Tensor::Allocate(p.compute, scores_shape);
  reference::FlexAttentionScores(p, q, k, &scores);
  if (node.attr_graph("score_mod")) {
    ONYX_ASSIGN_OR_RETURN(scores, RunModifier(ctx, "score_mod", scores));
    scores = scores.Clone();  // the softmax below works in place
  }
  reference::SoftmaxRows(&scores, p.batch * p.q_heads * p.q_len, p.kv_len);
  if (node.attr_graph("prob_mod")) {
    ONYX_ASSIGN_OR_RETURN(scores, RunModifier(ctx, "prob_mod", scores));
  }
  Tensor y = ctx.Output(0, q.dtype(), {p.batch, p.q_heads, p.q_len, p.v_head_size});
  reference::FlexAttentionOutput(p, scores, v, &y);
  return Status::Ok();
}

}  // namespace

void RegisterAttention(OpRegistry& r) {
  // Opset 24 added input 6 (nonpad_kv_seqlen) and lets attn_mask combine with is_causal.
  r.Add("", "Attention", 23, 23, InferAttention, AttentionKernel);
  r.Add("", "Attention", 24, 24, InferAttention, AttentionKernel);
  r.Add("", "Attention", 25, kLatestOpset, InferAttention, AttentionKernel);  // sliding window
  r.Add("ai.onnx.preview", "FlexAttention", 1, kLatestOpset, InferFlexAttention,
        FlexAttentionKernel);
}

}  // namespace onyx::kernels
