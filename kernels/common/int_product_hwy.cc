// Highway loop of Int32RowsTimes8BitMatrix (int_product.h): for up to four rows of q at once, a
// vector of columns stays in registers while W's pairs of rows stream by, each widened from 8 to
// 16 bits once and taken by one pairwise multiply-add (two rows of W) per row of q.
// SVE's sizeless vector types cannot form arrays, which these loops keep their accumulators in:
// on AArch64 this file builds for NEON only, which SVE machines run too (before any Highway
// header: it shapes HWY_TARGETS).
#if defined(__aarch64__)
#define HWY_DISABLED_TARGETS (HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128)
#endif
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/common/int_product.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/common/int_product_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::kernels::common::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace {

// Two rows of W per step: the pair (q[2i], q[2i + 1]) times the pairs of row 2i and 2i + 1 in
// every column, each pair summed in int32 (ReorderWidenMulAccumulate: vpmaddwd on x86).
// Column j of the pairs layout: sum over the pairs, in int32.
template <typename T>
HWY_INLINE int32_t PairColumn(const int16_t* qp, int64_t k2, const T* wp, int64_t n, int64_t j) {
  int32_t s = 0;
  for (int64_t i = 0; i < k2; ++i) {
    const T* p = wp + (i * n + j) * 2;
    s += qp[2 * i] * static_cast<int32_t>(p[0]) + qp[2 * i + 1] * static_cast<int32_t>(p[1]);
  }
  return s;
}

#if HWY_TARGET == HWY_SCALAR
// One lane: no pairs of 16-bit lanes to multiply-add.
template <typename T>
void RowsTimesMatrix(const int16_t* qp, int64_t rows, int64_t k2, const T* wp, int64_t n,
                     int32_t* acc) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) acc[r * n + j] = PairColumn(qp + r * 2 * k2, k2, wp, n, j);
}
#else
// R rows of q at once: each vector of W's pairs is loaded and widened once for all of them.
template <int R, typename T>
void RowBlock(const int16_t* qp, int64_t k2, const T* wp, int64_t n, int32_t* acc) {
  const hn::ScalableTag<int32_t> d32;
  const hn::Repartition<int16_t, decltype(d32)> d16;
  const hn::Rebind<T, decltype(d16)> d8;  // as many 8-bit lanes as int16 ones
  using V = hn::VFromD<decltype(d32)>;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d32));  // columns per vector
  const auto pair = [&](const int16_t* p) {  // (p[0], p[1]) in every int32 lane, memory order
    int32_t bits;
    std::memcpy(&bits, p, sizeof(bits));
    return hn::BitCast(d16, hn::Set(d32, bits));
  };
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    V a[R], b[R];
    for (int r = 0; r < R; ++r) a[r] = b[r] = hn::Zero(d32);
    for (int64_t i = 0; i < k2; ++i) {
      const auto wv = hn::PromoteTo(d16, hn::LoadU(d8, wp + (i * n + j) * 2));
      for (int r = 0; r < R; ++r)
        a[r] = hn::ReorderWidenMulAccumulate(d32, wv, pair(qp + (r * k2 + i) * 2), a[r], b[r]);
    }
    for (int r = 0; r < R; ++r)
      hn::StoreU(hn::RearrangeToOddPlusEven(a[r], b[r]), d32, acc + r * n + j);
  }
  for (; j < n; ++j)
    for (int r = 0; r < R; ++r) acc[r * n + j] = PairColumn(qp + r * 2 * k2, k2, wp, n, j);
}

template <typename T>
void RowsTimesMatrix(const int16_t* qp, int64_t rows, int64_t k2, const T* wp, int64_t n,
                     int32_t* acc) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) RowBlock<4>(qp + r * 2 * k2, k2, wp, n, acc + r * n);
  for (; r < rows; ++r) RowBlock<1>(qp + r * 2 * k2, k2, wp, n, acc + r * n);
}
#endif

void Int32RowsTimes8BitMatrixImpl(const int16_t* qp, int64_t rows, int64_t k2,
                                  const uint8_t* w_pairs, bool w_signed, int64_t n, int32_t* acc) {
  if (w_signed) {
    RowsTimesMatrix(qp, rows, k2, reinterpret_cast<const int8_t*>(w_pairs), n, acc);
  } else {
    RowsTimesMatrix(qp, rows, k2, w_pairs, n, acc);
  }
}

// y[i] -= ka * a[i] + kb * b[i] (b may be null), wrapping as int32 lanes do.
void SubtractScaledImpl(int32_t* y, int64_t n, int32_t ka, const int32_t* a, int32_t kb,
                        const int32_t* b) {
  const hn::ScalableTag<int32_t> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto va = hn::Set(d, ka), vb = hn::Set(d, kb);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    auto t = hn::Mul(hn::LoadU(d, a + i), va);
    if (b) t = hn::Add(t, hn::Mul(hn::LoadU(d, b + i), vb));
    hn::StoreU(hn::Sub(hn::LoadU(d, y + i), t), d, y + i);
  }
  for (; i < n; ++i) {
    const uint32_t t = static_cast<uint32_t>(ka) * static_cast<uint32_t>(a[i]) +
                       (b ? static_cast<uint32_t>(kb) * static_cast<uint32_t>(b[i]) : 0u);
    y[i] = static_cast<int32_t>(static_cast<uint32_t>(y[i]) - t);
  }
}

// sums[i] += x[i] for 8-bit x.
template <typename T>
void AddBytes(const T* x, int64_t n, int32_t* sums) {
  const hn::ScalableTag<int32_t> d;
  const hn::Rebind<T, decltype(d)> d8;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(hn::Add(hn::LoadU(d, sums + i), hn::PromoteTo(d, hn::LoadU(d8, x + i))), d,
               sums + i);
  for (; i < n; ++i) sums[i] += x[i];
}

void AddBytesToInt32Impl(const void* x, bool x_signed, int64_t n, int32_t* sums) {
  if (x_signed) {
    AddBytes(static_cast<const int8_t*>(x), n, sums);
  } else {
    AddBytes(static_cast<const uint8_t*>(x), n, sums);
  }
}

}  // namespace
}  // namespace onyx::kernels::common::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::kernels::common {

HWY_EXPORT(Int32RowsTimes8BitMatrixImpl);
HWY_EXPORT(SubtractScaledImpl);
HWY_EXPORT(AddBytesToInt32Impl);

void SubtractScaled(int32_t* y, int64_t n, int32_t ka, const int32_t* a, int32_t kb,
                    const int32_t* b) {
  if (n > 0) HWY_DYNAMIC_DISPATCH(SubtractScaledImpl)(y, n, ka, a, kb, b);
}

void AddBytesToInt32(const void* x, bool x_signed, int64_t n, int32_t* sums) {
  if (n > 0) HWY_DYNAMIC_DISPATCH(AddBytesToInt32Impl)(x, x_signed, n, sums);
}

std::vector<uint8_t> PairRows8Bit(const uint8_t* w, int64_t k, int64_t n) {
  const int64_t k2 = (k + 1) / 2;
  std::vector<uint8_t> out(static_cast<size_t>(k2 * n * 2), 0);
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < n; ++j) out[((i / 2) * n + j) * 2 + i % 2] = w[i * n + j];
  return out;
}

void Int32RowsTimes8BitMatrix(const int32_t* q, int64_t rows, int64_t k, const uint8_t* w_pairs,
                              bool w_signed, int64_t n, int32_t* acc) {
  if (n <= 0 || rows <= 0) return;
  const int64_t k2 = (k + 1) / 2;
  thread_local std::vector<int16_t> qp;
  qp.assign(static_cast<size_t>(rows * 2 * k2), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < k; ++i) qp[r * 2 * k2 + i] = static_cast<int16_t>(q[r * k + i]);
  HWY_DYNAMIC_DISPATCH(Int32RowsTimes8BitMatrixImpl)
  (qp.data(), rows, k2, w_pairs, w_signed, n, acc);
}

}  // namespace onyx::kernels::common
#endif  // HWY_ONCE
