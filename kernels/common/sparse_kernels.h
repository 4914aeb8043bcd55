// What the block-sparse kernels (sparse_conv_kernel.cc, sparse_matmul_kernel.cc) share: the
// plan-time decision whether a constant weight is sparse enough, its packing through the
// session's WeightCache, the padded bias and the split of a product among threads.
#pragma once

#include <cstdint>
#include <memory>

#include "hwy/aligned_allocator.h"
#include "kernels/common/simd_kernels.h"
#include "kernels/node_view.h"
#include "kernels/weight_cache.h"
#include "onyx/status.h"
#include "onyx/tensor.h"

namespace onyx::kernels::common {

// The fraction of all-zero blocks (kSparseBlock output channels at one input channel) from which
// the block-sparse product beats the dense kernels; measured in docs/sparsity.md.
constexpr double kMinZeroBlocks = 0.45;
// kMinZeroBlocks, or ONYX_SPARSE_MIN_ZERO_BLOCKS (a fraction) where set: for measuring the
// threshold again (bench/sparse_layers.py) on another CPU.
double MinZeroBlocks();

// The fraction of W's blocks that are all zero; W(co, ci) = w[co * m_stride + ci * k_stride].
double ZeroBlockFraction(const float* w, int64_t m, int64_t k, int64_t m_stride, int64_t k_stride);

// W packed by PackBlockSparse (shared through `cache` when given) when ZeroBlockFraction reaches
// kMinZeroBlocks; NotSupported naming the fraction when it does not.
StatusOr<std::shared_ptr<const BlockSparseWeights>> SparseWeightsIfWorthIt(
    const NodeView& node, const Tensor& w, int64_t m, int64_t k, int64_t m_stride, int64_t k_stride,
    WeightCache* cache);

// b[0, m) followed by zeros up to whole blocks (all zeros for a null b); null when out of memory.
hwy::AlignedFreeUniquePtr<float[]> PaddedBias(const float* b, int64_t m);

// BlockSparseGemmF32 over all `rows` and blocks, split into chunks of rows and, where there are
// too few rows for the threads, groups of blocks.
void RunBlockSparse(const BlockSparseGemmArgs& args, int64_t rows, int threads);

}  // namespace onyx::kernels::common
