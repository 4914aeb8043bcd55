// Per-target float32 math and tail helpers for the Highway kernels in kernels/common. Included
// by the *_hwy.cc files after hwy/highway.h, once per target (hence the toggling include guard).
//
// Accuracy against libm (float): ExpF32 ~1 ulp, TanhF32 ~2 ulp, SigmoidF32 ~2 ulp, LogF32 ~1 ulp,
// ErfF32 <= 4.3e-7 absolute. Special values follow IEEE/libm: exp(+inf) = inf, exp(-inf) = 0,
// NaN in gives NaN out.
#if defined(ONYX_KERNELS_COMMON_SIMD_MATH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ONYX_KERNELS_COMMON_SIMD_MATH_INL_H_
#undef ONYX_KERNELS_COMMON_SIMD_MATH_INL_H_
#else
#define ONYX_KERNELS_COMMON_SIMD_MATH_INL_H_
#endif

#include <cstddef>
#include <cstring>
#include <limits>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kernels/common/simd_kernels.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::kernels::common::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Upper bound of the float lanes of any target: the size of the tail buffers.
constexpr size_t kMaxLanesF32 = HWY_MAX_BYTES / sizeof(float);

// A fused Relu or Clip of the convolution loops, with the ops' semantics: NaN and -0 pass
// through (x86 min/max would drop a NaN).
template <class D>
HWY_INLINE hn::VFromD<D> ApplyVectorActivation(D d, VectorActivation act, hn::VFromD<D> v,
                                               hn::VFromD<D> lo, hn::VFromD<D> hi) {
  if (act == VectorActivation::kRelu) {
    const auto zero = hn::Zero(d);
    v = hn::IfThenElse(hn::Lt(v, zero), zero, v);
  } else if (act == VectorActivation::kClip) {
    v = hn::IfThenElse(hn::Lt(v, lo), lo, v);  // min(max(v, lo), hi)
    v = hn::IfThenElse(hn::Gt(v, hi), hi, v);
  }
  return v;
}

// Loads the last `rem` (< Lanes(d)) elements of an array into a vector whose other lanes hold
// `pad`, without reading past p + rem.
template <class D>
HWY_INLINE hn::VFromD<D> LoadTail(D d, const float* p, size_t rem, float pad) {
  HWY_ALIGN float buf[kMaxLanesF32];
  for (size_t i = 0; i < hn::Lanes(d); ++i) buf[i] = pad;
  std::memcpy(buf, p, rem * sizeof(float));
  return hn::Load(d, buf);
}

// Stores the first `rem` lanes of v to p (no write past p + rem).
template <class D>
HWY_INLINE void StoreTail(D d, hn::VFromD<D> v, float* p, size_t rem) {
  HWY_ALIGN float buf[kMaxLanesF32];
  hn::Store(v, d, buf);
  std::memcpy(p, buf, rem * sizeof(float));
}

// exp(x): x = n ln2 + r with |r| <= ln2/2 and a degree-6 polynomial for e^r (Cephes expf), then
// 2^n applied as two factors so that results in the subnormal range and overflow to inf come out
// right. Inputs are clamped to [-104, 89] first (beyond, the result is 0 or inf anyway).
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V ExpF32(D d, V x) {
  const hn::RebindToSigned<D> di;
  const V xc = hn::Min(hn::Max(x, hn::Set(d, -104.0f)), hn::Set(d, 89.0f));
  const V n = hn::Round(hn::Mul(xc, hn::Set(d, 1.44269504088896341f)));
  V r = hn::NegMulAdd(n, hn::Set(d, 0.693359375f), xc);
  r = hn::NegMulAdd(n, hn::Set(d, -2.12194440e-4f), r);
  V p = hn::Set(d, 1.9875691500e-4f);
  p = hn::MulAdd(p, r, hn::Set(d, 1.3981999507e-3f));
  p = hn::MulAdd(p, r, hn::Set(d, 8.3334519073e-3f));
  p = hn::MulAdd(p, r, hn::Set(d, 4.1665795894e-2f));
  p = hn::MulAdd(p, r, hn::Set(d, 1.6666665459e-1f));
  p = hn::MulAdd(p, r, hn::Set(d, 5.0000001201e-1f));
  p = hn::MulAdd(hn::Mul(p, r), r, hn::Add(r, hn::Set(d, 1.0f)));
  const auto ni = hn::ConvertTo(di, n);
  const auto half = hn::ShiftRight<1>(ni);
  const auto bias = hn::Set(di, 127);
  const V s1 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(half, bias)));
  const V s2 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(hn::Sub(ni, half), bias)));
  return hn::IfThenElse(hn::IsNaN(x), x, hn::Mul(hn::Mul(p, s1), s2));
}

// log(x) with the IEEE special cases: log(+-0) = -inf, log(x < 0) = NaN, log(inf) = inf.
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V LogF32(D d, V x) {
  const V inf = hn::Set(d, std::numeric_limits<float>::infinity());
  V y = hn::Log(d, x);
  y = hn::IfThenElse(hn::Eq(x, inf), inf, y);
  y = hn::IfThenElse(hn::Eq(x, hn::Zero(d)), hn::Neg(inf), y);
  const auto invalid = hn::Or(hn::Lt(x, hn::Zero(d)), hn::IsNaN(x));
  return hn::IfThenElse(invalid, hn::Set(d, std::numeric_limits<float>::quiet_NaN()), y);
}

// 1 / (1 + e^-x), from e = exp(-|x|) so it never overflows: 1/(1+e) for x >= 0, e/(1+e) below.
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V SigmoidF32(D d, V x) {
  const V one = hn::Set(d, 1.0f);
  const V e = ExpF32(d, hn::Neg(hn::Abs(x)));
  const V s = hn::Div(one, hn::Add(one, e));
  return hn::IfThenElse(hn::Ge(x, hn::Zero(d)), s, hn::Mul(e, s));
}

// tanh (Cephes tanhf): an odd polynomial below |x| = 0.625, 1 - 2 / (exp(2|x|) + 1) above.
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V TanhF32(D d, V x) {
  const V one = hn::Set(d, 1.0f);
  const V a = hn::Abs(x);
  const V z = hn::Mul(x, x);
  V p = hn::Set(d, -5.70498872745e-3f);
  p = hn::MulAdd(p, z, hn::Set(d, 2.06390887954e-2f));
  p = hn::MulAdd(p, z, hn::Set(d, -5.37397155531e-2f));
  p = hn::MulAdd(p, z, hn::Set(d, 1.33314422036e-1f));
  p = hn::MulAdd(p, z, hn::Set(d, -3.33332819422e-1f));
  const V small = hn::MulAdd(hn::Mul(p, z), x, x);
  const V e = ExpF32(d, hn::Add(a, a));
  const V big = hn::Sub(one, hn::Div(hn::Set(d, 2.0f), hn::Add(e, one)));
  return hn::IfThenElse(hn::Lt(a, hn::Set(d, 0.625f)), small, hn::CopySign(big, x));
}

// erf(x) = x P(x^2) / Q(x^2) on [-4, 4] (a rational minimax fit; erf is +-1 in float beyond).
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V ErfF32(D d, V x) {
  const V xc = hn::Min(hn::Max(x, hn::Set(d, -4.0f)), hn::Set(d, 4.0f));
  const V x2 = hn::Mul(xc, xc);
  V p = hn::Set(d, -2.72614225801306e-10f);
  p = hn::MulAdd(p, x2, hn::Set(d, 2.77068142495902e-08f));
  p = hn::MulAdd(p, x2, hn::Set(d, -2.10102402082508e-06f));
  p = hn::MulAdd(p, x2, hn::Set(d, -5.69250639462346e-05f));
  p = hn::MulAdd(p, x2, hn::Set(d, -7.34990630326855e-04f));
  p = hn::MulAdd(p, x2, hn::Set(d, -2.95459980854025e-03f));
  p = hn::MulAdd(p, x2, hn::Set(d, -1.60960333262415e-02f));
  V q = hn::Set(d, -1.45660718464996e-05f);
  q = hn::MulAdd(q, x2, hn::Set(d, -2.13374055278905e-04f));
  q = hn::MulAdd(q, x2, hn::Set(d, -1.68282697438203e-03f));
  q = hn::MulAdd(q, x2, hn::Set(d, -7.37332916720468e-03f));
  q = hn::MulAdd(q, x2, hn::Set(d, -1.42647390514189e-02f));
  const V y = hn::Div(hn::Mul(p, xc), q);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

}  // namespace onyx::kernels::common::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
