// NonMaxSuppression (10, 11): the boxes kept per batch and class, as [selected, 3] indices.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/op_registry.h"
#include "kernels/ops/image_signal_helpers.h"

namespace onyx::kernels {
namespace {

using namespace image_signal_ops;

// ======================= NonMaxSuppression =======================

Status InferNonMaxSuppression(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kFloatTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, kFloatTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 2, {DType::kInt64, DType::kInt32}));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 3, kFloatTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 4, kFloatTypes));
  const int64_t cpb = ctx.node().attr_int("center_point_box", 0);
  if (cpb != 0 && cpb != 1)
    return ctx.node().Invalid("attribute 'center_point_box' must be 0 or 1, got ", cpb);
  // The number of selected boxes depends on the data.
  ctx.SetOutputType(0, TensorWithDims(DType::kInt64, {Dim(), Dim::Known(3)}));
  return Status::Ok();
}

Status NonMaxSuppressionKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& boxes = ctx.input(0);
  const Tensor& scores = ctx.input(1);
  if (boxes.rank() != 3 || boxes.dim(2) != 4)
    return node.Invalid("input 0 '", InputName(node, 0), "' has shape ",
                        ShapeToString(boxes.shape()), "; expected [batch, boxes, 4]");
  if (scores.rank() != 3 || scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1))
    return node.Invalid("input 1 '", InputName(node, 1), "' has shape ",
                        ShapeToString(scores.shape()), "; expected [", boxes.dim(0), ", classes, ",
                        boxes.dim(1), "] to match input 0 ", ShapeToString(boxes.shape()));
  if (!IsFloatingPoint(boxes.dtype()) || !IsFloatingPoint(scores.dtype()))
    return node.NotSupported("inputs 0 and 1 must be float, got ", DTypeName(boxes.dtype()),
                             " and ", DTypeName(scores.dtype()));
  // Absent or empty optional inputs take their defaults: no boxes, IoU 0, no score filter.
  int64_t max_boxes = 0;
  double iou = 0, score_threshold = 0;
  bool has_score_threshold = false;
  if (Present(ctx, 2) && ctx.input(2).numel() > 0) max_boxes = TensorToInts(ctx.input(2))[0];
  if (Present(ctx, 3) && ctx.input(3).numel() > 0) iou = ElementAsDouble(ctx.input(3), 0);
  if (Present(ctx, 4) && ctx.input(4).numel() > 0) {
    has_score_threshold = true;
    score_threshold = ElementAsDouble(ctx.input(4), 0);
  }
  const std::vector<int64_t> selected =
      reference::NonMaxSuppression(boxes, scores, max_boxes, iou, has_score_threshold,
                                   score_threshold, node.attr_int("center_point_box", 0) != 0);
  const int64_t n = static_cast<int64_t>(selected.size()) / 3;
  Tensor y = ctx.Output(0, DType::kInt64, {n, 3});
  std::copy(selected.begin(), selected.end(), y.data<int64_t>());
  return Status::Ok();
}

}  // namespace

void RegisterNonMaxSuppression(OpRegistry& r) {
  r.Add("", "NonMaxSuppression", 10, 10, InferNonMaxSuppression, NonMaxSuppressionKernel);
  r.Add("", "NonMaxSuppression", 11, kLatestOpset, InferNonMaxSuppression, NonMaxSuppressionKernel);
}

}  // namespace onyx::kernels
