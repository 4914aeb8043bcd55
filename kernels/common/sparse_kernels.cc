#include "kernels/common/sparse_kernels.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>

#include "kernels/op_helpers.h"

namespace onyx::kernels::common {

double ZeroBlockFraction(const float* w, int64_t m, int64_t k, int64_t m_stride, int64_t k_stride) {
  const int64_t blocks = (m + kSparseBlock - 1) / kSparseBlock;
  if (blocks == 0 || k == 0) return 0.0;
  int64_t zero = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t c1 = std::min(m, (b + 1) * kSparseBlock);
    for (int64_t ci = 0; ci < k; ++ci) {
      bool all_zero = true;
      for (int64_t co = b * kSparseBlock; co < c1 && all_zero; ++co)
        all_zero = w[co * m_stride + ci * k_stride] == 0.0f;
      zero += all_zero;
    }
  }
  return static_cast<double>(zero) / static_cast<double>(blocks * k);
}

double MinZeroBlocks() {
  static const double threshold = [] {
    const char* env = std::getenv("ONYX_SPARSE_MIN_ZERO_BLOCKS");
    return env && *env ? std::atof(env) : kMinZeroBlocks;
  }();
  return threshold;
}

StatusOr<std::shared_ptr<const BlockSparseWeights>> SparseWeightsIfWorthIt(
    const NodeView& node, const Tensor& w, int64_t m, int64_t k, int64_t m_stride, int64_t k_stride,
    WeightCache* cache) {
  const float* wd = w.data<float>();
  const double zero = ZeroBlockFraction(wd, m, k, m_stride, k_stride);
  if (zero < MinZeroBlocks())
    return node.NotSupported("W has ", static_cast<int>(zero * 100),
                             "% zero blocks of 16 output channels, below the ",
                             static_cast<int>(MinZeroBlocks() * 100), "% where it pays");
  const std::function<std::shared_ptr<const BlockSparseWeights>()> pack = [&] {
    auto p = std::make_shared<BlockSparseWeights>(PackBlockSparse(wd, m, k, m_stride, k_stride));
    return p->values ? std::shared_ptr<const BlockSparseWeights>(p) : nullptr;
  };
  const int64_t entries = static_cast<int64_t>((1.0 - zero) * static_cast<double>(k)) *
                          ((m + kSparseBlock - 1) / kSparseBlock);
  const size_t bytes = static_cast<size_t>(entries) * (kSparseBlock * sizeof(float) + 4);
  std::shared_ptr<const BlockSparseWeights> packed =
      cache ? cache->GetOrPack<BlockSparseWeights>(
                  w, StrCat("block16:", m, ":", k, ":", m_stride, ":", k_stride), pack, bytes)
            : pack();
  if (!packed) return node.Fail("out of memory for the block-sparse weights");
  return packed;
}

hwy::AlignedFreeUniquePtr<float[]> PaddedBias(const float* b, int64_t m) {
  const int64_t padded = std::max<int64_t>(1, (m + kSparseBlock - 1) / kSparseBlock) * kSparseBlock;
  auto p = hwy::AllocateAligned<float>(static_cast<size_t>(padded));
  if (!p) return p;
  std::fill(p.get(), p.get() + padded, 0.0f);
  if (b) std::copy(b, b + m, p.get());
  return p;
}

void RunBlockSparse(const BlockSparseGemmArgs& args, int64_t rows, int threads) {
  const BlockSparseWeights& w = *args.w;
  const int64_t blocks = w.blocks();
  // Chunks of four to seven groups of 12 rows (whole register tiles on every target): a chunk's
  // rows stay in L2 while the blocks go past them (BlockSparseGemmF32), and each chunk reads all
  // of W, so there is no chunk of a few rows at the end, and only the last tile is partial.
  constexpr int64_t kGroup = 12, kGroupsPerChunk = 4;
  const int64_t row_groups = (rows + kGroup - 1) / kGroup;
  const int64_t chunks = std::max<int64_t>(1, row_groups / kGroupsPerChunk);
  const auto chunk_row = [&](int64_t c) {
    return std::min(rows, row_groups * c / chunks * kGroup);
  };
  int64_t groups = 1;
  if (threads > 1 && chunks < 4 * threads)
    groups = std::min(blocks, (4 * threads + chunks - 1) / chunks);
  const int64_t per_block = std::max<int64_t>(1, w.entries() / std::max<int64_t>(1, blocks));
  const int64_t work = kGroup * kGroupsPerChunk * per_block * kSparseBlock * blocks / groups;
  ParallelFor(chunks * groups, work, threads, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t c = i / groups, g = i % groups;
      BlockSparseGemmF32(args, chunk_row(c), chunk_row(c + 1), blocks * g / groups,
                         blocks * (g + 1) / groups);
    }
  });
}

}  // namespace onyx::kernels::common
