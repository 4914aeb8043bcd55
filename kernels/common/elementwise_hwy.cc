// Highway loops of the elementwise float32 kernels: unary math and activations, and binary
// arithmetic on contiguous runs (see simd_kernels.h for the contracts).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "kernels/common/simd_kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/common/elementwise_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/common/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::kernels::common::HWY_NAMESPACE {
namespace {

// Applies f to every vector of src into dst; the tail goes through a padded buffer.
template <class D, class F>
HWY_INLINE void MapVectors(D d, const float* src, float* dst, size_t n, F f) {
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto v0 = hn::LoadU(d, src + i);
    const auto v1 = hn::LoadU(d, src + i + lanes);
    hn::StoreU(f(v0), d, dst + i);
    hn::StoreU(f(v1), d, dst + i + lanes);
  }
  for (; i + lanes <= n; i += lanes) hn::StoreU(f(hn::LoadU(d, src + i)), d, dst + i);
  if (i < n) StoreTail(d, f(LoadTail(d, src + i, n - i, 0.0f)), dst + i, n - i);
}

template <class D, class F>
HWY_NOINLINE void Unary(D d, const float* src, float* dst, size_t n, F f) {
  MapVectors(d, src, dst, n, f);
}

void UnaryF32Impl(UnaryOp op, const UnaryParams& p, const float* src, float* dst, int64_t count) {
  const hn::ScalableTag<float> d;
  using V = hn::VFromD<decltype(d)>;
  const size_t n = static_cast<size_t>(count);
  const V zero = hn::Zero(d);
  const V one = hn::Set(d, 1.0f);
  const V half = hn::Set(d, 0.5f);
  const V alpha = hn::Set(d, p.alpha);
  const V beta = hn::Set(d, p.beta);
  switch (op) {
    case UnaryOp::kRelu:  // x < 0 ? 0 : x keeps NaN and -0 as they are
      return Unary(d, src, dst, n, [&](V x) { return hn::IfThenElse(hn::Lt(x, zero), zero, x); });
    case UnaryOp::kLeakyRelu:
      return Unary(d, src, dst, n,
                   [&](V x) { return hn::IfThenElse(hn::Lt(x, zero), hn::Mul(alpha, x), x); });
    case UnaryOp::kClip:  // max then min: min > max gives max; a NaN bound is ignored
      return Unary(d, src, dst, n, [&](V x) {
        x = hn::IfThenElse(hn::Lt(x, alpha), alpha, x);
        return hn::IfThenElse(hn::Lt(beta, x), beta, x);
      });
    case UnaryOp::kSigmoid:
      return Unary(d, src, dst, n, [&](V x) { return SigmoidF32(d, x); });
    case UnaryOp::kTanh:
      return Unary(d, src, dst, n, [&](V x) { return TanhF32(d, x); });
    case UnaryOp::kErf:
      return Unary(d, src, dst, n, [&](V x) { return ErfF32(d, x); });
    case UnaryOp::kGelu: {
      const V sqrt_half = hn::Set(d, 0.7071067811865476f);
      return Unary(d, src, dst, n, [&](V x) {
        return hn::Mul(hn::Mul(half, x), hn::Add(one, ErfF32(d, hn::Mul(x, sqrt_half))));
      });
    }
    case UnaryOp::kGeluTanh: {
      const V sqrt_2_over_pi = hn::Set(d, 0.7978845608028654f);
      const V coeff = hn::Set(d, 0.044715f);
      return Unary(d, src, dst, n, [&](V x) {
        const V inner = hn::Mul(sqrt_2_over_pi, hn::MulAdd(hn::Mul(coeff, x), hn::Mul(x, x), x));
        return hn::Mul(hn::Mul(half, x), hn::Add(one, TanhF32(d, inner)));
      });
    }
    case UnaryOp::kHardSigmoid:
      return Unary(d, src, dst, n, [&](V x) {
        const V r = hn::MulAdd(alpha, x, beta);
        const V lo = hn::IfThenElse(hn::Lt(r, zero), zero, r);
        return hn::IfThenElse(hn::Gt(lo, one), one, lo);
      });
    case UnaryOp::kHardSwish: {
      const V sixth = hn::Set(d, 1.0f / 6.0f);
      return Unary(d, src, dst, n, [&](V x) {
        const V h = hn::MulAdd(x, sixth, half);
        const V r = hn::IfThenElse(hn::Gt(h, one), one, hn::IfThenElse(hn::Lt(h, zero), zero, h));
        return hn::Mul(x, r);
      });
    }
    case UnaryOp::kElu:
      return Unary(d, src, dst, n, [&](V x) {
        const V neg = hn::Mul(alpha, hn::Sub(ExpF32(d, hn::Min(x, zero)), one));
        return hn::IfThenElse(hn::Lt(x, zero), neg, x);
      });
    case UnaryOp::kSoftplus:  // max(x, 0) + log1p(exp(-|x|)) never overflows
      return Unary(d, src, dst, n, [&](V x) {
        const V e = ExpF32(d, hn::Neg(hn::Abs(x)));
        const V r = hn::Add(hn::IfThenElseZero(hn::Gt(x, zero), x), hn::Log1p(d, e));
        return hn::IfThenElse(hn::IsNaN(x), x, r);
      });
    case UnaryOp::kExp:
      return Unary(d, src, dst, n, [&](V x) { return ExpF32(d, x); });
    case UnaryOp::kLog:
      return Unary(d, src, dst, n, [&](V x) { return LogF32(d, x); });
    case UnaryOp::kSqrt:
      return Unary(d, src, dst, n, [&](V x) { return hn::Sqrt(x); });
    case UnaryOp::kNeg:
      return Unary(d, src, dst, n, [&](V x) { return hn::Neg(x); });
    case UnaryOp::kAbs:
      return Unary(d, src, dst, n, [&](V x) { return hn::Abs(x); });
    case UnaryOp::kReciprocal:
      return Unary(d, src, dst, n, [&](V x) { return hn::Div(one, x); });
    case UnaryOp::kMish: {
      // tanh(log(1 + e)) = e(e + 2) / (e(e + 2) + 2) with e = exp(x): no log or tanh. Above 20
      // the ratio is 1 in float; at -inf the product is -inf * 0 = NaN, as the reference gives.
      const V two = hn::Set(d, 2.0f);
      const V twenty = hn::Set(d, 20.0f);
      return Unary(d, src, dst, n, [&](V x) {
        const V e = ExpF32(d, x);
        const V m = hn::Mul(e, hn::Add(e, two));
        const V r = hn::Div(hn::Mul(x, m), hn::Add(m, two));
        return hn::IfThenElse(hn::Gt(x, twenty), x, r);
      });
    }
    case UnaryOp::kSquare:
      return Unary(d, src, dst, n, [&](V x) { return hn::Mul(x, x); });
    case UnaryOp::kCube:
      return Unary(d, src, dst, n, [&](V x) { return hn::Mul(hn::Mul(x, x), x); });
    case UnaryOp::kNanTo:
      return Unary(d, src, dst, n, [&](V x) { return hn::IfThenElse(hn::IsNaN(x), alpha, x); });
    case UnaryOp::kPowHalf: {
      const V inf = hn::Set(d, std::numeric_limits<float>::infinity());
      return Unary(d, src, dst, n, [&](V x) {
        const V r = hn::Sqrt(x);
        const V fixed = hn::IfThenElse(hn::Eq(x, hn::Neg(inf)), inf, r);
        return hn::IfThenElse(hn::Eq(x, zero), zero, fixed);  // -0 -> +0
      });
    }
  }
}

// numpy maximum/minimum: a NaN in b wins, then a NaN in a (the comparison is false).
template <class V>
HWY_INLINE V MaxNaN(V a, V b) {
  return hn::IfThenElse(hn::IsNaN(b), b, hn::IfThenElse(hn::Lt(a, b), b, a));
}
template <class V>
HWY_INLINE V MinNaN(V a, V b) {
  return hn::IfThenElse(hn::IsNaN(b), b, hn::IfThenElse(hn::Lt(b, a), b, a));
}

template <class D, class Op>
HWY_NOINLINE void Binary(D d, Operands layout, const float* a, const float* b, float* dst, size_t n,
                         Op op) {
  using V = hn::VFromD<D>;
  const size_t lanes = hn::Lanes(d);
  switch (layout) {
    case Operands::kVecVec: {
      size_t i = 0;
      for (; i + lanes <= n; i += lanes)
        hn::StoreU(op(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, dst + i);
      if (i < n) {
        const size_t rem = n - i;
        StoreTail(d, op(LoadTail(d, a + i, rem, 1.0f), LoadTail(d, b + i, rem, 1.0f)), dst + i,
                  rem);
      }
      return;
    }
    case Operands::kVecScalar: {
      const V bv = hn::Set(d, b[0]);
      MapVectors(d, a, dst, n, [&](V x) { return op(x, bv); });
      return;
    }
    case Operands::kScalarVec: {
      const V av = hn::Set(d, a[0]);
      MapVectors(d, b, dst, n, [&](V x) { return op(av, x); });
      return;
    }
  }
}

void BinaryF32Impl(BinaryOp op, Operands layout, const float* a, const float* b, float* dst,
                   int64_t count) {
  const hn::ScalableTag<float> d;
  using V = hn::VFromD<decltype(d)>;
  const size_t n = static_cast<size_t>(count);
  switch (op) {
    case BinaryOp::kAdd:
      return Binary(d, layout, a, b, dst, n, [](V x, V y) { return hn::Add(x, y); });
    case BinaryOp::kSub:
      return Binary(d, layout, a, b, dst, n, [](V x, V y) { return hn::Sub(x, y); });
    case BinaryOp::kMul:
      return Binary(d, layout, a, b, dst, n, [](V x, V y) { return hn::Mul(x, y); });
    case BinaryOp::kDiv:
      return Binary(d, layout, a, b, dst, n, [](V x, V y) { return hn::Div(x, y); });
    case BinaryOp::kMax:
      return Binary(d, layout, a, b, dst, n, [](V x, V y) { return MaxNaN(x, y); });
    case BinaryOp::kMin:
      return Binary(d, layout, a, b, dst, n, [](V x, V y) { return MinNaN(x, y); });
  }
}

}  // namespace
}  // namespace onyx::kernels::common::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::kernels::common {

HWY_EXPORT(UnaryF32Impl);
HWY_EXPORT(BinaryF32Impl);

void UnaryF32(UnaryOp op, const UnaryParams& params, const float* src, float* dst, int64_t n) {
  if (n > 0) HWY_DYNAMIC_DISPATCH(UnaryF32Impl)(op, params, src, dst, n);
}

void BinaryF32(BinaryOp op, Operands layout, const float* a, const float* b, float* dst,
               int64_t n) {
  if (n > 0) HWY_DYNAMIC_DISPATCH(BinaryF32Impl)(op, layout, a, b, dst, n);
}

}  // namespace onyx::kernels::common
#endif  // HWY_ONCE
