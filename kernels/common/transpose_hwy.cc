// Highway 2-D transposes of 4- and 8-byte elements: 4x4 (2x2) blocks transposed in 128-bit
// registers, walked in 32x32 tiles (see simd_kernels.h). Bits are moved, never computed on, so
// any element type of that size (float NaN payloads included) is copied exactly.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/common/simd_kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/common/transpose_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::kernels::common::HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

// Tile edge: a tile's source and destination lines stay in L1 (measured best of 16/32/64 here).
constexpr int64_t kTile = 32;

// dst[a * ds + b] = src[a + b * ss] for a in [a0, a1), b in [b0, b1), one element at a time.
template <typename E>
HWY_INLINE void TransposeScalar(const E* src, int64_t ss, E* dst, int64_t ds, int64_t a0,
                                int64_t a1, int64_t b0, int64_t b1) {
  for (int64_t a = a0; a < a1; ++a)
    for (int64_t b = b0; b < b1; ++b) dst[a * ds + b] = src[a + b * ss];
}

#if HWY_TARGET != HWY_SCALAR
// Rows [a, rows) of two to four contiguous output columns, in vectors of d's lanes; returns the
// first row left over.
template <class D>
HWY_INLINE int64_t InterleaveColumns(D d, const uint32_t* src, int64_t ss, uint32_t* dst, int64_t a,
                                     int64_t rows, int64_t cols) {
  const int64_t n = static_cast<int64_t>(hn::Lanes(d));
  for (; a + n <= rows; a += n) {
    const auto v0 = hn::LoadU(d, src + a);
    const auto v1 = hn::LoadU(d, src + a + ss);
    if (cols == 2) {
      hn::StoreInterleaved2(v0, v1, d, dst + a * 2);
      continue;
    }
    const auto v2 = hn::LoadU(d, src + a + 2 * ss);
    if (cols == 3)
      hn::StoreInterleaved3(v0, v1, v2, d, dst + a * 3);
    else
      hn::StoreInterleaved4(v0, v1, v2, hn::LoadU(d, src + a + 3 * ss), d, dst + a * 4);
  }
  return a;
}

// Two to four contiguous output columns: each group of input rows is stored interleaved. An RGB
// image going NCHW -> NHWC has many rows; ShuffleNet's channel shuffle ([G][K] -> [K][G] per
// pixel) has K = 28..136, so the rows left over by the widest vectors go four at a time
// (one pixel of 28 was 16 rows vectorized and 12 scalar, 2.7x slower than a copy).
bool TransposeFewColumns32(const uint32_t* src, int64_t ss, uint32_t* dst, int64_t ds, int64_t rows,
                           int64_t cols) {
  if (ds != cols || cols < 2 || cols > 4) return false;
  int64_t a = InterleaveColumns(hn::ScalableTag<uint32_t>(), src, ss, dst, 0, rows, cols);
  a = InterleaveColumns(hn::CappedTag<uint32_t, 4>(), src, ss, dst, a, rows, cols);
  TransposeScalar(src, ss, dst, ds, a, rows, 0, cols);
  return true;
}
#endif

void Transpose2D32Impl(const uint32_t* src, int64_t ss, uint32_t* dst, int64_t ds, int64_t rows,
                       int64_t cols) {
#if HWY_TARGET == HWY_SCALAR
  TransposeScalar(src, ss, dst, ds, 0, rows, 0, cols);
#else
  if (TransposeFewColumns32(src, ss, dst, ds, rows, cols)) return;
  const hn::Full128<uint32_t> d;
  for (int64_t a0 = 0; a0 < rows; a0 += kTile) {
    const int64_t a1 = std::min(rows, a0 + kTile);
    for (int64_t b0 = 0; b0 < cols; b0 += kTile) {
      const int64_t b1 = std::min(cols, b0 + kTile);
      int64_t a = a0;
      for (; a + 4 <= a1; a += 4) {
        int64_t b = b0;
        for (; b + 4 <= b1; b += 4) {
          // Rows r_k = src[a..a+3] of column b + k; interleaving gives the 4 output rows.
          const auto r0 = hn::LoadU(d, src + a + (b + 0) * ss);
          const auto r1 = hn::LoadU(d, src + a + (b + 1) * ss);
          const auto r2 = hn::LoadU(d, src + a + (b + 2) * ss);
          const auto r3 = hn::LoadU(d, src + a + (b + 3) * ss);
          const auto t0 = hn::InterleaveLower(d, r0, r1);
          const auto t1 = hn::InterleaveLower(d, r2, r3);
          const auto t2 = hn::InterleaveUpper(d, r0, r1);
          const auto t3 = hn::InterleaveUpper(d, r2, r3);
          hn::StoreU(hn::ConcatLowerLower(d, t1, t0), d, dst + (a + 0) * ds + b);
          hn::StoreU(hn::ConcatUpperUpper(d, t1, t0), d, dst + (a + 1) * ds + b);
          hn::StoreU(hn::ConcatLowerLower(d, t3, t2), d, dst + (a + 2) * ds + b);
          hn::StoreU(hn::ConcatUpperUpper(d, t3, t2), d, dst + (a + 3) * ds + b);
        }
        TransposeScalar(src, ss, dst, ds, a, a + 4, b, b1);
      }
      TransposeScalar(src, ss, dst, ds, a, a1, b0, b1);
    }
  }
#endif
}

void Transpose2D64Impl(const uint64_t* src, int64_t ss, uint64_t* dst, int64_t ds, int64_t rows,
                       int64_t cols) {
#if HWY_TARGET == HWY_SCALAR
  TransposeScalar(src, ss, dst, ds, 0, rows, 0, cols);
#else
  const hn::Full128<uint64_t> d;
  for (int64_t a0 = 0; a0 < rows; a0 += kTile) {
    const int64_t a1 = std::min(rows, a0 + kTile);
    for (int64_t b0 = 0; b0 < cols; b0 += kTile) {
      const int64_t b1 = std::min(cols, b0 + kTile);
      int64_t a = a0;
      for (; a + 2 <= a1; a += 2) {
        int64_t b = b0;
        for (; b + 2 <= b1; b += 2) {
          const auto r0 = hn::LoadU(d, src + a + b * ss);
          const auto r1 = hn::LoadU(d, src + a + (b + 1) * ss);
          hn::StoreU(hn::InterleaveLower(d, r0, r1), d, dst + a * ds + b);
          hn::StoreU(hn::InterleaveUpper(d, r0, r1), d, dst + (a + 1) * ds + b);
        }
        TransposeScalar(src, ss, dst, ds, a, a + 2, b, b1);
      }
      TransposeScalar(src, ss, dst, ds, a, a1, b0, b1);
    }
  }
#endif
}

}  // namespace
}  // namespace onyx::kernels::common::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::kernels::common {

HWY_EXPORT(Transpose2D32Impl);
HWY_EXPORT(Transpose2D64Impl);

void Transpose2D32(const uint32_t* src, int64_t src_stride, uint32_t* dst, int64_t dst_stride,
                   int64_t rows, int64_t cols) {
  if (rows > 0 && cols > 0)
    HWY_DYNAMIC_DISPATCH(Transpose2D32Impl)(src, src_stride, dst, dst_stride, rows, cols);
}

void Transpose2D64(const uint64_t* src, int64_t src_stride, uint64_t* dst, int64_t dst_stride,
                   int64_t rows, int64_t cols) {
  if (rows > 0 && cols > 0)
    HWY_DYNAMIC_DISPATCH(Transpose2D64Impl)(src, src_stride, dst, dst_stride, rows, cols);
}

}  // namespace onyx::kernels::common
#endif  // HWY_ONCE
