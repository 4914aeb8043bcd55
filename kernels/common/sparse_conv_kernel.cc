// Block-sparse 1x1 convolution on channels-last activations: com.onyx NhwcConv with a 1x1 filter,
// one group, no padding and a constant W whose blocks of 32 or 16 output channels at one input
// channel are mostly all zero (a model pruned with `onyx prune --block 32|16`). The kernel
// measures that fraction when it is created and takes the node only above the width's threshold
// (SparseBlockFor); below, the dense kernels behind it are faster (docs/sparsity.md).
#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "kernels/common/fast_kernel.h"
#include "kernels/common/simd_kernels.h"
#include "kernels/common/sparse_kernels.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/conv_pool.h"
#include "kernels/reference/fused.h"
#include "kernels/weight_cache.h"

namespace onyx::kernels::common {
namespace {

using AlignedFloats = hwy::AlignedFreeUniquePtr<float[]>;

class SparseConvKernel : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>& types,
                                                  const KernelCreateInfo& info) {
    if (!info.sparse) return node.NotSupported("sparse kernels disabled (sparse_kernels)");
    const Tensor* w = info.constants.size() > 1 ? info.constants[1] : nullptr;
    if (!w) return node.NotSupported("W is not constant");
    auto k = std::unique_ptr<SparseConvKernel>(new SparseConvKernel());
    ONYX_RETURN_IF_ERROR(k->Init(node, types, info, *w));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  std::string variant() const override { return "block" + std::to_string(product_.block()); }
  bool packed_input(size_t i) const override { return i == 2 && product_.bias_packed(); }

  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DType::kFloat || x.shape() != x_shape_ || ctx.input(1).shape() != w_shape_)
      return node.Fail("input shapes changed after planning");
    // A strided 1x1 convolution reads every stride-th pixel: gathered contiguous first.
    AlignedFloats gathered;
    const float* xd = x.data<float>();
    if (stride_h_ != 1 || stride_w_ != 1) {
      gathered = hwy::AllocateAligned<float>(static_cast<size_t>(rows_ * channels_));
      if (!gathered) return node.Fail("out of memory for the strided input");
      const int64_t out_h = y_shape_[1], out_w = y_shape_[2], in_h = x_shape_[1],
                    in_w = x_shape_[2];
      ParallelFor(rows_, channels_, ctx.intra_op_threads(), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t n = r / (out_h * out_w), oy = r / out_w % out_h, ox = r % out_w;
          const float* src = xd + ((n * in_h + oy * stride_h_) * in_w + ox * stride_w_) * channels_;
          std::copy(src, src + channels_, gathered.get() + r * channels_);
        }
      });
      xd = gathered.get();
    }
    return product_.Run(ctx, xd, channels_, rows_, y_shape_);
  }

 private:
  Status Init(const NodeView& node, const std::vector<TypeInfo>& types,
              const KernelCreateInfo& info, const Tensor& w) {
    x_shape_ = types[0].static_shape();
    w_shape_ = types[1].static_shape();
    ONYX_ASSIGN_OR_RETURN(WindowGeometry g,
                          ResolveWindow(node, {x_shape_[1], x_shape_[2]}, {1, 1}, false));
    channels_ = x_shape_[3];
    out_channels_ = w_shape_[0];
    stride_h_ = g.strides[0];
    stride_w_ = g.strides[1];
    y_shape_ = {x_shape_[0], g.out[0], g.out[1], out_channels_};
    rows_ = x_shape_[0] * g.out[0] * g.out[1];

    return product_.Init(node, types, info, w, out_channels_, channels_, channels_, 1,
                         "input 2 (B) must have M elements");
  }

  Shape x_shape_, w_shape_, y_shape_;
  int64_t channels_ = 0, out_channels_ = 0, rows_ = 0, stride_h_ = 1, stride_w_ = 1;
  BlockSparseProduct product_;
};

Status SparseConvSupports(const NodeView& node, const std::vector<TypeInfo>& types) {
  if (types.size() < 2 || !IsFloatStatic(types[0]) || !IsFloatStatic(types[1]))
    return node.NotSupported("needs float32 X and W with static shapes");
  const Shape x = types[0].static_shape(), w = types[1].static_shape();
  if (x.size() != 4 || w.size() != 4) return node.NotSupported("needs 2-D spatial input");
  if (w[2] != 1 || w[3] != 1) return node.NotSupported("not a 1x1 filter");
  if (node.attr_int("group", 1) != 1 || w[1] != x[3])
    return node.NotSupported("needs one group and W [M, C, 1, 1]");
  for (int64_t d : x)
    if (d == 0) return node.NotSupported("empty input");
  ONYX_ASSIGN_OR_RETURN(WindowGeometry g, ResolveWindow(node, {x[1], x[2]}, {1, 1}, false));
  for (int i = 0; i < 2; ++i)
    if (g.pad_begin[i] != 0 || g.pad_end[i] != 0) return node.NotSupported("needs no padding");
  if (g.out[0] <= 0 || g.out[1] <= 0) return node.NotSupported("empty output");
  if (Present(types, 2) && !(IsFloatStatic(types[2]) && types[2].static_shape() == Shape{w[0]}))
    return node.NotSupported("bias must be float32 [M]");
  if (Present(types, 3) && !(IsFloatStatic(types[3]) &&
                             types[3].static_shape() == Shape{x[0], g.out[0], g.out[1], w[0]}))
    return node.NotSupported("residual must be float32 with the output's shape");
  return ParseFusedActivation(node).status();
}

}  // namespace

KernelImpl BlockSparseConvKernel() {
  KernelImpl impl;
  impl.name = "NhwcConv_f32_sparse";
  impl.isa = HighwayIsa();
  impl.supports = SparseConvSupports;
  // Work is split per run by the run's thread count: one kernel serves every count.
  impl.create_with_info = SparseConvKernel::Create;
  return impl;
}

}  // namespace onyx::kernels::common
