// What the block-sparse kernels (sparse_conv_kernel.cc, sparse_matmul_kernel.cc) share: the
// plan-time decision whether a constant weight is sparse enough, its packing through the
// session's WeightCache, the padded bias and the split of a product among threads.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "kernels/common/fast_kernel.h"
#include "kernels/common/simd_kernels.h"
#include "kernels/kernel.h"
#include "kernels/node_view.h"
#include "kernels/weight_cache.h"
#include "onyx/status.h"
#include "onyx/tensor.h"

namespace onyx::kernels::common {

// The fraction of all-zero blocks (16 or 32 output channels at one input channel) from which the
// block-sparse product beats the dense kernels; measured in docs/sparsity.md.
constexpr double kMinZeroBlocks = 0.45;
constexpr double kMinZeroBlocks32 = 0.40;
// The threshold for `block`-wide blocks, or ONYX_SPARSE_MIN_ZERO_BLOCKS (a fraction) where set:
// for measuring the thresholds again (bench/sparse_layers.py) on another CPU.
double MinZeroBlocks(int64_t block = kSparseBlock);
// How much faster a stored 32-block is than two stored 16-blocks (one broadcast shared by two
// vectors): 32-blocks are taken where they leave fewer than this many times the stored weights
// of 16-blocks (docs/sparsity.md).
constexpr double kBlock32Speedup = 1.25;

// The fraction of W's blocks of `block` output channels that are all zero; W(co, ci) =
// w[co * m_stride + ci * k_stride].
double ZeroBlockFraction(const float* w, int64_t m, int64_t k, int64_t m_stride, int64_t k_stride,
                         int64_t block = kSparseBlock);

// The block width for W: 32 where M > 16 and its 32-blocks reach their threshold and cost less
// than its 16-blocks (weights pruned in 32s), else 16 where those reach theirs, else 0. `zero` is
// set to the fraction of zero blocks of the width returned (of 16-blocks for 0).
int64_t SparseBlockFor(const float* w, int64_t m, int64_t k, int64_t m_stride, int64_t k_stride,
                       double* zero);

// W packed by PackBlockSparse in SparseBlockFor's width (shared through `cache` when given);
// NotSupported naming the fraction when no width reaches its threshold.
StatusOr<std::shared_ptr<const BlockSparseWeights>> SparseWeightsIfWorthIt(
    const NodeView& node, const Tensor& w, int64_t m, int64_t k, int64_t m_stride, int64_t k_stride,
    WeightCache* cache);

// b[0, m) followed by zeros up to whole blocks (all zeros for a null b); null when out of memory.
hwy::AlignedFreeUniquePtr<float[]> PaddedBias(const float* b, int64_t m);

// BlockSparseGemmF32 over all `rows` and blocks, split into chunks of rows and, where there are
// too few rows for the threads, groups of blocks.
void RunBlockSparse(const BlockSparseGemmArgs& args, int64_t rows, int threads);

// What both block-sparse kernels hold and do: y = act(x W^T + bias + z), with W packed at
// creation, input 2 the bias ([M]) and input 3 the residual z (the output's shape), Relu and
// Clip applied in the loop and other fused activations over the finished output.
class BlockSparseProduct {
 public:
  // At creation: the node's fused activation, W (M output channels by K, W(co, ci) =
  // w[co * m_stride + ci * k_stride]; NotSupported below the threshold) and the bias when it is
  // constant or absent. `bias_error` is the message for a bias of the wrong size.
  Status Init(const NodeView& node, const std::vector<TypeInfo>& types,
              const KernelCreateInfo& info, const Tensor& w, int64_t m, int64_t k, int64_t m_stride,
              int64_t k_stride, const char* bias_error);
  // Per run: `rows` rows of x, `lda` floats apart, into output 0 of shape `y_shape`.
  Status Run(KernelContext& ctx, const float* x, int64_t lda, int64_t rows,
             const Shape& y_shape) const;

  int64_t block() const { return weights_->block; }
  // Whether the bias was taken at creation (input 2 may then be released).
  bool bias_packed() const { return bias_packed_; }

 private:
  BlockSparseGemmArgs args_;  // activation and dense W's strides; the pointers are set per run
  std::shared_ptr<const BlockSparseWeights> weights_;
  hwy::AlignedFreeUniquePtr<float[]> bias_;  // padded constant (or absent) bias
  bool bias_packed_ = false;
  int64_t m_ = 0;
  const char* bias_error_ = "";
  LoopActivation loop_act_;  // Relu/Clip in the vector loop, any other over the output
};

}  // namespace onyx::kernels::common
