// RotaryEmbedding (opset 23): rotary position embedding of the last dim, from cos / sin caches.
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

// ---- RotaryEmbedding (opset 23) ----
// Inputs: X, cos_cache, sin_cache, position_ids (optional).

StatusOr<reference::RotaryParams> PlanRotary(const NodeView& node,
                                             const std::vector<const Shape*>& in) {
  const Shape& x = *in[0];
  const Shape& cos = *in[1];
  const Shape& sin = *in[2];
  const Shape* pos = in.size() > 3 ? in[3] : nullptr;
  reference::RotaryParams p;
  if (x.size() == 4) {
    p.batch = x[0];
    p.num_heads = x[1];
    p.seq_len = x[2];
    p.head_size = x[3];
  } else if (x.size() == 3) {
    const int64_t heads = node.attr_int("num_heads", 0);
    if (heads <= 0 || x[2] % heads != 0) {
      return node.Invalid("a 3-D input 0 ", ShapeToString(x),
                          " needs attribute 'num_heads' > 0 dividing its last dim, got ", heads);
    }
    p.packed_heads = true;
    p.batch = x[0];
    p.seq_len = x[1];
    p.num_heads = heads;
    p.head_size = x[2] / heads;
  } else {
    return node.Invalid(Describe(node, 0), " has shape ", ShapeToString(x),
                        "; expected [B, H, S, D] or [B, S, H*D]");
  }
  p.rotary_dim = node.attr_int("rotary_embedding_dim", 0);
  if (p.rotary_dim == 0) p.rotary_dim = p.head_size;
  if (p.rotary_dim < 0 || p.rotary_dim > p.head_size || p.rotary_dim % 2 != 0) {
    return node.Invalid("attribute 'rotary_embedding_dim' = ", p.rotary_dim,
                        " must be even and at most the head size ", p.head_size);
  }
  p.interleaved = node.attr_int("interleaved", 0) != 0;
  const int64_t half = p.rotary_dim / 2;
  Shape want;
  if (pos) {
    if (*pos != Shape{p.batch, p.seq_len}) {
      return node.Invalid(Describe(node, 3), " has shape ", ShapeToString(*pos), "; expected [",
                          p.batch, ",", p.seq_len, "]");
    }
    if (cos.size() != 2 || cos[1] != half)
      return node.Invalid(Describe(node, 1), " has shape ", ShapeToString(cos),
                          "; expected [max_position, ", half, "]");
    want = cos;
  } else {
    want = {p.batch, p.seq_len, half};
    if (cos != want)
      return node.Invalid(Describe(node, 1), " has shape ", ShapeToString(cos), "; expected ",
                          ShapeToString(want), " (no position_ids)");
  }
  if (sin != want) {
    return node.Invalid(Describe(node, 2), " has shape ", ShapeToString(sin),
                        "; expected the shape of ", Describe(node, 1), " ", ShapeToString(want));
  }
  return p;
}

Status InferRotaryEmbedding(InferContext& ctx) {
  for (int i = 0; i < 3; ++i) ONYX_RETURN_IF_ERROR(CheckInputType(ctx, i, kHalfOrFloat));
  ONYX_RETURN_IF_ERROR(CheckSameType(ctx, 0, 1));
  ONYX_RETURN_IF_ERROR(CheckSameType(ctx, 0, 2));
  ONYX_RETURN_IF_ERROR(CheckInputType(ctx, 3, {DType::kInt64}));
  std::vector<Shape> shapes;
  std::vector<const Shape*> ptrs;
  if (StaticShapes(ctx, &shapes, &ptrs))
    ONYX_RETURN_IF_ERROR(PlanRotary(ctx.node(), ptrs).status());
  return InferSameAsInput0(ctx);
}

Status RotaryEmbeddingKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  ONYX_RETURN_IF_ERROR(CheckDType(node, 0, x.dtype(), kHalfOrFloat));
  for (int i : {1, 2}) {
    if (ctx.input(i).dtype() != x.dtype())
      return node.Fail(Describe(node, i), " must have the type of input 0");
  }
  ONYX_ASSIGN_OR_RETURN(const reference::RotaryParams p, PlanRotary(node, RuntimeShapes(ctx)));
  const Tensor* pos = OptionalInput(ctx, 3);
  const int64_t* ids = nullptr;
  if (pos) {
    if (pos->dtype() != DType::kInt64)
      return node.Fail(Describe(node, 3), " has type ", DTypeName(pos->dtype()),
                       "; expected int64");
    ids = pos->data<int64_t>();
    const int64_t max_pos = ctx.input(1).dim(0);
    for (int64_t i = 0; i < pos->numel(); ++i) {
      if (ids[i] < 0 || ids[i] >= max_pos) {
        return node.Fail(Describe(node, 3), " holds position ", ids[i], ", outside [0, ", max_pos,
                         ") (the rows of the cos/sin caches)");
      }
    }
  }
  Tensor y = ctx.Output(0, x.dtype(), x.shape());
  reference::RotaryEmbedding(p, x, ctx.input(1), ctx.input(2), ids, &y);
  return Status::Ok();
}

}  // namespace

void RegisterRotaryEmbedding(OpRegistry& r) {
  r.Add("", "RotaryEmbedding", 23, kLatestOpset, InferRotaryEmbedding, RotaryEmbeddingKernel);
}

}  // namespace onyx::kernels
