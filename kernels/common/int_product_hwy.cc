// Highway loop of Int32RowTimes8BitMatrix (int_product.h): blocks of four vectors of columns stay
// in registers while the rows of W stream by, widened from 8 bits, one broadcast multiply-add per
// row and vector.
#include <cstddef>
#include <cstdint>

#include "kernels/common/int_product.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/common/int_product_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::kernels::common::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace {

template <typename T>
void RowTimesMatrix(const int32_t* q, int64_t k, const T* w, int64_t n, int32_t* acc) {
  const hn::ScalableTag<int32_t> d;
  const hn::Rebind<T, decltype(d)> d8;  // as many 8-bit lanes as int32 ones
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto widen = [&](const T* p) { return hn::PromoteTo(d, hn::LoadU(d8, p)); };
  int64_t j = 0;
  for (; j + 4 * lanes <= n; j += 4 * lanes) {
    auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    for (int64_t i = 0; i < k; ++i) {
      if (q[i] == 0) continue;
      const auto qv = hn::Set(d, q[i]);
      const T* row = w + i * n + j;
      a0 = hn::Add(a0, hn::Mul(widen(row), qv));
      a1 = hn::Add(a1, hn::Mul(widen(row + lanes), qv));
      a2 = hn::Add(a2, hn::Mul(widen(row + 2 * lanes), qv));
      a3 = hn::Add(a3, hn::Mul(widen(row + 3 * lanes), qv));
    }
    hn::StoreU(a0, d, acc + j);
    hn::StoreU(a1, d, acc + j + lanes);
    hn::StoreU(a2, d, acc + j + 2 * lanes);
    hn::StoreU(a3, d, acc + j + 3 * lanes);
  }
  for (; j + lanes <= n; j += lanes) {
    auto a = hn::Zero(d);
    for (int64_t i = 0; i < k; ++i)
      if (q[i] != 0) a = hn::Add(a, hn::Mul(widen(w + i * n + j), hn::Set(d, q[i])));
    hn::StoreU(a, d, acc + j);
  }
  for (; j < n; ++j) {
    uint32_t s = 0;  // wrapping, as int32 vector lanes do
    for (int64_t i = 0; i < k; ++i)
      s += static_cast<uint32_t>(q[i]) * static_cast<uint32_t>(static_cast<int32_t>(w[i * n + j]));
    acc[j] = static_cast<int32_t>(s);
  }
}

void Int32RowTimes8BitMatrixImpl(const int32_t* q, int64_t k, const void* w, bool w_signed,
                                 int64_t n, int32_t* acc) {
  if (w_signed) {
    RowTimesMatrix(q, k, static_cast<const int8_t*>(w), n, acc);
  } else {
    RowTimesMatrix(q, k, static_cast<const uint8_t*>(w), n, acc);
  }
}

}  // namespace
}  // namespace onyx::kernels::common::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::kernels::common {

HWY_EXPORT(Int32RowTimes8BitMatrixImpl);

void Int32RowTimes8BitMatrix(const int32_t* q, int64_t k, const void* w, bool w_signed, int64_t n,
                             int32_t* acc) {
  if (n > 0) HWY_DYNAMIC_DISPATCH(Int32RowTimes8BitMatrixImpl)(q, k, w, w_signed, n, acc);
}

}  // namespace onyx::kernels::common
#endif  // HWY_ONCE
