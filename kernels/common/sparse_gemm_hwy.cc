// Highway loops of the block-sparse product (contract in simd_kernels.h). A register tile holds
// kRows rows of X times one block of 16, 32 or 64 output channels; for each stored block entry
// (an input channel whose weights in the block are not all zero) it loads the block's weights
// once and broadcasts each row's X value against them, one broadcast for all the block's
// vectors: the same inner loop as a dense channels-last GEMM, over the entries that are left.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/common/simd_kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/common/sparse_gemm_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/common/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::kernels::common::HWY_NAMESPACE {
namespace {

// At most one block per vector: a 16-block is one vector of 16 lanes on AVX-512, two of 8 on
// AVX2; a 32-block two vectors on AVX-512, ...
template <int64_t kBlock>
using DB = hn::CappedTag<float, static_cast<size_t>(kBlock)>;

template <class D>
HWY_INLINE hn::VFromD<D> LoadPart(D d, const float* p, size_t n) {
  return n == hn::Lanes(d) ? hn::LoadU(d, p) : LoadTail(d, p, n, 0.0f);
}
template <class D>
HWY_INLINE void StorePart(D d, hn::VFromD<D> v, float* p, size_t n) {
  if (n == hn::Lanes(d)) {
    hn::StoreU(v, d, p);
  } else {
    StoreTail(d, v, p, n);
  }
}

// Whether x[0, n) holds only finite values.
bool AllFinite(const float* x, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  auto ok = hn::IsFinite(hn::Zero(d));
  int64_t i = 0;
  for (; i + N <= n; i += N) ok = hn::And(ok, hn::IsFinite(hn::LoadU(d, x + i)));
  if (!hn::AllTrue(d, ok)) return false;
  for (; i < n; ++i)
    if (!std::isfinite(x[i])) return false;
  return true;
}

// Row `r` of block `b` for a row of X holding Inf or NaN: every channel summed (zero weights
// included) from the dense W, in float, then the epilogue.
void DenseRow(const BlockSparseGemmArgs& a, int64_t r, int64_t b) {
  const BlockSparseWeights& w = *a.w;
  const float* x = a.x + r * a.lda;
  const int64_t c1 = std::min(w.m, (b + 1) * w.block);
  for (int64_t co = b * w.block; co < c1; ++co) {
    float acc = 0.0f;
    for (int64_t ci = 0; ci < w.k; ++ci)
      acc += x[ci] * a.dense_w[co * a.dense_m_stride + ci * a.dense_k_stride];
    float v = acc + a.bias[co];
    if (a.z) v += a.z[r * w.m + co];
    if (a.activation == VectorActivation::kRelu) {
      v = v < 0.0f ? 0.0f : v;
    } else if (a.activation == VectorActivation::kClip) {
      v = v < a.clip_lo ? a.clip_lo : v;
      v = v > a.clip_hi ? a.clip_hi : v;
    }
    a.y[r * w.m + co] = v;
  }
}

#if !HWY_HAVE_SCALABLE
// Vector registers of the target: AVX-512 and Arm have 32, SSE4 and AVX2 16.
#if HWY_ARCH_X86 && HWY_TARGET > HWY_AVX3
constexpr size_t kRegisters = 16;
#else
constexpr size_t kRegisters = 32;
#endif
// Vectors per block.
template <int64_t kBlock>
constexpr size_t kVecs = static_cast<size_t>(kBlock) / hn::MaxLanes(DB<kBlock>());
// Rows per tile: as many as the registers hold beside the block's weights and one broadcast, at
// most 12, and a divisor of 12 (RunBlockSparse's row groups). On AVX-512 a 16-block tile is 12 x 1
// vectors (8, 16 and 24 rows measured within noise of 12), a 32-block 12 x 2, a 64-block 6 x 4;
// on AVX2 6 x 2, 2 x 4 and 1 x 8.
constexpr size_t RowsFor(size_t vecs) {
  const size_t fit = kRegisters > vecs + 1 ? (kRegisters - vecs - 1) / vecs : 0;
  for (size_t r : {12, 6, 4, 3, 2})
    if (fit >= r) return r;
  return 1;
}
template <int64_t kBlock>
constexpr size_t kMaxRows = RowsFor(kVecs<kBlock>);

// Rows [r0, r0 + kRows) of block b: acc = X W_b^T over the block's entries, then the epilogue.
// kPacked: X's rows come interleaved, xp[ci * kRows + r] (PackRows), so that an entry's
// broadcasts read one or two cache lines at constant offsets; else xp is row r0 of X.
template <int64_t kBlock, size_t kRows, bool kPacked = false>
HWY_INLINE void Tile(const BlockSparseGemmArgs& a, const float* HWY_RESTRICT xp, int64_t r0,
                     int64_t b) {
  const DB<kBlock> d;
  using V = hn::VFromD<DB<kBlock>>;
  constexpr size_t N = hn::MaxLanes(d);
  constexpr size_t kV = kVecs<kBlock>;
  const BlockSparseWeights& w = *a.w;
  V acc[kRows][kV];
#pragma GCC unroll 32
  for (size_t r = 0; r < kRows; ++r)
    for (size_t j = 0; j < kV; ++j) acc[r][j] = hn::Zero(d);
  const int64_t e0 = w.block_start[b], e1 = w.block_start[b + 1];
  const int32_t* HWY_RESTRICT ch = w.channel.data();
  const float* HWY_RESTRICT vals = w.values.get();
  const int64_t row_stride = kPacked ? 1 : a.lda;
  const int64_t ch_stride = kPacked ? static_cast<int64_t>(kRows) : 1;
  for (int64_t e = e0; e < e1; ++e) {
    const float* xc = xp + static_cast<int64_t>(ch[e]) * ch_stride;
    V wv[kV];
    for (size_t j = 0; j < kV; ++j) wv[j] = hn::Load(d, vals + e * kBlock + j * N);
#pragma GCC unroll 32
    for (size_t r = 0; r < kRows; ++r) {
      const V s = hn::Set(d, xc[static_cast<int64_t>(r) * row_stride]);
      for (size_t j = 0; j < kV; ++j) acc[r][j] = hn::MulAdd(s, wv[j], acc[r][j]);
    }
  }
  const V lo = hn::Set(d, a.clip_lo), hi = hn::Set(d, a.clip_hi);
  for (size_t j = 0; j < kV; ++j) {
    const int64_t co = b * kBlock + static_cast<int64_t>(j * N);
    if (co >= w.m) break;
    const size_t n = static_cast<size_t>(std::min<int64_t>(N, w.m - co));
    const V bias = hn::LoadU(d, a.bias + co);
#pragma GCC unroll 32
    for (size_t r = 0; r < kRows; ++r) {
      const int64_t row = r0 + static_cast<int64_t>(r);
      V v = hn::Add(acc[r][j], bias);
      if (a.z) v = hn::Add(v, LoadPart(d, a.z + row * w.m + co, n));
      StorePart(d, ApplyVectorActivation(d, a.activation, v, lo, hi), a.y + row * w.m + co, n);
    }
  }
}

template <int64_t kBlock, size_t kRows>
HWY_INLINE void TileRemainder(const BlockSparseGemmArgs& a, int64_t r0, int64_t rows, int64_t b) {
  if constexpr (kRows > 0) {
    if (rows == static_cast<int64_t>(kRows)) return Tile<kBlock, kRows>(a, a.x + r0 * a.lda, r0, b);
    TileRemainder<kBlock, kRows - 1>(a, r0, rows, b);
  }
}

// Whether the rows are interleaved first: the copy costs about one cycle per element of the tile
// and pays where each input channel has many stored blocks to serve (measured on AVX-512: 10-20%
// faster from 16 entries per channel on, 25% slower at 8 with K = 1024, 40% slower at 4).
bool PackPays(const BlockSparseWeights& w, int64_t blocks) {
  return w.entries() * blocks >= 16 * w.k * w.blocks();
}

// xp[ci * R + r] = row r0 + r of X at channel ci.
template <int64_t R>
void PackRows(const BlockSparseGemmArgs& a, int64_t r0, float* HWY_RESTRICT xp) {
  const int64_t k = a.w->k;
  for (int64_t r = 0; r < R; ++r) {
    const float* HWY_RESTRICT src = a.x + (r0 + r) * a.lda;
    for (int64_t c = 0; c < k; ++c) xp[c * R + r] = src[c];
  }
}
#else
template <int64_t kBlock>
constexpr size_t kMaxRows = 1;
// Scalable vectors cannot live in arrays: one row at a time, the block in vectors of Lanes.
template <int64_t kBlock, size_t kRows, bool kPacked = false>
void Tile(const BlockSparseGemmArgs& a, const float*, int64_t r0, int64_t b) {
  const DB<kBlock> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const BlockSparseWeights& w = *a.w;
  for (int64_t c = 0; c < kBlock; c += N) {
    const int64_t co = b * kBlock + c;
    if (co >= w.m) break;
    const size_t n = static_cast<size_t>(std::min<int64_t>(N, w.m - co));
    auto acc = hn::Zero(d);
    for (int64_t e = w.block_start[b]; e < w.block_start[b + 1]; ++e)
      acc = hn::MulAdd(hn::Set(d, a.x[r0 * a.lda + w.channel[e]]),
                       hn::Load(d, w.values.get() + e * kBlock + c), acc);
    auto v = hn::Add(acc, hn::Load(d, a.bias + co));
    if (a.z) v = hn::Add(v, LoadPart(d, a.z + r0 * w.m + co, n));
    StorePart(
        d, ApplyVectorActivation(d, a.activation, v, hn::Set(d, a.clip_lo), hn::Set(d, a.clip_hi)),
        a.y + r0 * w.m + co, n);
  }
}
template <int64_t kBlock, size_t kRows>
void TileRemainder(const BlockSparseGemmArgs& a, int64_t r0, int64_t rows, int64_t b) {
  for (int64_t r = 0; r < rows; ++r) Tile<kBlock, 1>(a, nullptr, r0 + r, b);
}
bool PackPays(const BlockSparseWeights&, int64_t) {
  return false;
}
template <int64_t R>
void PackRows(const BlockSparseGemmArgs&, int64_t, float*) {}
#endif

// The tiles of a call (a chunk of a few) go past the blocks in one of two orders. Where the
// blocks' weights fit in half of L2 (1 MiB), each tile in turn meets every block: its rows stay
// in L1 and the weights stream from L2. Where they do not, each block in turn meets every tile:
// the block's weights stay in L1 and the chunk's rows in L2; with the tiles outside, every tile
// streamed all of W from L3 (2 MiB for a 2048 x 512 layer at half density), 15-25% slower.
template <int64_t kBlock>
void BlockSparseGemm(const BlockSparseGemmArgs& a, int64_t row_begin, int64_t row_end,
                     int64_t block_begin, int64_t block_end) {
  constexpr size_t kR = kMaxRows<kBlock>;
  constexpr int64_t R = static_cast<int64_t>(kR);
  const BlockSparseWeights& w = *a.w;
  const int64_t k = w.k, tiles = (row_end - row_begin + R - 1) / R;
  const bool pack = PackPays(w, block_end - block_begin);
  thread_local std::vector<float> packed;  // this thread's interleaved tiles, k * R floats each
  thread_local std::vector<char> finite;   // per tile: no Inf or NaN in its rows
  if (pack && packed.size() < static_cast<size_t>(tiles * k * R)) packed.resize(tiles * k * R);
  finite.assign(static_cast<size_t>(tiles), 1);
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t r0 = row_begin + t * R, rows = std::min(R, row_end - r0);
    for (int64_t r = r0; r < r0 + rows && finite[t]; ++r) finite[t] = AllFinite(a.x + r * a.lda, k);
    if (pack && finite[t] && rows == R) PackRows<R>(a, r0, packed.data() + t * k * R);
  }
  const auto step = [&](int64_t t, int64_t b) {
    const int64_t r0 = row_begin + t * R, rows = std::min(R, row_end - r0);
    if (finite[t] && rows == R) {
      if (pack) {
        Tile<kBlock, kR, true>(a, packed.data() + t * k * R, r0, b);
      } else {
        Tile<kBlock, kR>(a, a.x + r0 * a.lda, r0, b);
      }
    } else if (finite[t]) {
      TileRemainder<kBlock, kR - 1>(a, r0, rows, b);
    } else {
      // Rows holding Inf or NaN are summed densely, the others of the tile one at a time.
      for (int64_t r = r0; r < r0 + rows; ++r) {
        if (AllFinite(a.x + r * a.lda, k)) {
          TileRemainder<kBlock, kR>(a, r, 1, b);
        } else {
          DenseRow(a, r, b);
        }
      }
    }
  };
  const int64_t weight_bytes = (w.block_start[block_end] - w.block_start[block_begin]) * kBlock *
                               static_cast<int64_t>(sizeof(float));
  if (weight_bytes <= (int64_t{1} << 20)) {
    for (int64_t t = 0; t < tiles; ++t)
      for (int64_t b = block_begin; b < block_end; ++b) step(t, b);
  } else {
    for (int64_t b = block_begin; b < block_end; ++b)
      for (int64_t t = 0; t < tiles; ++t) step(t, b);
  }
}

void BlockSparseGemmF32Impl(const BlockSparseGemmArgs& a, int64_t row_begin, int64_t row_end,
                            int64_t block_begin, int64_t block_end) {
  switch (a.w->block) {
    case 16:
      return BlockSparseGemm<16>(a, row_begin, row_end, block_begin, block_end);
    case 32:
      return BlockSparseGemm<32>(a, row_begin, row_end, block_begin, block_end);
    default:  // PackBlockSparse makes 16, 32 or 64
      return BlockSparseGemm<64>(a, row_begin, row_end, block_begin, block_end);
  }
}

}  // namespace
}  // namespace onyx::kernels::common::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::kernels::common {

HWY_EXPORT(BlockSparseGemmF32Impl);

void BlockSparseGemmF32(const BlockSparseGemmArgs& args, int64_t row_begin, int64_t row_end,
                        int64_t block_begin, int64_t block_end) {
  if (row_begin < row_end && block_begin < block_end)
    HWY_DYNAMIC_DISPATCH(BlockSparseGemmF32Impl)(args, row_begin, row_end, block_begin, block_end);
}

BlockSparseWeights PackBlockSparse(const float* w, int64_t m, int64_t k, int64_t m_stride,
                                   int64_t k_stride, int64_t block) {
  BlockSparseWeights p;
  p.m = m;
  p.k = k;
  p.block = block == 32 || block == 64 ? block : kSparseBlock;
  const int64_t B = p.block;
  const int64_t blocks = p.blocks();
  p.block_start.assign(1, 0);
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t c1 = std::min(m, (b + 1) * B);
    for (int64_t ci = 0; ci < k; ++ci)
      for (int64_t co = b * B; co < c1; ++co)
        if (w[co * m_stride + ci * k_stride] != 0.0f) {
          p.channel.push_back(static_cast<int32_t>(ci));
          break;
        }
    p.block_start.push_back(static_cast<int32_t>(p.channel.size()));
  }
  const size_t floats = std::max<size_t>(1, p.channel.size() * B);
  p.values = hwy::AllocateAligned<float>(floats);
  if (!p.values) return p;
  std::fill(p.values.get(), p.values.get() + floats, 0.0f);
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t c1 = std::min(m, (b + 1) * B);
    for (int64_t e = p.block_start[b]; e < p.block_start[b + 1]; ++e)
      for (int64_t co = b * B; co < c1; ++co)
        p.values[e * B + co - b * B] = w[co * m_stride + p.channel[e] * k_stride];
  }
  return p;
}

}  // namespace onyx::kernels::common
#endif  // HWY_ONCE
