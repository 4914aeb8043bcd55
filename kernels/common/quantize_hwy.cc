// Highway loops of QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear on contiguous runs
// (float32 <-> uint8 / int8, int32 -> float32), bitwise equal to the reference kernels
// (kernels/reference/quantization.cc). The op-level kernels in quantize_kernels.cc split the
// tensors into runs and the runs across threads; the contracts are declared there.
//
// Why float32 arithmetic reproduces the reference, which computes in double:
// - Quantize: the reference rounds double(x) / double(s) to float. The exact quotient of two
//   floats never lies within half a double ulp of a float rounding boundary (a midpoint between
//   two floats, in the subnormal range too, or the overflow threshold 2^128 - 2^103) without being
//   on it: with x = X 2^ex, s = S 2^es (X, S < 2^24 integers) and a boundary m = M 2^g, x - m s is
//   a nonzero multiple of 2^min(ex, es + g), so |x / s - m| > 2^(ex - es - 24) or > 2^(g - 24),
//   while the double ulp of x / s is below 2^(ex - es - 28) and at most 2^(g - 28). Rounding
//   through double is therefore innocuous, and float division (correctly rounded IEEE, as every
//   Highway target with a native divide does it) gives the same float. The rest (round half to
//   even, add the zero point, saturate, NaN -> 0) is done in float on small integers, exactly.
// - Dequantize (8-bit): (x - zp) has at most 9 bits and s 24, so the double product is exact and
//   the reference rounds it once to float, as a float multiplication does. int32 inputs have up to
//   33-bit differences, so they run in double lanes with the reference's operations.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/common/quantize_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/common/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::kernels::common::HWY_NAMESPACE {
namespace {

// Quantizes one vector: clamp(round_half_even(x / s), lo - zp, hi - zp) + zp, NaN -> 0.
// `neg_zp` = -zp, `lo_m`/`hi_m` = lo - zp / hi - zp (all small integers, exact in float).
template <class D, class V = hn::VFromD<D>>
HWY_INLINE hn::VFromD<hn::RebindToSigned<D>> QuantizeVec(D d, V x, V s, V zp, V neg_zp, V lo_m,
                                                         V hi_m) {
  (void)d;
  V r = hn::Round(hn::Div(x, s));
  // The reference turns a NaN sum into 0: starting from -zp, adding zp gives 0.
  r = hn::IfThenElse(hn::IsNaN(r), neg_zp, r);
  r = hn::Min(hn::Max(r, lo_m), hi_m);
  return hn::ConvertTo(hn::RebindToSigned<D>(), hn::Add(r, zp));
}

// Stores the int32 lanes (already in the range of T) as T.
template <typename T, class D, class VI>
HWY_INLINE void StoreNarrow(D d, VI v, T* dst) {
  const hn::Rebind<T, D> dn;
  hn::StoreU(hn::DemoteTo(dn, v), dn, dst);
}

template <typename T>
void QuantizeRun(const float* src, T* dst, size_t n, float scale, int32_t zero_point) {
  const hn::ScalableTag<float> d;
  using V = hn::VFromD<decltype(d)>;
  const size_t lanes = hn::Lanes(d);
  const float lo = static_cast<float>(std::numeric_limits<T>::min());
  const float hi = static_cast<float>(std::numeric_limits<T>::max());
  const float zpf = static_cast<float>(zero_point);
  const V s = hn::Set(d, scale), zp = hn::Set(d, zpf), neg_zp = hn::Set(d, -zpf);
  const V lo_m = hn::Set(d, lo - zpf), hi_m = hn::Set(d, hi - zpf);
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto q0 = QuantizeVec(d, hn::LoadU(d, src + i), s, zp, neg_zp, lo_m, hi_m);
    const auto q1 = QuantizeVec(d, hn::LoadU(d, src + i + lanes), s, zp, neg_zp, lo_m, hi_m);
    StoreNarrow(d, q0, dst + i);
    StoreNarrow(d, q1, dst + i + lanes);
  }
  for (; i + lanes <= n; i += lanes)
    StoreNarrow(d, QuantizeVec(d, hn::LoadU(d, src + i), s, zp, neg_zp, lo_m, hi_m), dst + i);
  if (i < n) {
    HWY_ALIGN T buf[kMaxLanesF32];
    const V x = LoadTail(d, src + i, n - i, 0.0f);
    StoreNarrow(d, QuantizeVec(d, x, s, zp, neg_zp, lo_m, hi_m), buf);
    std::memcpy(dst + i, buf, (n - i) * sizeof(T));
  }
}

template <typename T>
void QuantizeRunPerElement(const float* src, T* dst, size_t n, const float* scales,
                           const int32_t* zero_points) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  using V = hn::VFromD<decltype(d)>;
  const size_t lanes = hn::Lanes(d);
  const V lo = hn::Set(d, static_cast<float>(std::numeric_limits<T>::min()));
  const V hi = hn::Set(d, static_cast<float>(std::numeric_limits<T>::max()));
  auto one = [&](V x, V s, V zp) {
    return QuantizeVec(d, x, s, zp, hn::Neg(zp), hn::Sub(lo, zp), hn::Sub(hi, zp));
  };
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const V zp = hn::ConvertTo(d, hn::LoadU(di, zero_points + i));
    StoreNarrow(d, one(hn::LoadU(d, src + i), hn::LoadU(d, scales + i), zp), dst + i);
  }
  if (i < n) {
    const size_t rem = n - i;
    HWY_ALIGN int32_t zbuf[kMaxLanesF32] = {};
    HWY_ALIGN T buf[kMaxLanesF32];
    std::memcpy(zbuf, zero_points + i, rem * sizeof(int32_t));
    const V zp = hn::ConvertTo(d, hn::Load(di, zbuf));
    StoreNarrow(d, one(LoadTail(d, src + i, rem, 0.0f), LoadTail(d, scales + i, rem, 1.0f), zp),
                buf);
    std::memcpy(dst + i, buf, rem * sizeof(T));
  }
}

// ---- dequantize, 8-bit: (float(x) - zp) * s ----

template <typename T, class D>
HWY_INLINE hn::VFromD<D> LoadWidened(D d, const T* src) {
  const hn::Rebind<T, D> dn;
  return hn::ConvertTo(d, hn::PromoteTo(hn::RebindToSigned<D>(), hn::LoadU(dn, src)));
}

template <typename T, class D>
HWY_INLINE hn::VFromD<D> LoadWidenedTail(D d, const T* src, size_t rem) {
  HWY_ALIGN T buf[kMaxLanesF32] = {};
  std::memcpy(buf, src, rem * sizeof(T));
  return LoadWidened(d, buf);
}

template <typename T>
void Dequantize8Run(const T* src, float* dst, size_t n, float scale, int32_t zero_point) {
  const hn::ScalableTag<float> d;
  using V = hn::VFromD<decltype(d)>;
  const size_t lanes = hn::Lanes(d);
  const V s = hn::Set(d, scale), zp = hn::Set(d, static_cast<float>(zero_point));
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const V y0 = hn::Mul(hn::Sub(LoadWidened(d, src + i), zp), s);
    const V y1 = hn::Mul(hn::Sub(LoadWidened(d, src + i + lanes), zp), s);
    hn::StoreU(y0, d, dst + i);
    hn::StoreU(y1, d, dst + i + lanes);
  }
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(hn::Mul(hn::Sub(LoadWidened(d, src + i), zp), s), d, dst + i);
  if (i < n)
    StoreTail(d, hn::Mul(hn::Sub(LoadWidenedTail(d, src + i, n - i), zp), s), dst + i, n - i);
}

template <typename T>
void Dequantize8RunPerElement(const T* src, float* dst, size_t n, const float* scales,
                              const int32_t* zero_points) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  using V = hn::VFromD<decltype(d)>;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const V zp = hn::ConvertTo(d, hn::LoadU(di, zero_points + i));
    hn::StoreU(hn::Mul(hn::Sub(LoadWidened(d, src + i), zp), hn::LoadU(d, scales + i)), d, dst + i);
  }
  if (i < n) {
    const size_t rem = n - i;
    HWY_ALIGN int32_t zbuf[kMaxLanesF32] = {};
    std::memcpy(zbuf, zero_points + i, rem * sizeof(int32_t));
    const V zp = hn::ConvertTo(d, hn::Load(di, zbuf));
    const V y =
        hn::Mul(hn::Sub(LoadWidenedTail(d, src + i, rem), zp), LoadTail(d, scales + i, rem, 1.0f));
    StoreTail(d, y, dst + i, rem);
  }
}

// ---- dequantize, int32: float((double(x) - double(zp)) * double(s)), as the reference ----

// The emulated targets' DemoteTo(double -> float) saturates at +-FLT_MAX instead of rounding to
// inf as a conversion does, so they take the scalar loop.
#if HWY_HAVE_FLOAT64 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
#define ONYX_QUANTIZE_DOUBLE_LANES 1
#else
#define ONYX_QUANTIZE_DOUBLE_LANES 0
#endif

// One value exactly as the reference computes it (the scalar tail, and targets without double).
HWY_INLINE float Dequantize32One(int32_t x, float scale, int32_t zero_point) {
  return static_cast<float>((static_cast<double>(x) - static_cast<double>(zero_point)) *
                            static_cast<double>(scale));
}

void Dequantize32Run(const int32_t* src, float* dst, size_t n, float scale, int32_t zero_point) {
  size_t i = 0;
#if ONYX_QUANTIZE_DOUBLE_LANES
  const hn::ScalableTag<double> dd;
  const hn::Rebind<int32_t, decltype(dd)> di;
  const hn::Rebind<float, decltype(dd)> df;
  const size_t lanes = hn::Lanes(dd);
  const auto s = hn::Set(dd, static_cast<double>(scale));
  const auto zp = hn::Set(dd, static_cast<double>(zero_point));
  for (; i + lanes <= n; i += lanes) {
    const auto x = hn::PromoteTo(dd, hn::LoadU(di, src + i));
    hn::StoreU(hn::DemoteTo(df, hn::Mul(hn::Sub(x, zp), s)), df, dst + i);
  }
#endif
  for (; i < n; ++i) dst[i] = Dequantize32One(src[i], scale, zero_point);
}

void Dequantize32RunPerElement(const int32_t* src, float* dst, size_t n, const float* scales,
                               const int32_t* zero_points) {
  size_t i = 0;
#if ONYX_QUANTIZE_DOUBLE_LANES
  const hn::ScalableTag<double> dd;
  const hn::Rebind<int32_t, decltype(dd)> di;
  const hn::Rebind<float, decltype(dd)> df;
  const size_t lanes = hn::Lanes(dd);
  for (; i + lanes <= n; i += lanes) {
    const auto x = hn::PromoteTo(dd, hn::LoadU(di, src + i));
    const auto zp = hn::PromoteTo(dd, hn::LoadU(di, zero_points + i));
    const auto s = hn::PromoteTo(dd, hn::LoadU(df, scales + i));
    hn::StoreU(hn::DemoteTo(df, hn::Mul(hn::Sub(x, zp), s)), df, dst + i);
  }
#endif
  for (; i < n; ++i) dst[i] = Dequantize32One(src[i], scales[i], zero_points[i]);
}

#undef ONYX_QUANTIZE_DOUBLE_LANES

// ---- exported entry points (types as ints: 0 uint8, 1 int8, 2 int32) ----

void QuantizeRunF32Impl(const float* src, void* dst, int64_t n, int type, float scale,
                        int32_t zero_point) {
  if (type == 1) {
    QuantizeRun(src, static_cast<int8_t*>(dst), static_cast<size_t>(n), scale, zero_point);
  } else {
    QuantizeRun(src, static_cast<uint8_t*>(dst), static_cast<size_t>(n), scale, zero_point);
  }
}

void QuantizeRunPerElementF32Impl(const float* src, void* dst, int64_t n, int type,
                                  const float* scales, const int32_t* zero_points) {
  if (type == 1) {
    QuantizeRunPerElement(src, static_cast<int8_t*>(dst), static_cast<size_t>(n), scales,
                          zero_points);
  } else {
    QuantizeRunPerElement(src, static_cast<uint8_t*>(dst), static_cast<size_t>(n), scales,
                          zero_points);
  }
}

void DequantizeRunF32Impl(const void* src, int type, float* dst, int64_t n, float scale,
                          int32_t zero_point) {
  const size_t count = static_cast<size_t>(n);
  if (type == 0) {
    Dequantize8Run(static_cast<const uint8_t*>(src), dst, count, scale, zero_point);
  } else if (type == 1) {
    Dequantize8Run(static_cast<const int8_t*>(src), dst, count, scale, zero_point);
  } else {
    Dequantize32Run(static_cast<const int32_t*>(src), dst, count, scale, zero_point);
  }
}

void DequantizeRunPerElementF32Impl(const void* src, int type, float* dst, int64_t n,
                                    const float* scales, const int32_t* zero_points) {
  const size_t count = static_cast<size_t>(n);
  if (type == 0) {
    Dequantize8RunPerElement(static_cast<const uint8_t*>(src), dst, count, scales, zero_points);
  } else if (type == 1) {
    Dequantize8RunPerElement(static_cast<const int8_t*>(src), dst, count, scales, zero_points);
  } else {
    Dequantize32RunPerElement(static_cast<const int32_t*>(src), dst, count, scales, zero_points);
  }
}

// *lo = min(*lo, min x), *hi = max(*hi, max x) with std::min / std::max's comparisons, so a NaN
// element never replaces the running value (the reference's behaviour).
void MinMaxF32Impl(const float* src, int64_t n, float* lo, float* hi) {
  const hn::ScalableTag<float> d;
  using V = hn::VFromD<decltype(d)>;
  const size_t lanes = hn::Lanes(d);
  const size_t count = static_cast<size_t>(n);
  V mn0 = hn::Set(d, *lo), mn1 = mn0, mx0 = hn::Set(d, *hi), mx1 = mx0;
  size_t i = 0;
  for (; i + 2 * lanes <= count; i += 2 * lanes) {
    const V x0 = hn::LoadU(d, src + i), x1 = hn::LoadU(d, src + i + lanes);
    mn0 = hn::IfThenElse(hn::Lt(x0, mn0), x0, mn0);
    mx0 = hn::IfThenElse(hn::Lt(mx0, x0), x0, mx0);
    mn1 = hn::IfThenElse(hn::Lt(x1, mn1), x1, mn1);
    mx1 = hn::IfThenElse(hn::Lt(mx1, x1), x1, mx1);
  }
  for (; i + lanes <= count; i += lanes) {
    const V x = hn::LoadU(d, src + i);
    mn0 = hn::IfThenElse(hn::Lt(x, mn0), x, mn0);
    mx0 = hn::IfThenElse(hn::Lt(mx0, x), x, mx0);
  }
  HWY_ALIGN float buf[4][kMaxLanesF32];
  hn::Store(mn0, d, buf[0]);
  hn::Store(mn1, d, buf[1]);
  hn::Store(mx0, d, buf[2]);
  hn::Store(mx1, d, buf[3]);
  float mn = *lo, mx = *hi;
  for (size_t k = 0; k < lanes; ++k) {
    mn = std::min(mn, std::min(buf[0][k], buf[1][k]));
    mx = std::max(mx, std::max(buf[2][k], buf[3][k]));
  }
  for (; i < count; ++i) {
    mn = std::min(mn, src[i]);
    mx = std::max(mx, src[i]);
  }
  *lo = mn;
  *hi = mx;
}

}  // namespace
}  // namespace onyx::kernels::common::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::kernels::common {

HWY_EXPORT(QuantizeRunF32Impl);
HWY_EXPORT(QuantizeRunPerElementF32Impl);
HWY_EXPORT(DequantizeRunF32Impl);
HWY_EXPORT(DequantizeRunPerElementF32Impl);
HWY_EXPORT(MinMaxF32Impl);

void QuantizeRunF32(const float* src, void* dst, int64_t n, int type, float scale,
                    int32_t zero_point) {
  if (n > 0) HWY_DYNAMIC_DISPATCH(QuantizeRunF32Impl)(src, dst, n, type, scale, zero_point);
}

void QuantizeRunPerElementF32(const float* src, void* dst, int64_t n, int type, const float* scales,
                              const int32_t* zero_points) {
  if (n > 0)
    HWY_DYNAMIC_DISPATCH(QuantizeRunPerElementF32Impl)(src, dst, n, type, scales, zero_points);
}

void DequantizeRunF32(const void* src, int type, float* dst, int64_t n, float scale,
                      int32_t zero_point) {
  if (n > 0) HWY_DYNAMIC_DISPATCH(DequantizeRunF32Impl)(src, type, dst, n, scale, zero_point);
}

void DequantizeRunPerElementF32(const void* src, int type, float* dst, int64_t n,
                                const float* scales, const int32_t* zero_points) {
  if (n > 0)
    HWY_DYNAMIC_DISPATCH(DequantizeRunPerElementF32Impl)(src, type, dst, n, scales, zero_points);
}

void MinMaxF32(const float* src, int64_t n, float* lo, float* hi) {
  if (n > 0) HWY_DYNAMIC_DISPATCH(MinMaxF32Impl)(src, n, lo, hi);
}

}  // namespace onyx::kernels::common
#endif  // HWY_ONCE
