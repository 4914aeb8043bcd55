// LinearAttention (opset 27): attention with a recurrent state instead of a softmax over keys.
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

// ---- LinearAttention (opset 27) ----
// Inputs: query, key, value, past_state, decay, beta. Outputs: output, present_state.

StatusOr<reference::LinearAttentionParams> PlanLinearAttention(
    const NodeView& node, const std::vector<const Shape*>& in) {
  const auto input = [&](int i) { return i < static_cast<int>(in.size()) ? in[i] : nullptr; };
  reference::LinearAttentionParams p;
  const std::string rule = node.attr_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta") {
    return node.Invalid(
        "attribute 'update_rule' must be linear, gated, delta or gated_delta, "
        "got '",
        rule, "'");
  }
  p.gated = rule == "gated" || rule == "gated_delta";
  p.delta = rule == "delta" || rule == "gated_delta";
  ONYX_ASSIGN_OR_RETURN(p.q_heads, node.RequiredInt("q_num_heads"));
  ONYX_ASSIGN_OR_RETURN(p.kv_heads, node.RequiredInt("kv_num_heads"));
  if (p.q_heads <= 0 || p.kv_heads <= 0 || p.q_heads % p.kv_heads != 0) {
    return node.Invalid("attribute 'q_num_heads' (", p.q_heads,
                        ") must be a positive multiple of 'kv_num_heads' (", p.kv_heads, ")");
  }
  const Shape* q = input(0);
  const Shape* k = input(1);
  const Shape* v = input(2);
  if (!q || !k || !v) return node.Invalid("inputs query, key and value are required");
  if (q->size() != 3 || k->size() != 3 || v->size() != 3) {
    return node.Invalid("query ", ShapeToString(*q), ", key ", ShapeToString(*k), " and value ",
                        ShapeToString(*v), " must be [B, T, H*D]");
  }
  p.batch = (*q)[0];
  p.seq_len = (*q)[1];
  if ((*q)[2] % p.q_heads != 0 || (*v)[2] % p.kv_heads != 0)
    return node.Invalid("query ", ShapeToString(*q), " / value ", ShapeToString(*v),
                        " hidden sizes are not divisible by the head counts");
  p.key_size = (*q)[2] / p.q_heads;
  p.value_size = (*v)[2] / p.kv_heads;
  const Shape want_k = {p.batch, p.seq_len, p.kv_heads * p.key_size};
  if (*k != want_k || (*v)[0] != p.batch || (*v)[1] != p.seq_len) {
    return node.Invalid("key ", ShapeToString(*k), " / value ", ShapeToString(*v),
                        " disagree with query ", ShapeToString(*q), ": expected key ",
                        ShapeToString(want_k));
  }
  const Shape* past = input(3);
  if (past && *past != Shape{p.batch, p.kv_heads, p.key_size, p.value_size}) {
    return node.Invalid(Describe(node, 3), " has shape ", ShapeToString(*past), "; expected [",
                        p.batch, ",", p.kv_heads, ",", p.key_size, ",", p.value_size, "]");
  }
  const Shape* decay = input(4);
  if (p.gated != (decay != nullptr)) {
    return node.Invalid("update_rule '", rule, "' ", p.gated ? "requires" : "forbids",
                        " input 4 (decay)");
  }
  if (decay) {
    const bool per_head = *decay == Shape{p.batch, p.seq_len, p.kv_heads};
    if (!per_head && *decay != Shape{p.batch, p.seq_len, p.kv_heads * p.key_size}) {
      return node.Invalid(Describe(node, 4), " has shape ", ShapeToString(*decay),
                          "; expected [B, T, kv_heads] or [B, T, kv_heads * d_k]");
    }
    p.per_head_decay = per_head;
  }
  const Shape* beta = input(5);
  if (p.delta != (beta != nullptr)) {
    return node.Invalid("update_rule '", rule, "' ", p.delta ? "requires" : "forbids",
                        " input 5 (beta)");
  }
  if (beta) {
    const bool per_head = *beta == Shape{p.batch, p.seq_len, p.kv_heads};
    if (!per_head && *beta != Shape{p.batch, p.seq_len, 1}) {
      return node.Invalid(Describe(node, 5), " has shape ", ShapeToString(*beta),
                          "; expected [B, T, kv_heads] or [B, T, 1]");
    }
    p.per_head_beta = per_head;
  }
  // q_num_heads may be huge when query is empty ([1, 1, 0] with 2^62 heads).
  int64_t out_hidden = 0;  // the output's last dim, computed by the callers
  if (!CheckedMul(p.q_heads, p.value_size, &out_hidden)) {
    return node.Invalid("attribute 'q_num_heads' ", p.q_heads, " times the value head size ",
                        p.value_size, " overflows int64");
  }
  const double scale = node.attr_float("scale", 0.0f);
  p.scale = scale != 0 ? scale : 1.0 / std::sqrt(static_cast<double>(p.key_size));
  return p;
}

Status InferLinearAttention(InferContext& ctx) {
  for (int i = 0; i < 6; ++i) ONYX_RETURN_IF_ERROR(CheckInputType(ctx, i, kHalfOrFloat));
  for (int i : {1, 2, 4, 5}) ONYX_RETURN_IF_ERROR(CheckSameType(ctx, 0, i));
  const DType t = InputElem(ctx, 0);
  // present_state takes past_state's type, or query's when there is no past state.
  const DType s = ctx.has_input(3) ? InputElem(ctx, 3) : t;
  std::vector<Shape> shapes;
  std::vector<const Shape*> ptrs;
  if (StaticShapes(ctx, &shapes, &ptrs)) {
    ONYX_ASSIGN_OR_RETURN(const auto p, PlanLinearAttention(ctx.node(), ptrs));
    ctx.SetOutputType(0, TensorType(t, {p.batch, p.seq_len, p.q_heads * p.value_size}));
    if (ctx.num_outputs() > 1)
      ctx.SetOutputType(1, TensorType(s, {p.batch, p.kv_heads, p.key_size, p.value_size}));
    return Status::Ok();
  }
  TypeInfo out = TypeInfo::Tensor(t);
  const TypeInfo& q = ctx.input_type(0);
  if (q.has_shape && q.rank() == 3) {
    out.has_shape = true;
    out.dims = {q.dims[0], q.dims[1], Dim()};
  }
  ctx.SetOutputType(0, out);
  if (ctx.num_outputs() > 1) ctx.SetOutputType(1, TypeInfo::Tensor(s));
  return Status::Ok();
}

Status LinearAttentionKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& q = ctx.input(0);
  ONYX_RETURN_IF_ERROR(CheckDType(node, 0, q.dtype(), kHalfOrFloat));
  for (int i : {1, 2, 4, 5}) {
    const Tensor* t = OptionalInput(ctx, i);
    if (t && t->dtype() != q.dtype())
      return node.Fail(Describe(node, i), " must have the type of input 0");
  }
  const Tensor* past = OptionalInput(ctx, 3);
  if (past) ONYX_RETURN_IF_ERROR(CheckDType(node, 3, past->dtype(), kHalfOrFloat));
  ONYX_ASSIGN_OR_RETURN(const auto p, PlanLinearAttention(node, RuntimeShapes(ctx)));
  Tensor out = ctx.Output(0, q.dtype(), {p.batch, p.seq_len, p.q_heads * p.value_size});
  const Shape state_shape = {p.batch, p.kv_heads, p.key_size, p.value_size};
  const DType s = past ? past->dtype() : q.dtype();
  Tensor state = ctx.num_outputs() > 1 && ctx.has_output(1) ? ctx.Output(1, s, state_shape)
                                                            : Tensor::Allocate(s, state_shape);
  reference::LinearAttention(p, q, ctx.input(1), ctx.input(2), past, OptionalInput(ctx, 4),
                             OptionalInput(ctx, 5), &out, &state);
  return Status::Ok();
}

}  // namespace

void RegisterLinearAttention(OpRegistry& r) {
  r.Add("", "LinearAttention", 27, kLatestOpset, InferLinearAttention, LinearAttentionKernel);
}

}  // namespace onyx::kernels
