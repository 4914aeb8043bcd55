// TensorScatter (opset 24): writes an update into a KV cache at per-batch positions (linear or
// circular).
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

// ---- TensorScatter (opset 24) ----
// Inputs: past_cache, update, write_indices (optional).

StatusOr<int64_t> PlanTensorScatter(const NodeView& node, const Shape& past, const Shape& update,
                                    const Shape* indices) {
  const int64_t rank = static_cast<int64_t>(past.size());
  ONYX_ASSIGN_OR_RETURN(const int64_t axis,
                        NormalizeAxis(node, node.attr_int("axis", -2), rank, "attribute 'axis'"));
  if (axis == 0) return node.Invalid("attribute 'axis' must not be the batch axis 0");
  bool ok = update.size() == past.size();
  for (int64_t d = 0; ok && d < rank; ++d)
    ok = d == axis ? update[d] <= past[d] : update[d] == past[d];
  if (!ok) {
    return node.Invalid(Describe(node, 1), " has shape ", ShapeToString(update),
                        "; expected the shape of ", Describe(node, 0), " ", ShapeToString(past),
                        " except for a dim ", axis, " of at most ", past[axis]);
  }
  if (indices && *indices != Shape{past[0]}) {
    return node.Invalid(Describe(node, 2), " has shape ", ShapeToString(*indices), "; expected [",
                        past[0], "]");
  }
  return axis;
}

StatusOr<bool> ScatterIsCircular(const NodeView& node) {
  const std::string mode = node.attr_string("mode", "linear");
  if (mode != "linear" && mode != "circular")
    return node.Invalid("attribute 'mode' must be 'linear' or 'circular', got '", mode, "'");
  return mode == "circular";
}

Status InferTensorScatter(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ScatterIsCircular(ctx.node()).status());
  ONYX_RETURN_IF_ERROR(CheckSameType(ctx, 0, 1));
  ONYX_RETURN_IF_ERROR(CheckInputType(ctx, 2, {DType::kInt64}));
  std::vector<Shape> shapes;
  std::vector<const Shape*> ptrs;
  if (StaticShapes(ctx, &shapes, &ptrs)) {
    ONYX_RETURN_IF_ERROR(
        PlanTensorScatter(ctx.node(), shapes[0], shapes[1], ptrs.size() > 2 ? ptrs[2] : nullptr)
            .status());
  }
  return InferSameAsInput0(ctx);
}

Status TensorScatterKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& past = ctx.input(0);
  const Tensor& update = ctx.input(1);
  const Tensor* indices = OptionalInput(ctx, 2);
  if (update.dtype() != past.dtype())
    return node.Fail(Describe(node, 1), " must have the type of input 0");
  ONYX_ASSIGN_OR_RETURN(const bool circular, ScatterIsCircular(node));
  ONYX_ASSIGN_OR_RETURN(
      const int64_t axis,
      PlanTensorScatter(node, past.shape(), update.shape(), indices ? &indices->shape() : nullptr));
  const int64_t* w = nullptr;
  if (indices) {
    if (indices->dtype() != DType::kInt64)
      return node.Fail(Describe(node, 2), " has type ", DTypeName(indices->dtype()),
                       "; expected int64");
    w = indices->data<int64_t>();
    // Linear mode writes [w, w + len) and must stay inside the cache.
    for (int64_t b = 0; !circular && b < indices->numel(); ++b) {
      if (w[b] < 0 || w[b] > past.dim(axis) - update.dim(axis)) {
        return node.Fail(Describe(node, 2), " [", b, "] = ", w[b], " writes ", update.dim(axis),
                         " entries past the end of axis ", axis, " (size ", past.dim(axis),
                         ") in linear mode");
      }
    }
  }
  Tensor present = ctx.Output(0, past.dtype(), past.shape());
  reference::TensorScatter(past, update, w, axis, circular, &present);
  return Status::Ok();
}

}  // namespace

void RegisterTensorScatter(OpRegistry& r) {
  r.Add("", "TensorScatter", 24, kLatestOpset, InferTensorScatter, TensorScatterKernel);
}

}  // namespace onyx::kernels
