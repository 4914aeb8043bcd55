// The channels-last ops the planner's layout pass (planner/layout.cc) places around oneDNN
// convolutions: com.onyx NhwcConv (FusedConv's inputs and attributes on [N, spatial..., C]
// activations), NhwcMaxPool and NhwcAveragePool (MaxPool-12 / AveragePool-19 attributes) and
// NhwcChannelAffine (ChannelAffine with the channels on the last axis) and NhwcLRN (LRN's
// attributes, channels last) and NhwcQLinearConv (QLinearConv's inputs and attributes on
// channels-last 8-bit activations).
#include "kernels/reference/layout.h"

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"
#include "kernels/reference/conv_pool.h"

namespace onyx::kernels {
namespace {

// Output [N, out spatial..., M] from X [N, spatial..., C] and the window; M = `channels`.
Status InferChannelsLast(InferContext& ctx, const std::vector<int64_t>& kernel, int64_t channels,
                         bool ceil_mode, DType out_type = DType::kFloat) {
  const TypeInfo& x = ctx.input_type(0);
  if (!x.is_tensor() || (out_type == DType::kFloat && x.elem != DType::kFloat))
    return ctx.node().Invalid("input 0 (X) must be a float32 tensor");
  if (!x.shape_is_static() || x.rank() < 3) {
    ctx.SetOutputType(0, TypeInfo::Tensor(out_type));
    return Status::Ok();
  }
  const Shape s = x.static_shape();
  std::vector<int64_t> in(s.begin() + 1, s.end() - 1);
  ONYX_ASSIGN_OR_RETURN(WindowGeometry g, ResolveWindow(ctx.node(), in, kernel, ceil_mode));
  Shape out = {s[0]};
  out.insert(out.end(), g.out.begin(), g.out.end());
  out.push_back(channels < 0 ? s.back() : channels);
  ctx.SetOutputType(0, TypeInfo::TensorWithShape(out_type, out));
  return Status::Ok();
}

// Y has y_zero_point's type (input 7), channels last.
Status InferNhwcQLinearConv(InferContext& ctx) {
  const TypeInfo& x = ctx.input_type(0);
  const TypeInfo& w = ctx.input_type(3);
  const TypeInfo& yz = ctx.input_type(7);
  if (!x.is_tensor() || !Is8BitInt(x.elem) || !yz.is_tensor() || !Is8BitInt(yz.elem))
    return ctx.node().Invalid("inputs 0 (x) and 7 (y_zero_point) must be 8-bit tensors");
  if (!w.shape_is_static() || w.rank() < 3) {
    ctx.SetOutputType(0, TypeInfo::Tensor(yz.elem));
    return Status::Ok();
  }
  const Shape ws = w.static_shape();
  return InferChannelsLast(ctx, std::vector<int64_t>(ws.begin() + 2, ws.end()), ws[0], false,
                           yz.elem);
}

Status InferNhwcConv(InferContext& ctx) {
  const TypeInfo& w = ctx.input_type(1);
  if (!w.shape_is_static() || w.rank() < 3) {
    ctx.SetOutputType(0, TypeInfo::Tensor(DType::kFloat));
    return Status::Ok();
  }
  const Shape ws = w.static_shape();
  return InferChannelsLast(ctx, std::vector<int64_t>(ws.begin() + 2, ws.end()), ws[0], false);
}

Status InferSameFloat(InferContext& ctx) {
  const TypeInfo& x = ctx.input_type(0);
  if (!x.is_tensor() || x.elem != DType::kFloat)
    return ctx.node().Invalid("input 0 (X) must be a float32 tensor");
  ctx.SetOutputType(0, x);
  return Status::Ok();
}

Status InferNhwcPool(InferContext& ctx) {
  // NhwcMaxPool also takes 8-bit values (quantized models), keeping their type.
  const DType t = ctx.input_type(0).elem;
  const bool int8 = Is8BitInt(t);
  return InferChannelsLast(ctx, ctx.node().attr_ints("kernel_shape"), -1, true,
                           int8 && ctx.node().op_type() == "NhwcMaxPool" ? t : DType::kFloat);
}

}  // namespace

void RegisterLayout(OpRegistry& r) {
  // The residual Z (input 3) may share Y's buffer: each output element reads its Z element
  // before writing it, in the reference loop and in oneDNN's sum post-op alike.
  r.Add("com.onyx", "NhwcConv", 1, kLatestOpset, InferNhwcConv, NhwcConvKernel).inplace_input = 3;
  r.Add("com.onyx", "NhwcMaxPool", 1, kLatestOpset, InferNhwcPool, NhwcMaxPoolKernel);
  r.Add("com.onyx", "NhwcAveragePool", 1, kLatestOpset, InferNhwcPool, NhwcAveragePoolKernel);
  r.Add("com.onyx", "NhwcChannelAffine", 1, kLatestOpset, InferSameFloat, NhwcChannelAffineKernel)
      .inplace_input = 0;
  r.Add("com.onyx", "NhwcLRN", 1, kLatestOpset, InferSameFloat, NhwcLrnKernel);
  r.Add("com.onyx", "NhwcQLinearConv", 1, kLatestOpset, InferNhwcQLinearConv,
        NhwcQLinearConvKernel);
}

}  // namespace onyx::kernels
