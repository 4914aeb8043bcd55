// Depthwise convolution on channels-last activations: com.onyx NhwcConv with group = C = M
// (MobileNet's and ShuffleNet's 3x3 layers), for builds without oneDNN (Arm), where the reference
// kernel would run them. On x86 oneDNN's convolution stays in front: on this project's AVX-512
// machine its brdgmm_dw kernel measured 1.3-2x faster than this loop (loads, not FMAs, bound a
// depthwise tap). Weights are repacked tap-major once at plan time when constant.
#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/fast_kernel.h"
#include "kernels/common/simd_kernels.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/conv_pool.h"
#include "kernels/reference/fused.h"
#include "kernels/weight_cache.h"

namespace onyx::kernels::common {
namespace {

// Channels rounded up so that every vector load of the packed weights stays inside them.
int64_t PaddedChannels(int64_t c) {
  return (c + kDepthwiseChannelPad - 1) / kDepthwiseChannelPad * kDepthwiseChannelPad;
}

// W [C, 1, kh, kw] and B [C] (or none) as [kh * kw][Cp] and [Cp], zero-padded.
std::vector<float> PackWeights(const float* w, int64_t c, int64_t taps) {
  const int64_t cp = PaddedChannels(c);
  std::vector<float> packed(static_cast<size_t>(taps * cp), 0.f);
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t t = 0; t < taps; ++t) packed[t * cp + ch] = w[ch * taps + t];
  return packed;
}
std::vector<float> PackBias(const float* b, int64_t c) {
  std::vector<float> packed(static_cast<size_t>(PaddedChannels(c)), 0.f);
  if (b) std::copy(b, b + c, packed.begin());
  return packed;
}

class DepthwiseConvKernel : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>& types,
                                                  const KernelCreateInfo& info) {
    auto k = std::unique_ptr<DepthwiseConvKernel>(new DepthwiseConvKernel());
    ONYX_RETURN_IF_ERROR(k->Init(node, types, info));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  bool packed_input(size_t i) const override {
    return (i == 1 && weights_) || (i == 2 && bias_packed_);
  }

  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DType::kFloat || x.shape() != x_shape_ || ctx.input(1).shape() != w_shape_)
      return node.Fail("input shapes changed after planning");
    const DepthwiseGeometry& g = args_.geometry;
    const int64_t c = g.channels, taps = g.kernel_h * g.kernel_w;
    std::vector<float> run_weights, run_bias;  // packed here when not constant
    const float* w = weights_ ? weights_->data() : nullptr;
    if (!weights_) {
      run_weights = PackWeights(ctx.input(1).data<float>(), c, taps);
      w = run_weights.data();
    }
    const float* b = bias_.data();
    if (!bias_packed_) {
      const bool has_b = ctx.num_inputs() > 2 && ctx.has_input(2);
      if (has_b && ctx.input(2).numel() != c) return node.Fail("input 2 (B) must have C elements");
      run_bias = PackBias(has_b ? ctx.input(2).data<float>() : nullptr, c);
      b = run_bias.data();
    }
    const float* z = nullptr;
    if (ctx.num_inputs() > 3 && ctx.has_input(3)) {
      if (ctx.input(3).shape() != y_shape_)
        return node.Fail("input 3 (Z) shape changed after planning");
      z = ctx.input(3).data<float>();
    }
    Tensor y = ctx.Output(0, DType::kFloat, y_shape_);
    const int64_t n = x_shape_[0], oh = y_shape_[1], ow = y_shape_[2];
    const int64_t in_image = x.numel() / n, out_row = ow * c;
    // Work items are (image, output row, block of channels); an activation without a register
    // form runs over whole rows afterwards, so then a block is every channel.
    const int64_t block = loop_act_.has_unary ? PaddedChannels(c) : kDepthwiseChannelPad;
    const int64_t blocks = (c + block - 1) / block;
    const float* xd = x.data<float>();
    float* yd = y.data<float>();
    ParallelFor(n * oh * blocks, ow * std::min(c, block) * taps, ctx.intra_op_threads(),
                [&](int64_t i0, int64_t i1) {
                  DepthwiseConvArgs a = args_;
                  a.weights = w;
                  a.bias = b;
                  for (int64_t i = i0; i < i1; ++i) {
                    const int64_t row = i / blocks, image = row / oh;
                    a.oy = row % oh;
                    a.c_begin = (i % blocks) * block;
                    a.c_end = std::min(c, a.c_begin + block);
                    a.x = xd + image * in_image;
                    a.y = yd + row * out_row;
                    a.z = z ? z + row * out_row : nullptr;
                    DepthwiseConvRowF32(a);
                    if (loop_act_.has_unary)
                      UnaryF32(loop_act_.unary, loop_act_.unary_params, a.y, a.y, out_row);
                  }
                });
    return Status::Ok();
  }

 private:
  Status Init(const NodeView& node, const std::vector<TypeInfo>& types,
              const KernelCreateInfo& info) {
    x_shape_ = types[0].static_shape();
    w_shape_ = types[1].static_shape();
    const int64_t c = x_shape_[3];
    ONYX_ASSIGN_OR_RETURN(WindowGeometry g, ResolveWindow(node, {x_shape_[1], x_shape_[2]},
                                                          {w_shape_[2], w_shape_[3]}, false));
    y_shape_ = {x_shape_[0], g.out[0], g.out[1], c};
    DepthwiseGeometry& dg = args_.geometry;
    dg.in_h = x_shape_[1];
    dg.in_w = x_shape_[2];
    dg.channels = c;
    dg.out_w = g.out[1];
    dg.kernel_h = w_shape_[2];
    dg.kernel_w = w_shape_[3];
    dg.stride_h = g.strides[0];
    dg.stride_w = g.strides[1];
    dg.dilation_h = g.dilations[0];
    dg.dilation_w = g.dilations[1];
    dg.pad_top = g.pad_begin[0];
    dg.pad_left = g.pad_begin[1];

    ONYX_ASSIGN_OR_RETURN(FusedActivation act, ParseFusedActivation(node));
    args_.weight_stride = PaddedChannels(c);
    loop_act_ = SplitLoopActivation(act);
    loop_act_.SetLoop(&args_);
    const auto constant = [&](size_t i) {
      return i < info.constants.size() ? info.constants[i] : nullptr;
    };
    if (const Tensor* wc = constant(1)) {
      const int64_t taps = dg.kernel_h * dg.kernel_w;
      // Shared with the session's other shape specialisations (kernels/weight_cache.h).
      const std::function<std::shared_ptr<const std::vector<float>>()> pack = [&] {
        return std::make_shared<const std::vector<float>>(PackWeights(wc->data<float>(), c, taps));
      };
      const size_t bytes = static_cast<size_t>(taps * PaddedChannels(c)) * sizeof(float);
      weights_ = info.weights ? info.weights->GetOrPack<std::vector<float>>(
                                    *wc, StrCat("depthwise:", c, ":", taps), pack, bytes)
                              : pack();
    }
    if (!Present(types, 2)) {
      bias_ = PackBias(nullptr, c);
      bias_packed_ = true;
    } else if (const Tensor* bc = constant(2)) {
      if (bc->numel() != c) return node.Invalid("input 2 (B) must have C elements");
      bias_ = PackBias(bc->data<float>(), c);
      bias_packed_ = true;
    }
    return Status::Ok();
  }

  Shape x_shape_, w_shape_, y_shape_;
  DepthwiseConvArgs args_;  // geometry and activation; the pointers are set per run
  std::shared_ptr<const std::vector<float>> weights_;  // packed constant W (shared), or null
  std::vector<float> bias_;                            // packed constant (or absent) B
  bool bias_packed_ = false;
  LoopActivation loop_act_;  // Relu/Clip in the vector loop, any other over the output
};

Status DepthwiseSupports(const NodeView& node, const std::vector<TypeInfo>& types) {
  if (types.size() < 2 || !IsFloatStatic(types[0]) || !IsFloatStatic(types[1]))
    return node.NotSupported("needs float32 X and W with static shapes");
  const Shape x = types[0].static_shape(), w = types[1].static_shape();
  if (x.size() != 4 || w.size() != 4) return node.NotSupported("needs 2-D spatial input");
  const int64_t c = x[3];
  if (node.attr_int("group", 1) != c || w[0] != c || w[1] != 1)
    return node.NotSupported("not depthwise (group = C = M)");
  for (int64_t d : x)
    if (d == 0) return node.NotSupported("empty input");
  if (Present(types, 2) && !(IsFloatStatic(types[2]) && types[2].static_shape() == Shape{c}))
    return node.NotSupported("bias must be float32 [C]");
  if (Present(types, 3) && !IsFloatStatic(types[3]))
    return node.NotSupported("residual must be a float32 tensor of static shape");
  ONYX_ASSIGN_OR_RETURN(WindowGeometry g, ResolveWindow(node, {x[1], x[2]}, {w[2], w[3]}, false));
  if (g.out[0] <= 0 || g.out[1] <= 0) return node.NotSupported("empty output");
  if (Present(types, 3) && types[3].static_shape() != Shape{x[0], g.out[0], g.out[1], c})
    return node.NotSupported("residual must have the output's shape");
  return ParseFusedActivation(node).status();
}

}  // namespace

KernelImpl DepthwiseConvHwyKernel() {
  KernelImpl impl;
  impl.name = "NhwcConv_f32_dw_hwy";
  impl.isa = HighwayIsa();
  impl.supports = DepthwiseSupports;
  impl.create_with_info = DepthwiseConvKernel::Create;
  return impl;
}

}  // namespace onyx::kernels::common
