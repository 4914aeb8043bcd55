#include "kernels/common/sparse_kernels.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>

#include "kernels/op_helpers.h"
#include "kernels/reference/fused.h"

namespace onyx::kernels::common {

double ZeroBlockFraction(const float* w, int64_t m, int64_t k, int64_t m_stride, int64_t k_stride,
                         int64_t block) {
  const int64_t blocks = (m + block - 1) / block;
  if (blocks == 0 || k == 0) return 0.0;
  int64_t zero = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t c1 = std::min(m, (b + 1) * block);
    for (int64_t ci = 0; ci < k; ++ci) {
      bool all_zero = true;
      for (int64_t co = b * block; co < c1 && all_zero; ++co)
        all_zero = w[co * m_stride + ci * k_stride] == 0.0f;
      zero += all_zero;
    }
  }
  return static_cast<double>(zero) / static_cast<double>(blocks * k);
}

double MinZeroBlocks(int64_t block) {
  static const double env_threshold = [] {
    const char* env = std::getenv("ONYX_SPARSE_MIN_ZERO_BLOCKS");
    return env && *env ? std::atof(env) : -1.0;
  }();
  if (env_threshold >= 0.0) return env_threshold;
  return block == 32 ? kMinZeroBlocks32 : kMinZeroBlocks;
}

int64_t SparseBlockFor(const float* w, int64_t m, int64_t k, int64_t m_stride, int64_t k_stride,
                       double* zero) {
  // ONYX_SPARSE_BLOCK=16|32 forces the width (bench/sparse_layers.py measures each alone).
  static const int64_t forced = [] {
    const char* env = std::getenv("ONYX_SPARSE_BLOCK");
    return env && *env ? std::atoll(env) : int64_t{0};
  }();
  if (forced == 16 || forced == 32) {
    *zero = ZeroBlockFraction(w, m, k, m_stride, k_stride, forced);
    return *zero >= MinZeroBlocks(forced) ? forced : 0;
  }
  const double z16 = ZeroBlockFraction(w, m, k, m_stride, k_stride, 16);
  // Every zero 32-block is two zero 16-blocks: 32 can only pass where 16 nearly does.
  // Up to 16 channels there is one block either way: 32 would only compute padding.
  if (m > 16 && z16 >= MinZeroBlocks(32)) {
    const double z32 = ZeroBlockFraction(w, m, k, m_stride, k_stride, 32);
    // Weights pruned in 16s at 70% keep about half their 32-blocks zero: more stored weights
    // than the 16-blocks by more than the wider tile gains, so they stay in 16s.
    if (z32 >= MinZeroBlocks(32) && (1.0 - z32) <= kBlock32Speedup * (1.0 - z16)) {
      *zero = z32;
      return 32;
    }
  }
  *zero = z16;
  return z16 >= MinZeroBlocks(16) ? 16 : 0;
}

StatusOr<std::shared_ptr<const BlockSparseWeights>> SparseWeightsIfWorthIt(
    const NodeView& node, const Tensor& w, int64_t m, int64_t k, int64_t m_stride, int64_t k_stride,
    WeightCache* cache) {
  const float* wd = w.data<float>();
  double zero = 0.0;
  const int64_t block = SparseBlockFor(wd, m, k, m_stride, k_stride, &zero);
  if (block == 0)
    return node.NotSupported("W has ", static_cast<int>(zero * 100),
                             "% zero blocks of 16 output channels, below the ",
                             static_cast<int>(MinZeroBlocks(16) * 100), "% where it pays");
  const std::function<std::shared_ptr<const BlockSparseWeights>()> pack = [&] {
    auto p =
        std::make_shared<BlockSparseWeights>(PackBlockSparse(wd, m, k, m_stride, k_stride, block));
    return p->values ? std::shared_ptr<const BlockSparseWeights>(p) : nullptr;
  };
  const int64_t entries =
      static_cast<int64_t>((1.0 - zero) * static_cast<double>(k)) * ((m + block - 1) / block);
  const size_t bytes = static_cast<size_t>(entries) * (block * sizeof(float) + 4);
  std::shared_ptr<const BlockSparseWeights> packed =
      cache ? cache->GetOrPack<BlockSparseWeights>(
                  w, StrCat("block", block, ":", m, ":", k, ":", m_stride, ":", k_stride), pack,
                  bytes)
            : pack();
  if (!packed) return node.Fail("out of memory for the block-sparse weights");
  return packed;
}

hwy::AlignedFreeUniquePtr<float[]> PaddedBias(const float* b, int64_t m) {
  // Whole blocks of the widest width, whichever width the weights take.
  const int64_t padded =
      std::max<int64_t>(1, (m + kMaxSparseBlock - 1) / kMaxSparseBlock) * kMaxSparseBlock;
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
  const int64_t work = kGroup * kGroupsPerChunk * per_block * w.block * blocks / groups;
  ParallelFor(chunks * groups, work, threads, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t c = i / groups, g = i % groups;
      BlockSparseGemmF32(args, chunk_row(c), chunk_row(c + 1), blocks * g / groups,
                         blocks * (g + 1) / groups);
    }
  });
}

Status BlockSparseProduct::Init(const NodeView& node, const std::vector<TypeInfo>& types,
                                const KernelCreateInfo& info, const Tensor& w, int64_t m, int64_t k,
                                int64_t m_stride, int64_t k_stride, const char* bias_error) {
  m_ = m;
  bias_error_ = bias_error;
  ONYX_ASSIGN_OR_RETURN(FusedActivation act, ParseFusedActivation(node));
  loop_act_ = SplitLoopActivation(act);
  loop_act_.SetLoop(&args_);
  args_.dense_m_stride = m_stride;
  args_.dense_k_stride = k_stride;
  ONYX_ASSIGN_OR_RETURN(weights_,
                        SparseWeightsIfWorthIt(node, w, m, k, m_stride, k_stride, info.weights));
  const Tensor* bc = info.constants.size() > 2 ? info.constants[2] : nullptr;
  if (!Present(types, 2)) {
    bias_ = PaddedBias(nullptr, m);
    bias_packed_ = true;
  } else if (bc) {
    if (bc->numel() != m) return node.Invalid(bias_error);
    bias_ = PaddedBias(bc->data<float>(), m);
    bias_packed_ = true;
  }
  if (bias_packed_ && !bias_) return node.Fail("out of memory for the padded bias");
  return Status::Ok();
}

Status BlockSparseProduct::Run(KernelContext& ctx, const float* x, int64_t lda, int64_t rows,
                               const Shape& y_shape) const {
  const NodeView& node = ctx.node();
  BlockSparseGemmArgs a = args_;
  a.w = weights_.get();
  a.dense_w = ctx.input(1).data<float>();
  hwy::AlignedFreeUniquePtr<float[]> run_bias;
  a.bias = bias_.get();
  if (!bias_packed_) {
    if (ctx.input(2).numel() != m_) return node.Fail(bias_error_);
    run_bias = PaddedBias(ctx.input(2).data<float>(), m_);
    if (!run_bias) return node.Fail("out of memory for the padded bias");
    a.bias = run_bias.get();
  }
  if (ctx.num_inputs() > 3 && ctx.has_input(3)) {
    if (ctx.input(3).shape() != y_shape)
      return node.Fail("input 3 (Z) shape changed after planning");
    a.z = ctx.input(3).data<float>();
  }
  Tensor y = ctx.Output(0, DType::kFloat, y_shape);
  a.y = y.data<float>();
  a.x = x;
  a.lda = lda;
  const int threads = ctx.intra_op_threads();
  RunBlockSparse(a, rows, threads);
  loop_act_.ApplyUnary(y.data<float>(), y.numel(), threads);
  return Status::Ok();
}

}  // namespace onyx::kernels::common
