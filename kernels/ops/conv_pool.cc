// ConvPool family: Conv, ConvTranspose, ConvInteger, QLinearConv, DeformConv, MaxPool,
// AveragePool, LpPool, Global*Pool, MaxUnpool, RoiAlign, MaxRoiPool: shape inference and
// registration. The kernels live in kernels/reference/conv_pool_*.cc.
#include "kernels/reference/conv_pool.h"

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"

namespace onyx::kernels {
namespace {

const std::vector<DType> kFloatTypes = {DType::kFloat, DType::kDouble, DType::kFloat16,
                                        DType::kBFloat16};
const std::vector<DType> kMaxPoolTypes = {DType::kFloat,    DType::kDouble, DType::kFloat16,
                                          DType::kBFloat16, DType::kInt8,   DType::kUInt8};
const std::vector<DType> k8BitTypes = {DType::kUInt8, DType::kInt8};

// Known spatial sizes (dims 2..) of a typed input, or false when any is unknown.
bool StaticSpatial(const TypeInfo& t, std::vector<int64_t>* out) {
  if (!t.has_shape || t.dims.size() < 3) return false;
  out->clear();
  for (size_t i = 2; i < t.dims.size(); ++i) {
    if (!t.dims[i].known()) return false;
    out->push_back(t.dims[i].value);
  }
  return true;
}

// Output type [batch, channels, spatial...]; spatial dims unknown when `spatial` is null.
TypeInfo SpatialOutput(DType elem, const Dim& batch, const Dim& channels, size_t spatial_rank,
                       const std::vector<int64_t>* spatial) {
  TypeInfo out = TypeInfo::Tensor(elem);
  out.has_shape = true;
  out.dims = {batch, channels};
  for (size_t d = 0; d < spatial_rank; ++d)
    out.dims.push_back(spatial ? Dim::Known((*spatial)[d]) : Dim());
  return out;
}

Status ExpectRankAtLeast3(InferContext& ctx, int i) {
  const TypeInfo& t = ctx.input_type(i);
  if (!t.has_shape || t.dims.size() >= 3) return Status::Ok();
  return ctx.node().Invalid("input ", i, " '", ctx.node().node().inputs[i], "' has type ",
                            t.ToString(), "; expected [N, C, spatial...] (rank >= 3)");
}

// The kernel's spatial sizes: kernel_shape, else the weight's dims 2.. when known.
bool KernelFromWeight(InferContext& ctx, int w_index, std::vector<int64_t>* kernel) {
  if (ctx.node().has_attr("kernel_shape")) {
    *kernel = ctx.node().attr_ints("kernel_shape");
    return true;
  }
  return StaticSpatial(ctx.input_type(w_index), kernel);
}

// Conv-like ops: X input x_index, W input w_index, output element type `out`.
Status InferConvLike(InferContext& ctx, int x_index, int w_index, DType out) {
  ONYX_RETURN_IF_ERROR(ExpectRankAtLeast3(ctx, x_index));
  const TypeInfo& x = ctx.input_type(x_index);
  const TypeInfo& w = ctx.input_type(w_index);
  if (!x.has_shape) {
    ctx.SetOutputType(0, TypeInfo::Tensor(out));
    return Status::Ok();
  }
  const size_t rank = x.dims.size() - 2;
  const Dim channels = w.has_shape && !w.dims.empty() ? w.dims[0] : Dim();
  if (w.has_shape && w.dims.size() != x.dims.size()) {
    return ctx.node().Invalid("input ", w_index, " '", ctx.node().node().inputs[w_index],
                              "' has type ", w.ToString(), "; expected rank ", x.dims.size(),
                              " like input ", x_index, " ", x.ToString());
  }
  const int64_t group = ctx.node().attr_int("group", 1);
  if (group < 1) return ctx.node().Invalid("attribute 'group' is ", group, "; expected >= 1");
  // Divide rather than multiply: a hostile group times dim 1 may overflow int64.
  if (w.has_shape && x.dims[1].known() && w.dims[1].known() &&
      (x.dims[1].value % group != 0 || x.dims[1].value / group != w.dims[1].value)) {
    return ctx.node().Invalid("input ", w_index, " '", ctx.node().node().inputs[w_index],
                              "' has type ", w.ToString(),
                              "; expected dim 1 = ", x.dims[1].value / group, " (input ", x_index,
                              " has ", x.dims[1].value, " channels, group ", group, ")");
  }
  // Checked here, not only by the reference kernel: fast kernels take the kernel size from W.
  std::vector<int64_t> w_kernel;
  if (ctx.node().has_attr("kernel_shape") && StaticSpatial(w, &w_kernel) &&
      ctx.node().attr_ints("kernel_shape") != w_kernel) {
    return ctx.node().Invalid("attribute 'kernel_shape' does not match input ", w_index, " '",
                              ctx.node().node().inputs[w_index], "' of type ", w.ToString());
  }
  std::vector<int64_t> in, kernel;
  if (StaticSpatial(x, &in) && KernelFromWeight(ctx, w_index, &kernel)) {
    ONYX_ASSIGN_OR_RETURN(WindowGeometry g, ResolveWindow(ctx.node(), in, kernel, false));
    ctx.SetOutputType(0, SpatialOutput(out, x.dims[0], channels, rank, &g.out));
  } else {
    ctx.SetOutputType(0, SpatialOutput(out, x.dims[0], channels, rank, nullptr));
  }
  return Status::Ok();
}

Status InferConv(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kFloatTypes));
  return InferConvLike(ctx, 0, 1, ctx.input_type(0).elem);
}

Status InferConvInteger(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, k8BitTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, k8BitTypes));
  return InferConvLike(ctx, 0, 1, DType::kInt32);
}

Status InferQLinearConv(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, k8BitTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 3, k8BitTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 7, k8BitTypes));
  return InferConvLike(ctx, 0, 3, ctx.input_type(7).elem);
}

Status InferConvTranspose(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kFloatTypes));
  ONYX_RETURN_IF_ERROR(ExpectRankAtLeast3(ctx, 0));
  const TypeInfo& x = ctx.input_type(0);
  const TypeInfo& w = ctx.input_type(1);
  if (!x.has_shape) {
    ctx.SetOutputType(0, TypeInfo::Tensor(x.elem));
    return Status::Ok();
  }
  const size_t rank = x.dims.size() - 2;
  const int64_t group = ctx.node().attr_int("group", 1);
  if (group < 1) return ctx.node().Invalid("attribute 'group' is ", group, "; expected >= 1");
  Dim channels;
  int64_t m = 0;
  if (w.has_shape && w.dims.size() >= 2 && w.dims[1].known()) {
    if (!CheckedMul(w.dims[1].value, group, &m)) {
      return ctx.node().Invalid("input 1 '", ctx.node().node().inputs[1], "' has type ",
                                w.ToString(), " and group is ", group,
                                ": M = dim 1 * group does not fit 64 bits");
    }
    channels = Dim::Known(m);
  }
  std::vector<int64_t> in, kernel;
  if (StaticSpatial(x, &in) && KernelFromWeight(ctx, 1, &kernel)) {
    ONYX_ASSIGN_OR_RETURN(WindowGeometry g, ResolveConvTransposeWindow(ctx.node(), in, kernel));
    ctx.SetOutputType(0, SpatialOutput(x.elem, x.dims[0], channels, rank, &g.out));
  } else {
    ctx.SetOutputType(0, SpatialOutput(x.elem, x.dims[0], channels, rank, nullptr));
  }
  return Status::Ok();
}

// MaxPool, AveragePool, LpPool: kernel_shape is required. Output 1 (MaxPool's Indices) gets the
// same shape as int64.
Status InferWindowPool(InferContext& ctx, const std::vector<DType>& types, bool ceil_mode) {
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, types));
  ONYX_RETURN_IF_ERROR(ExpectRankAtLeast3(ctx, 0));
  if (!ctx.node().has_attr("kernel_shape")) {
    return ctx.node().Invalid("attribute 'kernel_shape' is required");
  }
  const TypeInfo& x = ctx.input_type(0);
  TypeInfo out = TypeInfo::Tensor(x.elem);
  if (x.has_shape) {
    const size_t rank = x.dims.size() - 2;
    std::vector<int64_t> in;
    if (StaticSpatial(x, &in)) {
      ONYX_ASSIGN_OR_RETURN(
          WindowGeometry g,
          ResolveWindow(ctx.node(), in, ctx.node().attr_ints("kernel_shape"), ceil_mode));
      out = SpatialOutput(x.elem, x.dims[0], x.dims[1], rank, &g.out);
    } else {
      out = SpatialOutput(x.elem, x.dims[0], x.dims[1], rank, nullptr);
    }
  }
  ctx.SetOutputType(0, out);
  if (ctx.num_outputs() > 1 && ctx.has_output(1)) {
    out.elem = DType::kInt64;
    ctx.SetOutputType(1, out);
  }
  return Status::Ok();
}

Status InferMaxPool(InferContext& ctx) {
  return InferWindowPool(ctx, kMaxPoolTypes, true);
}
Status InferMaxPool1(InferContext& ctx) {
  return InferWindowPool(ctx, kFloatTypes, false);
}
Status InferAveragePool(InferContext& ctx) {
  return InferWindowPool(ctx, kFloatTypes, true);
}
Status InferAveragePool1(InferContext& ctx) {
  return InferWindowPool(ctx, kFloatTypes, false);
}

Status InferGlobalPool(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kFloatTypes));
  const TypeInfo& x = ctx.input_type(0);
  TypeInfo out = TypeInfo::Tensor(x.elem);
  if (x.has_shape) {
    if (x.dims.size() < 2) {
      return ctx.node().Invalid("input 0 '", ctx.node().node().inputs[0], "' has type ",
                                x.ToString(), "; expected [N, C, spatial...]");
    }
    out.has_shape = true;
    out.dims = x.dims;
    for (size_t d = 2; d < out.dims.size(); ++d) out.dims[d] = Dim::Known(1);
  }
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

Status InferMaxUnpool(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kFloatTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, {DType::kInt64}));
  ONYX_RETURN_IF_ERROR(ExpectRankAtLeast3(ctx, 0));
  const TypeInfo& x = ctx.input_type(0);
  TypeInfo out = TypeInfo::Tensor(x.elem);
  std::vector<int64_t> given;
  if (ctx.has_input(2)) {
    if (ConstantInts(ctx, 2, &given)) out = TypeInfo::TensorWithShape(x.elem, given);
  } else if (x.has_shape) {
    const size_t rank = x.dims.size() - 2;
    const std::vector<int64_t> kernel = ctx.node().attr_ints("kernel_shape");
    const std::vector<int64_t> strides =
        ctx.node().attr_ints("strides", std::vector<int64_t>(rank, 1));
    const std::vector<int64_t> pads =
        ctx.node().attr_ints("pads", std::vector<int64_t>(2 * rank, 0));
    if (kernel.size() != rank || strides.size() != rank || pads.size() != 2 * rank) {
      return ctx.node().Invalid("attributes kernel_shape/strides/pads must have ", rank, "/", rank,
                                "/", 2 * rank, " values");
    }
    for (size_t d = 0; d < rank; ++d) {
      if (kernel[d] < 1 || strides[d] < 1 || pads[d] < 0 || pads[rank + d] < 0)
        return ctx.node().Invalid("attributes kernel_shape/strides/pads need kernel and stride ",
                                  ">= 1 and pads >= 0; spatial dim ", d, " has ", kernel[d], "/",
                                  strides[d], "/", pads[d], ",", pads[rank + d]);
    }
    out.has_shape = true;
    out.dims = {x.dims[0], x.dims[1]};
    for (size_t d = 0; d < rank; ++d) {
      const Dim& i = x.dims[d + 2];
      if (!i.known()) {
        out.dims.push_back(Dim());
        continue;
      }
      // (in - 1) * stride - pads + kernel; every term is hostile, so each step is checked.
      int64_t v = 0;
      if (__builtin_mul_overflow(i.value - 1, strides[d], &v) ||
          __builtin_add_overflow(v, kernel[d], &v) || __builtin_add_overflow(v, -pads[d], &v) ||
          __builtin_add_overflow(v, -pads[rank + d], &v) || v < 0) {
        return ctx.node().Invalid("spatial dim ", d, " of size ", i.value, " with kernel ",
                                  kernel[d], ", stride ", strides[d], " and pads ", pads[d], "+",
                                  pads[rank + d], " gives no valid output size");
      }
      out.dims.push_back(Dim::Known(v));
    }
  }
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

// RoiAlign: [num_rois, C, output_height, output_width].
Status InferRoiAlign(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kFloatTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 2, {DType::kInt64}));
  const TypeInfo& x = ctx.input_type(0);
  const TypeInfo& rois = ctx.input_type(1);
  const int64_t height = ctx.node().attr_int("output_height", 1);
  const int64_t width = ctx.node().attr_int("output_width", 1);
  if (height < 0 || width < 0)
    return ctx.node().Invalid("attributes output_height/output_width are ", height, "/", width,
                              "; expected sizes >= 0");
  TypeInfo out = TypeInfo::Tensor(x.elem);
  out.has_shape = true;
  out.dims = {rois.has_shape && !rois.dims.empty() ? rois.dims[0] : Dim(),
              x.has_shape && x.dims.size() > 1 ? x.dims[1] : Dim(), Dim::Known(height),
              Dim::Known(width)};
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

// MaxRoiPool: [num_rois, C, pooled_shape...].
Status InferMaxRoiPool(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kFloatTypes));
  const TypeInfo& x = ctx.input_type(0);
  const TypeInfo& rois = ctx.input_type(1);
  TypeInfo out = TypeInfo::Tensor(x.elem);
  out.has_shape = true;
  out.dims = {rois.has_shape && !rois.dims.empty() ? rois.dims[0] : Dim(),
              x.has_shape && x.dims.size() > 1 ? x.dims[1] : Dim()};
  for (int64_t v : ctx.node().attr_ints("pooled_shape")) {
    if (v < 0)
      return ctx.node().Invalid("attribute 'pooled_shape' has the size ", v,
                                "; expected sizes >= 0");
    out.dims.push_back(Dim::Known(v));
  }
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

}  // namespace

void RegisterConvPool(OpRegistry& r) {
  // Conv 1/11/22 differ only in the type list (22 adds bfloat16): one definition.
  r.Add("", "Conv", 1, kLatestOpset, InferConv, ConvKernel, "conv_im2col_gemm");
  r.Add("", "ConvTranspose", 1, kLatestOpset, InferConvTranspose, ConvTransposeKernel,
        "convtranspose_gemm_col2im");
  r.Add("", "ConvInteger", 10, kLatestOpset, InferConvInteger, ConvIntegerKernel);
  r.Add("", "QLinearConv", 10, kLatestOpset, InferQLinearConv, QLinearConvKernel);
  r.Add("", "DeformConv", 19, kLatestOpset, InferConv, DeformConvKernel);
  // MaxPool 1-7 has no Indices output, storage_order or ceil_mode; 8 adds Indices; 10 ceil_mode
  // and dilations; 12 int8/uint8. Attributes absent in older opsets take their defaults.
  r.Add("", "MaxPool", 1, 9, InferMaxPool1, MaxPoolKernel);
  r.Add("", "MaxPool", 10, kLatestOpset, InferMaxPool, MaxPoolKernel);
  // AveragePool: 7 adds count_include_pad, 10 ceil_mode, 19 dilations.
  r.Add("", "AveragePool", 1, 9, InferAveragePool1, AveragePoolKernel);
  r.Add("", "AveragePool", 10, kLatestOpset, InferAveragePool, AveragePoolKernel);
  // LpPool: p is a float in opset 1, an int from 2; 18 adds ceil_mode and dilations.
  r.Add("", "LpPool", 1, 17, InferAveragePool1, LpPoolKernel);
  r.Add("", "LpPool", 18, kLatestOpset, InferAveragePool, LpPoolKernel);
  r.Add("", "GlobalAveragePool", 1, kLatestOpset, InferGlobalPool, GlobalAveragePoolKernel);
  r.Add("", "GlobalMaxPool", 1, kLatestOpset, InferGlobalPool, GlobalMaxPoolKernel);
  r.Add("", "GlobalLpPool", 1, kLatestOpset, InferGlobalPool, GlobalLpPoolKernel);
  r.Add("", "MaxUnpool", 9, kLatestOpset, InferMaxUnpool, MaxUnpoolKernel);
  // RoiAlign 16 adds coordinate_transformation_mode (default half_pixel); 10 behaves as
  // output_half_pixel.
  r.Add("", "RoiAlign", 10, 15, InferRoiAlign, RoiAlign10Kernel);
  r.Add("", "RoiAlign", 16, kLatestOpset, InferRoiAlign, RoiAlign16Kernel);
  r.Add("", "MaxRoiPool", 1, kLatestOpset, InferMaxRoiPool, MaxRoiPoolKernel);
}

}  // namespace onyx::kernels
