// Winograd F(2x2, 3x3) convolution on channels-last activations: com.onyx NhwcConv with a 3x3
// filter, stride 1, no dilation and one group, for the shapes where it beats oneDNN's direct and
// Winograd kernels (WinogradF2Pays). 2.25x fewer multiplications than direct summation; its
// transforms add and subtract only, so rounding stays close to direct summation's (the
// transformed weights are computed in double). Constant weights are transformed once at plan time.
#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "kernels/common/fast_kernel.h"
#include "kernels/common/simd_kernels.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/conv_pool.h"
#include "kernels/reference/fused.h"
#include "kernels/thread_variants.h"
#include "kernels/weight_cache.h"

namespace onyx::kernels::common {
namespace {

using AlignedFloats = hwy::AlignedFreeUniquePtr<float[]>;

// Scratch of the thread running a block; grows to the largest block seen. Null when the
// allocation fails.
float* ThreadScratch(int64_t floats) {
  thread_local AlignedFloats buf;
  thread_local int64_t capacity = 0;
  if (floats > capacity) {
    buf = hwy::AllocateAligned<float>(static_cast<size_t>(floats));
    capacity = buf ? floats : 0;
  }
  return buf.get();
}

// Tiles per block: V and M of a block ([16][tiles][C] and [16][tiles][64] floats) within about
// 384 KiB, so that they stay in L2 between the three passes.
int64_t MaxBlockTiles(int64_t channels) {
  constexpr int64_t kBudgetFloats = 384 * 1024 / 4;
  return std::clamp<int64_t>(kBudgetFloats / (16 * (channels + kWinogradPanel)), 6, 256);
}

class WinogradConvKernel : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>& types,
                                                  const KernelCreateInfo& info) {
    if (!info.winograd) return node.NotSupported("Winograd disabled (SessionOptions::winograd)");
    auto k = std::unique_ptr<WinogradConvKernel>(new WinogradConvKernel());
    ONYX_RETURN_IF_ERROR(k->Init(node, types, info));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  std::string variant() const override { return "winograd"; }
  // W stays an input even when constant: outputs that come out non-finite are recomputed from it.
  bool packed_input(size_t i) const override { return i == 2 && bias_packed_; }

  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DType::kFloat || x.shape() != x_shape_ || ctx.input(1).shape() != w_shape_)
      return node.Fail("input shapes changed after planning");
    WinogradConvArgs a = args_;
    AlignedFloats run_weights;  // transformed here when not constant
    a.weights = weights_.get();
    a.direct_weights = ctx.input(1).data<float>();
    if (!weights_) {
      run_weights = PackWeights(a.direct_weights);
      if (!run_weights) return node.Fail("out of memory for the transformed weights");
      a.weights = run_weights.get();
    }
    AlignedFloats run_bias;
    a.bias = bias_.get();
    if (!bias_packed_) {
      if (ctx.input(2).numel() != a.out_channels)
        return node.Fail("input 2 (B) must have M elements");
      run_bias = PackBias(ctx.input(2).data<float>());
      if (!run_bias) return node.Fail("out of memory for the padded bias");
      a.bias = run_bias.get();
    }
    if (ctx.num_inputs() > 3 && ctx.has_input(3)) {
      if (ctx.input(3).shape() != y_shape_)
        return node.Fail("input 3 (Z) shape changed after planning");
      a.z = ctx.input(3).data<float>();
    }
    Tensor y = ctx.Output(0, DType::kFloat, y_shape_);
    a.x = x.data<float>();
    a.y = y.data<float>();
    // Work items: blocks of tiles x groups of panels. Each computes its own input transform.
    const int64_t items = blocks_ * groups_;
    const int64_t panels = Panels();
    std::atomic<bool> out_of_memory{false};
    ParallelFor(items, item_work_, ctx.intra_op_threads(), [&](int64_t i0, int64_t i1) {
      float* scratch = ThreadScratch(WinogradScratchFloats(a.block_tiles, a.channels));
      if (!scratch) {
        out_of_memory = true;
        return;
      }
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t b = i / groups_, g = i % groups_;
        const int64_t t0 = tiles_ * b / blocks_, t1 = tiles_ * (b + 1) / blocks_;
        const int64_t p0 = panels * g / groups_, p1 = panels * (g + 1) / groups_;
        WinogradConvF32(a, t0, t1, p0, p1, scratch);
      }
    });
    if (out_of_memory) return node.Fail("out of memory for the Winograd scratch buffers");
    loop_act_.ApplyUnary(y.data<float>(), y.numel(), ctx.intra_op_threads());
    return Status::Ok();
  }

 private:
  int64_t Panels() const { return (args_.out_channels + kWinogradPanel - 1) / kWinogradPanel; }

  // Both return null when the allocation fails.
  AlignedFloats PackWeights(const float* w) const {
    const int64_t floats = WinogradPackedFloats(args_.out_channels, args_.channels);
    AlignedFloats packed = hwy::AllocateAligned<float>(static_cast<size_t>(floats));
    if (packed) WinogradPackWeightsF32(w, args_.out_channels, args_.channels, packed.get());
    return packed;
  }
  AlignedFloats PackBias(const float* b) const {
    const int64_t padded = Panels() * kWinogradPanel;
    AlignedFloats packed = hwy::AllocateAligned<float>(static_cast<size_t>(padded));
    if (!packed) return packed;
    std::fill(packed.get(), packed.get() + padded, 0.0f);
    if (b) std::copy(b, b + args_.out_channels, packed.get());
    return packed;
  }

  Status Init(const NodeView& node, const std::vector<TypeInfo>& types,
              const KernelCreateInfo& info) {
    x_shape_ = types[0].static_shape();
    w_shape_ = types[1].static_shape();
    ONYX_ASSIGN_OR_RETURN(WindowGeometry g,
                          ResolveWindow(node, {x_shape_[1], x_shape_[2]}, {3, 3}, false));
    WinogradConvArgs& a = args_;
    a.in_h = x_shape_[1];
    a.in_w = x_shape_[2];
    a.channels = x_shape_[3];
    a.out_h = g.out[0];
    a.out_w = g.out[1];
    a.out_channels = w_shape_[0];
    a.pad_top = g.pad_begin[0];
    a.pad_left = g.pad_begin[1];
    y_shape_ = {x_shape_[0], a.out_h, a.out_w, a.out_channels};

    ONYX_ASSIGN_OR_RETURN(FusedActivation act, ParseFusedActivation(node));
    loop_act_ = SplitLoopActivation(act);
    loop_act_.SetLoop(&a);

    // Blocks of at most MaxBlockTiles tiles, as many as threads at least (when there are that
    // many tiles) and a multiple of them, so that each thread gets the same work. With one
    // block, the panels are split among the threads instead when they divide evenly.
    const int threads = std::max(1, info.threads);
    tiles_ = x_shape_[0] * ((a.out_h + 1) / 2) * ((a.out_w + 1) / 2);
    const int64_t panels = Panels();
    blocks_ = (tiles_ + MaxBlockTiles(a.channels) - 1) / MaxBlockTiles(a.channels);
    groups_ = 1;
    if (blocks_ == 1 && threads > 1 && panels % threads == 0) {
      groups_ = threads;
    } else if (threads > 1) {
      blocks_ = std::min(tiles_, (blocks_ + threads - 1) / threads * threads);
    }
    a.block_tiles = (tiles_ + blocks_ - 1) / blocks_;
    item_work_ = 16 * a.block_tiles * a.channels * kWinogradPanel * panels / groups_;

    const auto constant = [&](size_t i) {
      return i < info.constants.size() ? info.constants[i] : nullptr;
    };
    if (const Tensor* wc = constant(1)) {
      // Shared with the session's other shape specialisations: the transform depends on W and
      // the channel counts only.
      const std::function<std::shared_ptr<const float>()> pack = [&] {
        auto holder = std::make_shared<AlignedFloats>(PackWeights(wc->data<float>()));
        return *holder ? std::shared_ptr<const float>(holder, holder->get()) : nullptr;
      };
      const size_t bytes =
          static_cast<size_t>(WinogradPackedFloats(a.out_channels, a.channels)) * sizeof(float);
      weights_ = info.weights ? info.weights->GetOrPack<float>(
                                    *wc, StrCat("winograd2x2:", a.out_channels, ":", a.channels),
                                    pack, bytes)
                              : pack();
      if (!weights_) return node.Fail("out of memory for the transformed weights");
    }
    if (!Present(types, 2)) {
      bias_ = PackBias(nullptr);
      bias_packed_ = true;
    } else if (const Tensor* bc = constant(2)) {
      if (bc->numel() != a.out_channels) return node.Invalid("input 2 (B) must have M elements");
      bias_ = PackBias(bc->data<float>());
      bias_packed_ = true;
    }
    if (bias_packed_ && !bias_) return node.Fail("out of memory for the padded bias");
    return Status::Ok();
  }

  Shape x_shape_, w_shape_, y_shape_;
  WinogradConvArgs args_;  // geometry, blocking and activation; the pointers are set per run
  int64_t tiles_ = 0, blocks_ = 1, groups_ = 1, item_work_ = 1;
  std::shared_ptr<const float> weights_;  // transformed constant W (shared), or null
  AlignedFloats bias_;                    // padded constant (or absent) B
  bool bias_packed_ = false;
  LoopActivation loop_act_;  // Relu/Clip in the vector loop, any other over the output
};

}  // namespace

// Whether F(2x2, 3x3) should run a convolution of C input and K output channels giving `tiles`
// 2x2 output tiles (over all images) of out_h x out_w maps. Measured per layer in the benchmark
// models against oneDNN 2.6 (its direct kernel, or its F(4x4, 3x3) where WinogradPays in
// conv_onednn.cc takes it) on AVX-512, docs/benchmarks.md:
// - 1.1-1.6x faster on SqueezeNet's, ResNet-50's and Inception's layers with 13x13 maps and up, up
//   to C * K * pixels = 3.7e7.
// - 0.76-0.98x on VGG-19's, all at 5.1e7 and above: there F(4x4, 3x3)'s fewer multiplications pay
//   for its transforms.
// - 0.57-0.8x with K = 32 (DenseNet-121): half of every 64-channel weight panel is zeros.
// - 0.74-0.92x on maps of 7x7 and 6x6 (16 and 9 tiles): the transformed weights are 16/9 the size
//   of the direct ones, and with few tiles to share them, reading them from memory dominates.
bool WinogradF2Pays(int64_t channels, int64_t out_channels, int64_t tiles, int64_t out_h,
                    int64_t out_w) {
  const double macs_per_tap = static_cast<double>(channels) * static_cast<double>(out_channels) *
                              static_cast<double>(out_h) * static_cast<double>(out_w);
  return channels >= 8 && out_channels >= kWinogradPanel && tiles >= 25 && macs_per_tap < 4.5e7;
}

Status WinogradSupports(const NodeView& node, const std::vector<TypeInfo>& types) {
  if (types.size() < 2 || !IsFloatStatic(types[0]) || !IsFloatStatic(types[1]))
    return node.NotSupported("needs float32 X and W with static shapes");
  const Shape x = types[0].static_shape(), w = types[1].static_shape();
  if (x.size() != 4 || w.size() != 4) return node.NotSupported("needs 2-D spatial input");
  if (w[2] != 3 || w[3] != 3) return node.NotSupported("not a 3x3 filter");
  if (node.attr_int("group", 1) != 1 || w[1] != x[3])
    return node.NotSupported("needs one group and W [M, C, 3, 3]");
  for (int64_t d : x)
    if (d == 0) return node.NotSupported("empty input");
  ONYX_ASSIGN_OR_RETURN(WindowGeometry g, ResolveWindow(node, {x[1], x[2]}, {3, 3}, false));
  for (int i = 0; i < 2; ++i)
    if (g.strides[i] != 1 || g.dilations[i] != 1)
      return node.NotSupported("needs stride 1 and no dilation");
  if (g.out[0] <= 0 || g.out[1] <= 0) return node.NotSupported("empty output");
  if (Present(types, 2) && !(IsFloatStatic(types[2]) && types[2].static_shape() == Shape{w[0]}))
    return node.NotSupported("bias must be float32 [M]");
  if (Present(types, 3) && !(IsFloatStatic(types[3]) &&
                             types[3].static_shape() == Shape{x[0], g.out[0], g.out[1], w[0]}))
    return node.NotSupported("residual must be float32 with the output's shape");
  const int64_t tiles = x[0] * ((g.out[0] + 1) / 2) * ((g.out[1] + 1) / 2);
  if (!WinogradF2Pays(x[3], w[0], tiles, g.out[0], g.out[1]))
    return node.NotSupported("direct convolution is faster for this shape");
  return ParseFusedActivation(node).status();
}

KernelImpl WinogradConvHwyKernel() {
  KernelImpl impl;
  impl.name = "NhwcConv_f32_hwy";
  impl.isa = HighwayIsa();
  impl.supports = WinogradSupports;
  // Its blocks are a multiple of the plan's threads: runs on fewer get a kernel made for them.
  impl.create_with_info = WithThreadVariants(WinogradConvKernel::Create);
  return impl;
}

}  // namespace onyx::kernels::common
