// ImageSignal family: Resize, Upsample, GridSample, AffineGrid, DFT, STFT, window functions,
// MelWeightMatrix, NonMaxSuppression.
#include "kernels/reference/image_signal.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/element_types.h"
#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"

namespace onyx::kernels {
namespace {

using reference::ResizeCoordinateMode;
using reference::ResizeMode;
using reference::ResizeNearestMode;
using reference::ResizeParams;

const std::vector<DType> kFloatTypes = {DType::kFloat, DType::kFloat16, DType::kBFloat16,
                                        DType::kDouble};
const std::vector<DType> kNumericTypes = {DType::kFloat,  DType::kFloat16, DType::kBFloat16,
                                          DType::kDouble, DType::kInt8,    DType::kInt16,
                                          DType::kInt32,  DType::kInt64,   DType::kUInt8,
                                          DType::kUInt16, DType::kUInt32,  DType::kUInt64};

bool Present(const InferContext& ctx, int i) {
  return i < ctx.num_inputs() && ctx.has_input(i);
}
bool Present(const KernelContext& ctx, int i) {
  return i < ctx.num_inputs() && ctx.has_input(i);
}

TypeInfo TensorOfRank(DType t, int64_t rank) {
  TypeInfo info = TypeInfo::Tensor(t);
  info.has_shape = true;
  info.dims.assign(static_cast<size_t>(rank), Dim());
  return info;
}

TypeInfo TensorWithDims(DType t, std::vector<Dim> dims) {
  TypeInfo info = TypeInfo::Tensor(t);
  info.has_shape = true;
  info.dims = std::move(dims);
  return info;
}

// Reads a scalar (or one-element) integer input.
StatusOr<int64_t> ScalarInt(const NodeView& node, int i, const Tensor& t) {
  if (t.numel() != 1 || (t.dtype() != DType::kInt64 && t.dtype() != DType::kInt32)) {
    return node.Invalid("input ", i, " '", InputName(node, i), "' must be a single int32/int64 ",
                        "value, got ", DTypeName(t.dtype()), ShapeToString(t.shape()));
  }
  return TensorToInts(t)[0];
}

StatusOr<double> ScalarFloat(const NodeView& node, int i, const Tensor& t) {
  if (t.numel() != 1 || (!IsFloatingPoint(t.dtype()) && !IsInteger(t.dtype()))) {
    return node.Invalid("input ", i, " '", InputName(node, i), "' must be a single number, got ",
                        DTypeName(t.dtype()), ShapeToString(t.shape()));
  }
  return ElementAsDouble(t, 0);
}

// The constant value of a scalar int input at plan time, if there is one.
bool ConstantScalarInt(InferContext& ctx, int i, int64_t* v) {
  std::vector<int64_t> vals;
  if (!ConstantInts(ctx, i, &vals) || vals.size() != 1) return false;
  *v = vals[0];
  return true;
}

// ======================= Resize / Upsample =======================

// Input positions: Resize-10 and Upsample-9 are (X, scales); Resize-11+ is (X, roi, scales, sizes).
struct ResizeInputs {
  int roi = -1, scales = -1, sizes = -1;
};

ResizeInputs ResizeInputsFor(const NodeView& node) {
  if (node.op_type() == "Upsample")
    return node.opset() >= 9 ? ResizeInputs{-1, 1, -1} : ResizeInputs{};
  if (node.opset() < 11) return {-1, 1, -1};
  return {1, 2, 3};
}

StatusOr<ResizeMode> ParseResizeMode(const NodeView& node) {
  const std::string mode = node.attr_string("mode", "nearest");
  if (mode == "nearest") return ResizeMode::kNearest;
  if (mode == "linear" || mode == "bilinear") return ResizeMode::kLinear;
  if (mode == "cubic" && node.op_type() == "Resize" && node.opset() >= 11)
    return ResizeMode::kCubic;
  return node.Invalid("attribute 'mode' is '", mode, "'; expected nearest, linear",
                      node.op_type() == "Resize" && node.opset() >= 11 ? " or cubic" : "");
}

// Everything but the sizes: modes and numeric attributes.
StatusOr<ResizeParams> ParseResizeAttributes(const NodeView& node) {
  ResizeParams p;
  ONYX_ASSIGN_OR_RETURN(p.mode, ParseResizeMode(node));
  const bool legacy = node.op_type() == "Upsample" || node.opset() < 11;
  if (legacy) {
    // Upsample and Resize-10 predate the coordinate modes: asymmetric with ONNX Runtime's
    // "simple" nearest rounding.
    p.coordinate_mode = ResizeCoordinateMode::kAsymmetric;
    p.nearest_mode = ResizeNearestMode::kSimple;
    return p;
  }
  const std::string ctm = node.attr_string("coordinate_transformation_mode", "half_pixel");
  if (ctm == "half_pixel") {
    p.coordinate_mode = ResizeCoordinateMode::kHalfPixel;
  } else if (ctm == "half_pixel_symmetric") {
    p.coordinate_mode = ResizeCoordinateMode::kHalfPixelSymmetric;
  } else if (ctm == "pytorch_half_pixel") {
    p.coordinate_mode = ResizeCoordinateMode::kPytorchHalfPixel;
  } else if (ctm == "align_corners") {
    p.coordinate_mode = ResizeCoordinateMode::kAlignCorners;
  } else if (ctm == "asymmetric") {
    p.coordinate_mode = ResizeCoordinateMode::kAsymmetric;
  } else if (ctm == "tf_crop_and_resize") {
    p.coordinate_mode = ResizeCoordinateMode::kTfCropAndResize;
  } else if (ctm == "tf_half_pixel_for_nn") {  // opset 11-12
    p.coordinate_mode = ResizeCoordinateMode::kTfHalfPixelForNn;
  } else {
    return node.Invalid("attribute 'coordinate_transformation_mode' is '", ctm,
                        "', which is not an ONNX coordinate transformation mode");
  }
  const std::string nm = node.attr_string("nearest_mode", "round_prefer_floor");
  if (nm == "round_prefer_floor") {
    p.nearest_mode = ResizeNearestMode::kRoundPreferFloor;
  } else if (nm == "round_prefer_ceil") {
    p.nearest_mode = ResizeNearestMode::kRoundPreferCeil;
  } else if (nm == "floor") {
    p.nearest_mode = ResizeNearestMode::kFloor;
  } else if (nm == "ceil") {
    p.nearest_mode = ResizeNearestMode::kCeil;
  } else {
    return node.Invalid("attribute 'nearest_mode' is '", nm,
                        "'; expected round_prefer_floor, round_prefer_ceil, floor or ceil");
  }
  p.cubic_coeff_a = node.attr_float("cubic_coeff_a", -0.75f);
  p.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  p.extrapolation_value = node.attr_float("extrapolation_value", 0.0f);
  p.antialias = node.attr_int("antialias", 0) != 0 && p.mode != ResizeMode::kNearest;
  return p;
}

// Resolves scales/sizes/roi/axes into per-axis scales and the output shape (ONNX Resize-19
// rules, which reduce to the older ones when the newer attributes are absent).
// `scales`, `sizes`, `roi` are null when absent (an empty tensor counts as absent).
Status ResolveResizeShape(const NodeView& node, const Shape& x_shape, const ResizeInputs& inputs,
                          const Tensor* roi, const Tensor* scales, const Tensor* sizes,
                          ResizeParams* p) {
  const int64_t rank = static_cast<int64_t>(x_shape.size());
  std::vector<int64_t> axes;
  for (int64_t a : node.attr_ints("axes", {})) {
    ONYX_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, a, rank, "attribute 'axes' entry"));
    if (std::find(axes.begin(), axes.end(), axis) != axes.end())
      return node.Invalid("attribute 'axes' repeats axis ", axis);
    axes.push_back(axis);
  }
  if (axes.empty())
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  const size_t na = axes.size();

  p->scales.assign(static_cast<size_t>(rank), 1.0);
  p->roi_start.assign(static_cast<size_t>(rank), 0.0);
  p->roi_end.assign(static_cast<size_t>(rank), 1.0);
  p->output_shape = x_shape;

  if (node.op_type() == "Upsample" && node.opset() < 9) {
    const std::vector<float> s = node.attr_floats("scales", {});
    if (static_cast<int64_t>(s.size()) != rank)
      return node.Invalid("attribute 'scales' has ", s.size(), " values; expected ", rank,
                          " (the rank of input 0)");
    for (int64_t a = 0; a < rank; ++a) p->scales[a] = s[a];
  } else if (scales && sizes) {
    return node.Invalid("inputs ", inputs.scales, " 'scales' and ", inputs.sizes,
                        " 'sizes' are both given; exactly one may be");
  } else if (scales) {
    if (scales->numel() != static_cast<int64_t>(na))
      return node.Invalid("input ", inputs.scales, " '", InputName(node, inputs.scales), "' has ",
                          scales->numel(), " values; expected ", na);
    const std::vector<double> s = TensorToDoubles(*scales);
    for (size_t i = 0; i < na; ++i) p->scales[axes[i]] = s[i];
  } else if (sizes) {
    if (sizes->numel() != static_cast<int64_t>(na))
      return node.Invalid("input ", inputs.sizes, " '", InputName(node, inputs.sizes), "' has ",
                          sizes->numel(), " values; expected ", na);
    const std::vector<int64_t> sz = TensorToInts(*sizes);
    for (size_t i = 0; i < na; ++i) {
      if (sz[i] < 0)
        return node.Invalid("input ", inputs.sizes, " '", InputName(node, inputs.sizes),
                            "' has negative size ", sz[i]);
      if (x_shape[axes[i]] == 0 && sz[i] != 0)
        return node.Fail("cannot resize the empty axis ", axes[i], " of input 0 to ", sz[i]);
    }
    const std::string policy = node.attr_string("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch") {
      for (size_t i = 0; i < na; ++i) {
        const int64_t in = x_shape[axes[i]];
        p->output_shape[axes[i]] = sz[i];
        p->scales[axes[i]] = in == 0 ? 1.0 : static_cast<double>(sz[i]) / static_cast<double>(in);
      }
    } else if (policy == "not_larger" || policy == "not_smaller") {
      // One scale for every resized axis keeps the aspect ratio; sizes round half up.
      double scale = policy == "not_larger" ? INFINITY : -INFINITY;
      for (size_t i = 0; i < na; ++i) {
        if (x_shape[axes[i]] == 0) continue;  // stays empty (its size is 0, checked above)
        const double r = static_cast<double>(sz[i]) / static_cast<double>(x_shape[axes[i]]);
        scale = policy == "not_larger" ? std::min(scale, r) : std::max(scale, r);
      }
      for (size_t i = 0; i < na; ++i) {
        p->scales[axes[i]] = std::isfinite(scale) ? scale : 1.0;
        const double dim = scale * static_cast<double>(x_shape[axes[i]]) + 0.5;
        // Checked before the conversion: a double beyond int64 does not convert.
        if (!(dim < 0x1p62))
          return node.Invalid("input ", inputs.sizes, " '", InputName(node, inputs.sizes),
                              "' makes axis ", axes[i], " ", dim, " long");
        p->output_shape[axes[i]] = x_shape[axes[i]] == 0 ? 0 : static_cast<int64_t>(dim);
      }
    } else {
      return node.Invalid("attribute 'keep_aspect_ratio_policy' is '", policy,
                          "'; expected stretch, not_larger or not_smaller");
    }
  } else {
    return node.Invalid("one of inputs 'scales' and 'sizes' must be given");
  }
  if (!sizes) {
    for (int64_t a = 0; a < rank; ++a) {
      if (!(p->scales[a] > 0) || !std::isfinite(p->scales[a]))
        return node.Invalid("scale ", p->scales[a], " for axis ", a, " must be positive");
      const double dim = std::floor(p->scales[a] * static_cast<double>(x_shape[a]));
      if (!(dim < 0x1p62))  // checked before the conversion, which a larger double overflows
        return node.Invalid("scale ", p->scales[a], " makes axis ", a, " of length ", x_shape[a],
                            " ", dim, " long");
      p->output_shape[a] = static_cast<int64_t>(dim);
    }
  }
  if (p->coordinate_mode == ResizeCoordinateMode::kTfCropAndResize) {
    if (!roi)
      return node.Invalid("coordinate_transformation_mode tf_crop_and_resize needs input 1 'roi'");
    if (roi->numel() != 2 * static_cast<int64_t>(na))
      return node.Invalid("input 1 '", InputName(node, 1), "' has ", roi->numel(),
                          " values; expected ", 2 * na, " (starts then ends of the resized axes)");
    const std::vector<double> r = TensorToDoubles(*roi);
    for (size_t i = 0; i < na; ++i) {
      p->roi_start[axes[i]] = r[i];
      p->roi_end[axes[i]] = r[na + i];
    }
  }
  return Status::Ok();
}

// A Tensor* for an optional shape input: null when absent or empty.
const Tensor* NonEmpty(const Tensor* t) {
  return t && t->numel() > 0 ? t : nullptr;
}

// Output dims when X has symbolic dims but the scales (or stretch sizes) are constant: axes with
// scale 1 keep X's dim (e.g. a symbolic batch), known dims are scaled, the rest stay unknown.
void PartialResizeDims(const NodeView& node, const TypeInfo& x, const Tensor* scales,
                       const Tensor* sizes, TypeInfo* out) {
  const int64_t rank = x.rank();
  std::vector<int64_t> axes;
  for (int64_t a : node.attr_ints("axes", {})) {
    if (a < -rank || a >= rank) return;
    axes.push_back(a < 0 ? a + rank : a);
  }
  if (axes.empty())
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  std::vector<double> scale(static_cast<size_t>(rank), 1.0);
  std::vector<int64_t> size(static_cast<size_t>(rank), -1);
  if (scales && !sizes && scales->numel() == static_cast<int64_t>(axes.size())) {
    const std::vector<double> s = TensorToDoubles(*scales);
    for (size_t i = 0; i < axes.size(); ++i) scale[axes[i]] = s[i];
  } else if (sizes && !scales && sizes->numel() == static_cast<int64_t>(axes.size()) &&
             node.attr_string("keep_aspect_ratio_policy", "stretch") == "stretch") {
    const std::vector<int64_t> s = TensorToInts(*sizes);
    for (size_t i = 0; i < axes.size(); ++i) size[axes[i]] = s[i];
  } else if (!(node.op_type() == "Upsample" && node.opset() < 9)) {
    return;
  } else {
    const std::vector<float> s = node.attr_floats("scales", {});
    if (static_cast<int64_t>(s.size()) != rank) return;
    for (int64_t a = 0; a < rank; ++a) scale[a] = s[a];
  }
  for (int64_t a = 0; a < rank; ++a) {
    const Dim& d = x.dims[a];
    if (size[a] >= 0) {
      out->dims[a] = Dim::Known(size[a]);
    } else if (d.known() && scale[a] > 0) {
      out->dims[a] = Dim::Known(static_cast<int64_t>(std::floor(scale[a] * d.value)));
    } else if (scale[a] == 1.0) {
      out->dims[a] = d;
    }
  }
}

Status InferResize(InferContext& ctx) {
  const NodeView& node = ctx.node();
  const TypeInfo& x = ctx.input_type(0);
  ONYX_ASSIGN_OR_RETURN(ResizeParams p, ParseResizeAttributes(node));
  if (x.is_tensor()) {
    if (x.elem == DType::kComplex64 || x.elem == DType::kComplex128 ||
        (p.mode != ResizeMode::kNearest &&
         std::find(kNumericTypes.begin(), kNumericTypes.end(), x.elem) == kNumericTypes.end())) {
      return node.NotSupported("input 0 '", InputName(node, 0), "' has type ", DTypeName(x.elem),
                               ", which this operator does not support in this mode");
    }
  }
  if (!x.is_tensor()) return Status::Ok();
  const ResizeInputs in = ResizeInputsFor(node);
  // The output shape is known at plan time when X's shape and the scales/sizes are constant.
  const Tensor* scales =
      in.scales >= 0 && Present(ctx, in.scales) ? ctx.input_constant(in.scales) : nullptr;
  const Tensor* sizes =
      in.sizes >= 0 && Present(ctx, in.sizes) ? ctx.input_constant(in.sizes) : nullptr;
  const Tensor* roi = in.roi >= 0 && Present(ctx, in.roi) ? ctx.input_constant(in.roi) : nullptr;
  const bool scales_known = in.scales < 0 || !Present(ctx, in.scales) || scales;
  const bool sizes_known = in.sizes < 0 || !Present(ctx, in.sizes) || sizes;
  const bool roi_known = in.roi < 0 || !Present(ctx, in.roi) || roi;
  TypeInfo out = x;
  if (x.shape_is_static() && scales_known && sizes_known && roi_known) {
    ONYX_RETURN_IF_ERROR(ResolveResizeShape(node, x.static_shape(), in, NonEmpty(roi),
                                            NonEmpty(scales), NonEmpty(sizes), &p));
    out = TypeInfo::TensorWithShape(x.elem, p.output_shape);
  } else if (x.has_shape) {
    out = TensorOfRank(x.elem, x.rank());
    PartialResizeDims(node, x, NonEmpty(scales), NonEmpty(sizes), &out);
  }
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

Status ResizeKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  ONYX_ASSIGN_OR_RETURN(ResizeParams p, ParseResizeAttributes(node));
  const ResizeInputs in = ResizeInputsFor(node);
  auto get = [&](int i) -> const Tensor* {
    return i >= 0 && Present(ctx, i) ? NonEmpty(&ctx.input(i)) : nullptr;
  };
  ONYX_RETURN_IF_ERROR(
      ResolveResizeShape(node, x.shape(), in, get(in.roi), get(in.scales), get(in.sizes), &p));
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (x.dim(d) == 0 && p.output_shape[d] != 0)
      return node.Fail("cannot resize the empty axis ", d, " of input 0 ", ShapeToString(x.shape()),
                       " to ", p.output_shape[d]);
  }
  if (x.dtype() == DType::kComplex64 || x.dtype() == DType::kComplex128 ||
      (p.mode != ResizeMode::kNearest &&
       std::find(kNumericTypes.begin(), kNumericTypes.end(), x.dtype()) == kNumericTypes.end())) {
    return node.NotSupported("input 0 '", InputName(node, 0), "' has type ", DTypeName(x.dtype()),
                             ", which this operator does not support");
  }
  Tensor y = ctx.Output(0, x.dtype(), p.output_shape);
  reference::Resize(x, p, y);
  return Status::Ok();
}

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

// ======================= DFT / STFT =======================

// The DFT axis: attribute (opset 17, default 1) or input 2 (opset 20, default -2). Valid axes are
// the signal dims: [-r, -2] or [0, r-2] where r includes the trailing real/imag dim.
StatusOr<int64_t> DftAxis(const NodeView& node, int64_t rank, const Tensor* axis_input) {
  int64_t axis = node.opset() >= 20 ? -2 : node.attr_int("axis", 1);
  if (node.opset() >= 20 && axis_input) {
    ONYX_ASSIGN_OR_RETURN(axis, ScalarInt(node, 2, *axis_input));
  }
  if (axis < -rank || axis > rank - 2 || axis == -1)
    return node.Invalid("axis ", axis, " is out of range for input 0 of rank ", rank,
                        " (expected [", -rank, ", -2] or [0, ", rank - 2, "])");
  return axis < 0 ? axis + rank : axis;
}

Status InferDft(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kFloatTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, {DType::kInt32, DType::kInt64}));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 2, {DType::kInt64, DType::kInt32}));
  const TypeInfo& x = ctx.input_type(0);
  if (!x.is_tensor()) return Status::Ok();
  if (!x.has_shape) {
    ctx.SetOutputType(0, TypeInfo::Tensor(x.elem));
    return Status::Ok();
  }
  const int64_t rank = x.rank();
  // Rank first: the last dim of a scalar does not exist (found by fuzz_load_plan).
  if (rank < 2 ||
      (x.dims[rank - 1].known() && x.dims[rank - 1].value != 1 && x.dims[rank - 1].value != 2))
    return node.Invalid("input 0 '", InputName(node, 0), "' has shape ", x.ToString(),
                        "; expected [..., signal dims..., 1 or 2]");
  const Tensor* axis_input = nullptr;
  if (node.opset() >= 20 && Present(ctx, 2)) {
    axis_input = ctx.input_constant(2);
    if (!axis_input) {
      ctx.SetOutputType(0, TensorOfRank(x.elem, rank));
      return Status::Ok();
    }
  }
  ONYX_ASSIGN_OR_RETURN(const int64_t axis, DftAxis(node, rank, axis_input));
  const bool inverse = node.attr_int("inverse", 0) != 0;
  const bool onesided = node.attr_int("onesided", 0) != 0;
  Dim n;
  int64_t len = 0;
  if (Present(ctx, 1)) {
    if (ConstantScalarInt(ctx, 1, &len)) {
      if (len < 1) return node.Invalid("dft_length must be >= 1, got ", len);
      n = Dim::Known(len);
    }
  } else if (x.dims[axis].known()) {
    int64_t twice = 0;  // a declared dim near INT64_MAX overflows: leave the length unknown
    if (!(inverse && onesided))
      n = x.dims[axis];
    else if (CheckedMul(2, x.dims[axis].value - 1, &twice))
      n = Dim::Known(twice);
  } else if (!(inverse && onesided)) {
    n = x.dims[axis];
  }
  TypeInfo out = x;
  out.dims[axis] = (!inverse && onesided) ? (n.known() ? Dim::Known(n.value / 2 + 1) : Dim()) : n;
  out.dims[rank - 1] = Dim::Known(inverse && onesided ? 1 : 2);
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

Status DftKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  if (rank < 2 || (x.dim(rank - 1) != 1 && x.dim(rank - 1) != 2))
    return node.Invalid("input 0 '", InputName(node, 0), "' has shape ", ShapeToString(x.shape()),
                        "; expected [..., signal dims..., 1 or 2]");
  if (std::find(kFloatTypes.begin(), kFloatTypes.end(), x.dtype()) == kFloatTypes.end())
    return node.NotSupported("input 0 '", InputName(node, 0), "' has type ", DTypeName(x.dtype()));
  const Tensor* axis_input = node.opset() >= 20 && Present(ctx, 2) ? &ctx.input(2) : nullptr;
  ONYX_ASSIGN_OR_RETURN(const int64_t axis, DftAxis(node, rank, axis_input));
  const bool inverse = node.attr_int("inverse", 0) != 0;
  const bool onesided = node.attr_int("onesided", 0) != 0;
  const int64_t axis_len = x.dim(axis);
  int64_t n = axis_len;
  if (Present(ctx, 1)) {
    ONYX_ASSIGN_OR_RETURN(n, ScalarInt(node, 1, ctx.input(1)));
  } else if (inverse && onesided && !CheckedMul(2, axis_len - 1, &n)) {
    // An empty input may have a signal axis near INT64_MAX.
    return node.Invalid("input 0 '", InputName(node, 0), "' has shape ", ShapeToString(x.shape()),
                        "; 2 * (", axis_len, " - 1) output samples overflow int64");
  }
  if (n < 1)
    return node.Invalid("dft_length must be >= 1, got ", n, " (input 0 shape ",
                        ShapeToString(x.shape()), ")");
  Shape y_shape = x.shape();
  y_shape[axis] = (!inverse && onesided) ? n / 2 + 1 : n;
  y_shape[rank - 1] = inverse && onesided ? 1 : 2;
  Tensor y = ctx.Output(0, x.dtype(), y_shape);
  // An empty output may have huge other dims (their product overflows) and a huge dft_length
  // (the transform's buffer): nothing to compute.
  if (y.numel() == 0) return Status::Ok();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < rank - 1; ++d) inner *= x.dim(d);
  reference::Dft(x, outer, axis_len, inner, n, inverse, onesided, y);
  return Status::Ok();
}

Status InferStft(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kFloatTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, {DType::kInt32, DType::kInt64}));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 2, kFloatTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 3, {DType::kInt32, DType::kInt64}));
  const TypeInfo& x = ctx.input_type(0);
  if (!x.is_tensor()) return Status::Ok();
  if (x.has_shape && x.rank() != 3)
    return node.Invalid("input 0 '", InputName(node, 0), "' has shape ", x.ToString(),
                        "; expected [batch, signal_length, 1 or 2]");
  TypeInfo out = TensorOfRank(x.elem, 4);
  out.dims[3] = Dim::Known(2);
  if (x.has_shape) out.dims[0] = x.dims[0];
  // frame_length: input 3, else the window's length, else the signal length.
  int64_t frame_length = -1, step = -1;
  if (Present(ctx, 3)) {
    if (!ConstantScalarInt(ctx, 3, &frame_length)) frame_length = -1;
  } else if (Present(ctx, 2) && ctx.input_type(2).has_shape && ctx.input_type(2).rank() == 1 &&
             ctx.input_type(2).dims[0].known()) {
    frame_length = ctx.input_type(2).dims[0].value;
  } else if (!Present(ctx, 2) && x.has_shape && x.dims[1].known()) {
    frame_length = x.dims[1].value;
  }
  const bool onesided = node.attr_int("onesided", 1) != 0;
  if (frame_length > 0) out.dims[2] = Dim::Known(onesided ? frame_length / 2 + 1 : frame_length);
  if (ConstantScalarInt(ctx, 1, &step) && step > 0 && frame_length > 0 && x.has_shape &&
      x.dims[1].known() && x.dims[1].value >= frame_length) {
    out.dims[1] = Dim::Known(1 + (x.dims[1].value - frame_length) / step);
  }
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

Status StftKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  if (x.rank() != 3 || (x.dim(2) != 1 && x.dim(2) != 2))
    return node.Invalid("input 0 '", InputName(node, 0), "' has shape ", ShapeToString(x.shape()),
                        "; expected [batch, signal_length, 1 or 2]");
  if (!IsFloatingPoint(x.dtype()))
    return node.NotSupported("input 0 '", InputName(node, 0), "' has type ", DTypeName(x.dtype()));
  ONYX_ASSIGN_OR_RETURN(const int64_t step, ScalarInt(node, 1, ctx.input(1)));
  if (step < 1)
    return node.Invalid("input 1 '", InputName(node, 1), "' (frame_step) must be >= 1, got ", step);
  const Tensor* window = Present(ctx, 2) ? &ctx.input(2) : nullptr;
  if (window && window->rank() != 1)
    return node.Invalid("input 2 '", InputName(node, 2), "' has shape ",
                        ShapeToString(window->shape()), "; expected rank 1");
  int64_t frame_length = window ? window->dim(0) : x.dim(1);
  if (Present(ctx, 3)) {
    ONYX_ASSIGN_OR_RETURN(frame_length, ScalarInt(node, 3, ctx.input(3)));
    if (window && window->dim(0) != frame_length)
      return node.Invalid("input 2 '", InputName(node, 2), "' has length ", window->dim(0),
                          " but frame_length is ", frame_length);
  }
  if (frame_length < 1 || frame_length > x.dim(1))
    return node.Invalid("frame_length ", frame_length, " must be in [1, signal_length = ", x.dim(1),
                        "]");
  const bool onesided = node.attr_int("onesided", 1) != 0;
  const int64_t frames = 1 + (x.dim(1) - frame_length) / step;
  const int64_t bins = onesided ? frame_length / 2 + 1 : frame_length;
  Tensor y = ctx.Output(0, x.dtype(), {x.dim(0), frames, bins, 2});
  reference::Stft(x, step, window, frame_length, y);
  return Status::Ok();
}

// ======================= Windows / MelWeightMatrix =======================

const std::vector<DType> kWindowOutputTypes = kNumericTypes;

StatusOr<DType> OutputDatatype(const NodeView& node) {
  const int64_t v = node.attr_int("output_datatype", static_cast<int64_t>(DType::kFloat));
  const DType t = static_cast<DType>(v);
  if (!IsKnownDType(static_cast<int32_t>(v)) ||
      std::find(kWindowOutputTypes.begin(), kWindowOutputTypes.end(), t) ==
          kWindowOutputTypes.end())
    return node.NotSupported("attribute 'output_datatype' = ", v, " is not a supported type");
  return t;
}

Status InferWindow(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, {DType::kInt32, DType::kInt64}));
  ONYX_ASSIGN_OR_RETURN(DType t, OutputDatatype(ctx.node()));
  int64_t size = 0;
  TypeInfo out = TensorOfRank(t, 1);
  if (ConstantScalarInt(ctx, 0, &size) && size >= 0) out.dims[0] = Dim::Known(size);
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

template <reference::WindowKind kKind>
Status WindowKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(DType t, OutputDatatype(node));
  ONYX_ASSIGN_OR_RETURN(const int64_t size, ScalarInt(node, 0, ctx.input(0)));
  if (size < 0)
    return node.Invalid("input 0 '", InputName(node, 0), "' (size) must be >= 0, got ", size);
  Tensor y = ctx.Output(0, t, {size});
  reference::Window(kKind, node.attr_int("periodic", 1) != 0, y);
  return Status::Ok();
}

Status InferMelWeightMatrix(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, {DType::kInt32, DType::kInt64}));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, {DType::kInt32, DType::kInt64}));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 2, {DType::kInt32, DType::kInt64}));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 3, kFloatTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 4, kFloatTypes));
  ONYX_ASSIGN_OR_RETURN(DType t, OutputDatatype(ctx.node()));
  TypeInfo out = TensorOfRank(t, 2);
  int64_t v = 0;
  if (ConstantScalarInt(ctx, 1, &v) && v >= 0) out.dims[0] = Dim::Known(v / 2 + 1);
  if (ConstantScalarInt(ctx, 0, &v) && v >= 0) out.dims[1] = Dim::Known(v);
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

Status MelWeightMatrixKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(DType t, OutputDatatype(node));
  ONYX_ASSIGN_OR_RETURN(const int64_t num_mel_bins, ScalarInt(node, 0, ctx.input(0)));
  ONYX_ASSIGN_OR_RETURN(const int64_t dft_length, ScalarInt(node, 1, ctx.input(1)));
  ONYX_ASSIGN_OR_RETURN(const int64_t sample_rate, ScalarInt(node, 2, ctx.input(2)));
  ONYX_ASSIGN_OR_RETURN(const double lower, ScalarFloat(node, 3, ctx.input(3)));
  ONYX_ASSIGN_OR_RETURN(const double upper, ScalarFloat(node, 4, ctx.input(4)));
  if (num_mel_bins < 0 || dft_length < 1 || sample_rate <= 0)
    return node.Invalid("num_mel_bins (", num_mel_bins, "), dft_length (", dft_length,
                        ") and sample_rate (", sample_rate, ") must be positive");
  if (!(lower >= 0) || !(upper >= lower))
    return node.Invalid("lower_edge_hertz (", lower, ") and upper_edge_hertz (", upper,
                        ") must satisfy 0 <= lower <= upper");
  Tensor y = ctx.Output(0, t, {dft_length / 2 + 1, num_mel_bins});
  reference::MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower, upper, y);
  return Status::Ok();
}

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

void RegisterImageSignal(OpRegistry& r) {
  // Resize: 10 (X, scales; asymmetric), 11 (roi, sizes, coordinate modes, cubic), 13 (optional
  // roi/scales, bfloat16 via 19), 18 (antialias, axes, keep_aspect_ratio_policy),
  // 19 (half_pixel_symmetric).
  for (auto [since, until] : std::vector<std::pair<int64_t, int64_t>>{
           {10, 10}, {11, 12}, {13, 17}, {18, 18}, {19, kLatestOpset}}) {
    r.Add("", "Resize", since, until, InferResize, ResizeKernel);
  }
  // Upsample: scales attribute (7), scales input (9); deprecated since 10.
  r.Add("", "Upsample", 7, 8, InferResize, ResizeKernel);
  r.Add("", "Upsample", 9, 9, InferResize, ResizeKernel);
  // GridSample: 16 (4-D, bilinear/bicubic), 20 (N-d, linear/cubic), 22 (bfloat16).
  r.Add("", "GridSample", 16, 19, InferGridSample, GridSampleKernel);
  r.Add("", "GridSample", 20, 21, InferGridSample, GridSampleKernel);
  r.Add("", "GridSample", 22, kLatestOpset, InferGridSample, GridSampleKernel);
  r.Add("", "AffineGrid", 20, kLatestOpset, InferAffineGrid, AffineGridKernel);
  // DFT: 17 (axis attribute), 20 (axis input).
  r.Add("", "DFT", 17, 19, InferDft, DftKernel);
  r.Add("", "DFT", 20, kLatestOpset, InferDft, DftKernel);
  r.Add("", "STFT", 17, kLatestOpset, InferStft, StftKernel);
  r.Add("", "HannWindow", 17, kLatestOpset, InferWindow,
        WindowKernel<reference::WindowKind::kHann>);
  r.Add("", "HammingWindow", 17, kLatestOpset, InferWindow,
        WindowKernel<reference::WindowKind::kHamming>);
  r.Add("", "BlackmanWindow", 17, kLatestOpset, InferWindow,
        WindowKernel<reference::WindowKind::kBlackman>);
  r.Add("", "MelWeightMatrix", 17, kLatestOpset, InferMelWeightMatrix, MelWeightMatrixKernel);
  r.Add("", "NonMaxSuppression", 10, 10, InferNonMaxSuppression, NonMaxSuppressionKernel);
  r.Add("", "NonMaxSuppression", 11, kLatestOpset, InferNonMaxSuppression, NonMaxSuppressionKernel);
}

}  // namespace onyx::kernels
