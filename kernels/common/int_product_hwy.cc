// Highway loop of Int32RowTimes8BitMatrix (int_product.h): blocks of two vectors of columns stay
// in registers while W's pairs of rows stream by, widened from 8 to 16 bits, one pairwise
// multiply-add (two rows) per vector.
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
void RowTimesMatrix(const int16_t* qp, int64_t k2, const T* wp, int64_t n, int32_t* acc) {
  for (int64_t j = 0; j < n; ++j) acc[j] = PairColumn(qp, k2, wp, n, j);
}
#else
template <typename T>
void RowTimesMatrix(const int16_t* qp, int64_t k2, const T* wp, int64_t n, int32_t* acc) {
  const hn::ScalableTag<int32_t> d32;
  const hn::Repartition<int16_t, decltype(d32)> d16;
  const hn::Rebind<T, decltype(d16)> d8;                       // as many 8-bit lanes as int16 ones
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d32));  // columns per vector
  const auto widen = [&](const T* p) { return hn::PromoteTo(d16, hn::LoadU(d8, p)); };
  const auto pair = [&](int64_t i) {  // (q[2i], q[2i + 1]) in every int32 lane, memory order
    int32_t bits;
    std::memcpy(&bits, qp + 2 * i, sizeof(bits));
    return hn::BitCast(d16, hn::Set(d32, bits));
  };
  int64_t j = 0;
  for (; j + 2 * lanes <= n; j += 2 * lanes) {
    auto a0 = hn::Zero(d32), b0 = hn::Zero(d32), a1 = hn::Zero(d32), b1 = hn::Zero(d32);
    for (int64_t i = 0; i < k2; ++i) {
      if (qp[2 * i] == 0 && qp[2 * i + 1] == 0) continue;
      const auto qv = pair(i);
      const T* row = wp + (i * n + j) * 2;
      a0 = hn::ReorderWidenMulAccumulate(d32, widen(row), qv, a0, b0);
      a1 = hn::ReorderWidenMulAccumulate(d32, widen(row + 2 * lanes), qv, a1, b1);
    }
    hn::StoreU(hn::RearrangeToOddPlusEven(a0, b0), d32, acc + j);
    hn::StoreU(hn::RearrangeToOddPlusEven(a1, b1), d32, acc + j + lanes);
  }
  for (; j + lanes <= n; j += lanes) {
    auto a = hn::Zero(d32), b = hn::Zero(d32);
    for (int64_t i = 0; i < k2; ++i)
      if (qp[2 * i] != 0 || qp[2 * i + 1] != 0)
        a = hn::ReorderWidenMulAccumulate(d32, widen(wp + (i * n + j) * 2), pair(i), a, b);
    hn::StoreU(hn::RearrangeToOddPlusEven(a, b), d32, acc + j);
  }
  for (; j < n; ++j) acc[j] = PairColumn(qp, k2, wp, n, j);
}
#endif

void Int32RowTimes8BitMatrixImpl(const int16_t* qp, int64_t k2, const uint8_t* w_pairs,
                                 bool w_signed, int64_t n, int32_t* acc) {
  if (w_signed) {
    RowTimesMatrix(qp, k2, reinterpret_cast<const int8_t*>(w_pairs), n, acc);
  } else {
    RowTimesMatrix(qp, k2, w_pairs, n, acc);
  }
}

}  // namespace
}  // namespace onyx::kernels::common::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::kernels::common {

HWY_EXPORT(Int32RowTimes8BitMatrixImpl);

std::vector<uint8_t> PairRows8Bit(const uint8_t* w, int64_t k, int64_t n) {
  const int64_t k2 = (k + 1) / 2;
  std::vector<uint8_t> out(static_cast<size_t>(k2 * n * 2), 0);
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < n; ++j) out[((i / 2) * n + j) * 2 + i % 2] = w[i * n + j];
  return out;
}

void Int32RowTimes8BitMatrix(const int32_t* q, int64_t k, const uint8_t* w_pairs, bool w_signed,
                             int64_t n, int32_t* acc) {
  if (n <= 0) return;
  const int64_t k2 = (k + 1) / 2;
  thread_local std::vector<int16_t> qp;
  qp.assign(static_cast<size_t>(2 * k2), 0);
  for (int64_t i = 0; i < k; ++i) qp[i] = static_cast<int16_t>(q[i]);
  HWY_DYNAMIC_DISPATCH(Int32RowTimes8BitMatrixImpl)(qp.data(), k2, w_pairs, w_signed, n, acc);
}

}  // namespace onyx::kernels::common
#endif  // HWY_ONCE
