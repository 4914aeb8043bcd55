// Resize (10, 11, 13, 18, 19) and Upsample (7, 9): the ONNX Resize rules resolved into per-axis
// scales and an output shape, at plan time where the inputs are constant.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/op_registry.h"
#include "kernels/ops/image_signal_helpers.h"

namespace onyx::kernels {
namespace {

using namespace image_signal_ops;
using reference::ResizeCoordinateMode;
using reference::ResizeMode;
using reference::ResizeNearestMode;
using reference::ResizeParams;

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

}  // namespace

void RegisterResize(OpRegistry& r) {
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
}

}  // namespace onyx::kernels
