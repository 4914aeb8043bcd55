// GridSample (16, 20, 22) and AffineGrid (20): sampling an image at grid positions, and the
// grid of an affine transform.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/op_registry.h"
#include "kernels/ops/image_signal_helpers.h"

namespace onyx::kernels {
namespace {

using namespace image_signal_ops;

// ======================= GridSample / AffineGrid =======================

struct GridSampleAttrs {
  reference::GridSampleMode mode;
  reference::GridSamplePadding padding;
  bool align_corners;
};

StatusOr<GridSampleAttrs> ParseGridSample(const NodeView& node) {
  GridSampleAttrs a;
  // Opset 16 spells the modes bilinear/bicubic; opset 20 renamed them linear/cubic.
  const std::string mode = node.attr_string("mode", node.opset() >= 20 ? "linear" : "bilinear");
  if (mode == "nearest") {
    a.mode = reference::GridSampleMode::kNearest;
  } else if (mode == "linear" || mode == "bilinear") {
    a.mode = reference::GridSampleMode::kLinear;
  } else if (mode == "cubic" || mode == "bicubic") {
    a.mode = reference::GridSampleMode::kCubic;
  } else {
    return node.Invalid("attribute 'mode' is '", mode, "'; expected nearest, linear or cubic");
  }
  const std::string pad = node.attr_string("padding_mode", "zeros");
  if (pad == "zeros") {
    a.padding = reference::GridSamplePadding::kZeros;
  } else if (pad == "border") {
    a.padding = reference::GridSamplePadding::kBorder;
  } else if (pad == "reflection") {
    a.padding = reference::GridSamplePadding::kReflection;
  } else {
    return node.Invalid("attribute 'padding_mode' is '", pad,
                        "'; expected zeros, border or reflection");
  }
  a.align_corners = node.attr_int("align_corners", 0) != 0;
  return a;
}

Status InferGridSample(InferContext& ctx) {
  const NodeView& node = ctx.node();
  std::vector<DType> x_types = kNumericTypes;
  x_types.push_back(DType::kBool);
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, x_types));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, kFloatTypes));
  ONYX_RETURN_IF_ERROR(ParseGridSample(node).status());
  const TypeInfo& x = ctx.input_type(0);
  const TypeInfo& grid = ctx.input_type(1);
  if (!x.is_tensor()) return Status::Ok();
  if (x.has_shape && (x.rank() < 3 || (node.opset() < 20 && x.rank() != 4)))
    return node.Invalid("input 0 '", InputName(node, 0), "' has shape ", x.ToString(),
                        node.opset() < 20 ? "; expected rank 4" : "; expected rank >= 3");
  if (!x.has_shape || !grid.is_tensor() || !grid.has_shape) {
    ctx.SetOutputType(0, x.has_shape ? TensorOfRank(x.elem, x.rank()) : TypeInfo::Tensor(x.elem));
    return Status::Ok();
  }
  if (grid.rank() != x.rank())
    return node.Invalid("input 1 '", InputName(node, 1), "' has shape ", grid.ToString(),
                        "; expected rank ", x.rank(), " like input 0 ", x.ToString());
  std::vector<Dim> dims = {x.dims[0], x.dims[1]};
  for (int64_t d = 1; d + 1 < grid.rank(); ++d) dims.push_back(grid.dims[d]);
  ctx.SetOutputType(0, TensorWithDims(x.elem, dims));
  return Status::Ok();
}

Status GridSampleKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& grid = ctx.input(1);
  ONYX_ASSIGN_OR_RETURN(GridSampleAttrs a, ParseGridSample(node));
  const int64_t k = x.rank() - 2;
  if (k < 1)
    return node.Invalid("input 0 '", InputName(node, 0), "' has shape ", ShapeToString(x.shape()),
                        "; expected [N, C, spatial...]");
  bool grid_ok = grid.rank() == x.rank() && grid.dim(0) == x.dim(0) && grid.dim(k + 1) == k;
  if (!grid_ok)
    return node.Invalid("input 1 '", InputName(node, 1), "' has shape ",
                        ShapeToString(grid.shape()), "; expected [", x.dim(0), ", out spatial (", k,
                        " dims)..., ", k, "] for input 0 ", ShapeToString(x.shape()));
  if (!IsFloatingPoint(grid.dtype()))
    return node.NotSupported("input 1 '", InputName(node, 1), "' has type ",
                             DTypeName(grid.dtype()));
  if (x.dtype() == DType::kString || x.dtype() == DType::kComplex64 ||
      x.dtype() == DType::kComplex128)
    return node.NotSupported("input 0 '", InputName(node, 0), "' has type ", DTypeName(x.dtype()),
                             ", which this operator does not support");
  Shape y_shape = {x.dim(0), x.dim(1)};
  for (int64_t d = 1; d <= k; ++d) y_shape.push_back(grid.dim(d));
  for (int64_t d = 2; d < x.rank(); ++d) {
    if (x.dim(d) == 0 && ShapeElementCount(y_shape) > 0)
      return node.Fail("input 0 '", InputName(node, 0), "' has an empty spatial dim ",
                       ShapeToString(x.shape()));
  }
  Tensor y = ctx.Output(0, x.dtype(), y_shape);
  reference::GridSample(x, grid, a.mode, a.padding, a.align_corners, y);
  return Status::Ok();
}

Status InferAffineGrid(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kFloatTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, {DType::kInt64}));
  const TypeInfo& theta = ctx.input_type(0);
  if (!theta.is_tensor()) return Status::Ok();
  std::vector<int64_t> size;
  if (ConstantInts(ctx, 1, &size)) {
    if (size.size() != 4 && size.size() != 5)
      return node.Invalid("input 1 '", InputName(node, 1), "' has ", size.size(),
                          " values; expected 4 (N, C, H, W) or 5 (N, C, D, H, W)");
    for (int64_t v : size)
      if (v < 0) return node.Invalid("input 1 '", InputName(node, 1), "' has a negative size ", v);
    std::vector<Dim> dims = {Dim::Known(size[0])};
    for (size_t d = 2; d < size.size(); ++d) dims.push_back(Dim::Known(size[d]));
    dims.push_back(Dim::Known(static_cast<int64_t>(size.size()) - 2));
    ctx.SetOutputType(0, TensorWithDims(theta.elem, dims));
    return Status::Ok();
  }
  const TypeInfo& st = ctx.input_type(1);
  if (st.has_shape && st.rank() == 1 && st.dims[0].known()) {
    if (st.dims[0].value != 4 && st.dims[0].value != 5)
      return node.Invalid("input 1 '", InputName(node, 1), "' has shape ", st.ToString(),
                          "; expected [4] (N, C, H, W) or [5] (N, C, D, H, W)");
    const int64_t k = st.dims[0].value - 2;
    TypeInfo out = TensorOfRank(theta.elem, k + 2);
    out.dims[0] = theta.has_shape && theta.rank() == 3 ? theta.dims[0] : Dim();
    out.dims[k + 1] = Dim::Known(k);
    ctx.SetOutputType(0, out);
  } else {
    ctx.SetOutputType(0, TypeInfo::Tensor(theta.elem));
  }
  return Status::Ok();
}

Status AffineGridKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& theta = ctx.input(0);
  const Tensor& size_input = ctx.input(1);
  if (size_input.dtype() != DType::kInt64 && size_input.dtype() != DType::kInt32)
    return node.Invalid("input 1 '", InputName(node, 1), "' has type ",
                        DTypeName(size_input.dtype()), "; expected int64");
  const std::vector<int64_t> size = TensorToInts(size_input);
  if (size.size() != 4 && size.size() != 5)
    return node.Invalid("input 1 '", InputName(node, 1), "' has ", size.size(),
                        " values; expected 4 (N, C, H, W) or 5 (N, C, D, H, W)");
  const int64_t k = static_cast<int64_t>(size.size()) - 2;
  if (theta.rank() != 3 || theta.dim(0) != size[0] || theta.dim(1) != k || theta.dim(2) != k + 1)
    return node.Invalid("input 0 '", InputName(node, 0), "' has shape ",
                        ShapeToString(theta.shape()), "; expected [", size[0], ", ", k, ", ", k + 1,
                        "] for size ", ShapeToString(size));
  std::vector<int64_t> spatial(size.begin() + 2, size.end());
  for (int64_t d : size)
    if (d < 0) return node.Invalid("input 1 '", InputName(node, 1), "' has a negative size");
  if (!IsFloatingPoint(theta.dtype()))
    return node.NotSupported("input 0 '", InputName(node, 0), "' has type ",
                             DTypeName(theta.dtype()));
  Shape out_shape = {size[0]};
  out_shape.insert(out_shape.end(), spatial.begin(), spatial.end());
  out_shape.push_back(k);
  Tensor grid = ctx.Output(0, theta.dtype(), out_shape);
  reference::AffineGrid(theta, spatial, node.attr_int("align_corners", 0) != 0, grid);
  return Status::Ok();
}

}  // namespace

void RegisterGridSample(OpRegistry& r) {
  // GridSample: 16 (4-D, bilinear/bicubic), 20 (N-d, linear/cubic), 22 (bfloat16).
  r.Add("", "GridSample", 16, 19, InferGridSample, GridSampleKernel);
  r.Add("", "GridSample", 20, 21, InferGridSample, GridSampleKernel);
  r.Add("", "GridSample", 22, kLatestOpset, InferGridSample, GridSampleKernel);
  r.Add("", "AffineGrid", 20, kLatestOpset, InferAffineGrid, AffineGridKernel);
}

}  // namespace onyx::kernels
