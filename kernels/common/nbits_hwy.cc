// Highway loops of MatMulNBits with 4-bit weights (contracts in transformer_ms_kernels.h): each
// block of B is dequantised into a small float buffer as it is read (low nibbles, then high
// nibbles), and every row of A, permuted the same way once per run, takes its dot product with it.
// SVE's sizeless vector types cannot form arrays, which these loops keep their accumulators in:
// on AArch64 this file builds for NEON only, which SVE machines run too (before any Highway
// header: it shapes HWY_TARGETS).
#if defined(__aarch64__)
#define HWY_DISABLED_TARGETS (HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128)
#endif
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/common/transformer_ms_kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/common/nbits_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/common/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::kernels::common::HWY_NAMESPACE {
namespace {

// w[0, block/2) = the low nibbles of one block's bytes, w[block/2, block) the high ones, each
// dequantised: (q - zero) * scale.
HWY_INLINE void DequantizeBlock(const uint8_t* src, int64_t half, float scale, float zero,
                                float* w) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(df)> d8;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto low_mask = hn::Set(d8, uint8_t{0x0F});
  const auto vs = hn::Set(df, scale);
  const auto vzs = hn::Set(df, zero * scale);
  int64_t j = 0;
  for (; j + lanes <= half; j += lanes) {
    const auto v = hn::LoadU(d8, src + j);
    const auto lo = hn::ConvertTo(df, hn::PromoteTo(di, hn::And(v, low_mask)));
    const auto hi = hn::ConvertTo(df, hn::PromoteTo(di, hn::ShiftRight<4>(v)));
    hn::StoreU(hn::MulSub(lo, vs, vzs), df, w + j);
    hn::StoreU(hn::MulSub(hi, vs, vzs), df, w + half + j);
  }
  for (; j < half; ++j) {
    w[j] = static_cast<float>(src[j] & 0x0F) * scale - zero * scale;
    w[half + j] = static_cast<float>(src[j] >> 4) * scale - zero * scale;
  }
}

// R rows of A (a_perm rows) against column n: each block's nibbles are widened, dequantised and
// multiplied in registers (no float copy of the block).
template <int R>
HWY_INLINE void RowsTimesColumn(const NBits4Args& g, int64_t n, int64_t r0) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(df)> d8;
  using V = hn::VFromD<decltype(df)>;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const int64_t half = g.block / 2, kp = g.k_blocks * g.block;
  const auto low_mask = hn::Set(d8, uint8_t{0x0F});
  V acc[R];
  float tail[R] = {};
  for (int r = 0; r < R; ++r) acc[r] = hn::Zero(df);
  const float* a = g.a_perm + r0 * kp;
  for (int64_t blk = 0; blk < g.k_blocks; ++blk) {
    const int64_t q = n * g.k_blocks + blk;
    const uint8_t* src = g.b + q * half;
    const float scale = g.scales[q], zs = g.zeros[q] * scale;
    const V vs = hn::Set(df, scale), vzs = hn::Set(df, zs);
    const float* ab = a + blk * g.block;
    int64_t j = 0;
    for (; j + lanes <= half; j += lanes) {
      const auto v = hn::LoadU(d8, src + j);
      const V lo = hn::MulSub(hn::ConvertTo(df, hn::PromoteTo(di, hn::And(v, low_mask))), vs, vzs);
      const V hi = hn::MulSub(hn::ConvertTo(df, hn::PromoteTo(di, hn::ShiftRight<4>(v))), vs, vzs);
      for (int r = 0; r < R; ++r) {
        acc[r] = hn::MulAdd(lo, hn::LoadU(df, ab + r * kp + j), acc[r]);
        acc[r] = hn::MulAdd(hi, hn::LoadU(df, ab + r * kp + half + j), acc[r]);
      }
    }
    for (; j < half; ++j) {
      const float lo = static_cast<float>(src[j] & 0x0F) * scale - zs;
      const float hi = static_cast<float>(src[j] >> 4) * scale - zs;
      for (int r = 0; r < R; ++r) tail[r] += lo * ab[r * kp + j] + hi * ab[r * kp + half + j];
    }
  }
  const float bias = g.bias ? g.bias[n] : 0.f;
  for (int r = 0; r < R; ++r)
    g.y[(r0 + r) * g.ldy + n] = hn::GetLane(hn::SumOfLanes(df, acc[r])) + tail[r] + bias;
}

// Rows in passes of up to eight (eight accumulators, the widened block and the loads fit in
// sixteen vector registers): each pass streams the column's blocks once.
void MatMulNBits4F32Impl(const NBits4Args& g, int64_t n0, int64_t n1) {
  constexpr int64_t kRows = 8;
  for (int64_t n = n0; n < n1; ++n) {
    int64_t r = 0;
    for (; r + kRows <= g.rows; r += kRows) RowsTimesColumn<8>(g, n, r);
    switch (g.rows - r) {
      case 7:
        RowsTimesColumn<7>(g, n, r);
        break;
      case 6:
        RowsTimesColumn<6>(g, n, r);
        break;
      case 5:
        RowsTimesColumn<5>(g, n, r);
        break;
      case 4:
        RowsTimesColumn<4>(g, n, r);
        break;
      case 3:
        RowsTimesColumn<3>(g, n, r);
        break;
      case 2:
        RowsTimesColumn<2>(g, n, r);
        break;
      case 1:
        RowsTimesColumn<1>(g, n, r);
        break;
      default:
        break;
    }
  }
}

void NBits4DequantizeImpl(const NBits4Args& g, int64_t n0, int64_t n1, float* out) {
  const int64_t half = g.block / 2, kp = g.k_blocks * g.block;
  for (int64_t n = n0; n < n1; ++n) {
    float* row = out + (n - n0) * kp;
    for (int64_t blk = 0; blk < g.k_blocks; ++blk) {
      const int64_t q = n * g.k_blocks + blk;
      DequantizeBlock(g.b + q * half, half, g.scales[q], g.zeros[q], row + blk * g.block);
    }
  }
}

}  // namespace
}  // namespace onyx::kernels::common::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::kernels::common {

HWY_EXPORT(MatMulNBits4F32Impl);
HWY_EXPORT(NBits4DequantizeImpl);

void MatMulNBits4F32(const NBits4Args& args, int64_t n0, int64_t n1) {
  if (n0 < n1 && args.rows > 0) HWY_DYNAMIC_DISPATCH(MatMulNBits4F32Impl)(args, n0, n1);
}

void NBits4Dequantize(const NBits4Args& args, int64_t n0, int64_t n1, float* w) {
  if (n0 < n1) HWY_DYNAMIC_DISPATCH(NBits4DequantizeImpl)(args, n0, n1, w);
}

void NBits4PermuteA(const float* a, int64_t rows, int64_t lda, int64_t k, int64_t k_blocks,
                    int64_t block, float* a_perm) {
  const int64_t half = block / 2, kp = k_blocks * block;
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = a + r * lda;
    float* dst = a_perm + r * kp;
    for (int64_t blk = 0; blk < k_blocks; ++blk) {
      const int64_t k0 = blk * block;
      float* out = dst + k0;
      for (int64_t i = 0; i < half; ++i) {
        const int64_t even = k0 + 2 * i, odd = even + 1;
        out[i] = even < k ? src[even] : 0.f;
        out[half + i] = odd < k ? src[odd] : 0.f;
      }
    }
  }
}

}  // namespace onyx::kernels::common
#endif  // HWY_ONCE
