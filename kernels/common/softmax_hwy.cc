// Highway loops of Softmax and LogSoftmax in float32: contiguous rows, and [n, inner] slabs
// vectorised across inner (see simd_kernels.h for the contracts).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "kernels/common/simd_kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/common/softmax_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/common/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::kernels::common::HWY_NAMESPACE {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

template <class D>
float RowMax(D d, const float* src, size_t n) {
  const size_t lanes = hn::Lanes(d);
  auto m0 = hn::Set(d, kNegInf);
  auto m1 = m0;
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    m0 = hn::Max(m0, hn::LoadU(d, src + i));
    m1 = hn::Max(m1, hn::LoadU(d, src + i + lanes));
  }
  for (; i + lanes <= n; i += lanes) m0 = hn::Max(m0, hn::LoadU(d, src + i));
  if (i < n) m1 = hn::Max(m1, LoadTail(d, src + i, n - i, kNegInf));
  return hn::GetLane(hn::MaxOfLanes(d, hn::Max(m0, m1)));
}

// sum(exp(src - mx)); also stores the exponentials to dst when dst is not null.
template <class D>
float SumExp(D d, const float* src, float* dst, size_t n, float mx) {
  const size_t lanes = hn::Lanes(d);
  const auto vmax = hn::Set(d, mx);
  auto s0 = hn::Zero(d);
  auto s1 = hn::Zero(d);
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto e0 = ExpF32(d, hn::Sub(hn::LoadU(d, src + i), vmax));
    const auto e1 = ExpF32(d, hn::Sub(hn::LoadU(d, src + i + lanes), vmax));
    if (dst) {
      hn::StoreU(e0, d, dst + i);
      hn::StoreU(e1, d, dst + i + lanes);
    }
    s0 = hn::Add(s0, e0);
    s1 = hn::Add(s1, e1);
  }
  for (; i + lanes <= n; i += lanes) {
    const auto e = ExpF32(d, hn::Sub(hn::LoadU(d, src + i), vmax));
    if (dst) hn::StoreU(e, d, dst + i);
    s0 = hn::Add(s0, e);
  }
  if (i < n) {
    // Padding with -inf adds exp(-inf) = 0 (or NaN when mx is infinite, as every lane is then).
    const auto e = ExpF32(d, hn::Sub(LoadTail(d, src + i, n - i, kNegInf), vmax));
    if (dst) StoreTail(d, e, dst + i, n - i);
    s1 = hn::Add(s1, e);
  }
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
}

// dst[i] = src[i] * scale + shift.
template <class D>
void ScaleShift(D d, const float* src, float* dst, size_t n, float scale, float shift) {
  const size_t lanes = hn::Lanes(d);
  const auto vs = hn::Set(d, scale);
  const auto vb = hn::Set(d, shift);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(hn::MulAdd(hn::LoadU(d, src + i), vs, vb), d, dst + i);
  if (i < n) StoreTail(d, hn::MulAdd(LoadTail(d, src + i, n - i, 0.0f), vs, vb), dst + i, n - i);
}

void SoftmaxRowsF32Impl(SoftmaxKind kind, const float* src, float* dst, int64_t rows,
                        int64_t count) {
  const hn::ScalableTag<float> d;
  const size_t n = static_cast<size_t>(count);
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src + r * count;
    float* o = dst + r * count;
    const float mx = RowMax(d, s, n);
    if (kind == SoftmaxKind::kSoftmax) {
      const float sum = SumExp(d, s, o, n, mx);
      ScaleShift(d, o, o, n, 1.0f / sum, 0.0f);
    } else {
      // log softmax = x - (max + log(sum(exp(x - max)))), from x rather than the rounded exp.
      const float sum = SumExp(d, s, nullptr, n, mx);
      ScaleShift(d, s, o, n, 1.0f, -(mx + std::log(sum)));
    }
  }
}

void SoftmaxSlabF32Impl(SoftmaxKind kind, const float* src, float* dst, int64_t count, int64_t cols,
                        int64_t stride, float* scratch) {
  const hn::ScalableTag<float> d;
  using V = hn::VFromD<decltype(d)>;
  const size_t n = static_cast<size_t>(count);
  const size_t inner = static_cast<size_t>(cols);
  const size_t pitch = static_cast<size_t>(stride);
  const size_t lanes = hn::Lanes(d);
  float* mx = scratch;
  float* sum = scratch + inner;
  // Applies f(i, rem) to every vector position of a row of `inner` (rem = lanes except the tail).
  auto for_each_vector = [&](auto f) {
    size_t i = 0;
    for (; i + lanes <= inner; i += lanes) f(i, lanes);
    if (i < inner) f(i, inner - i);
  };
  auto load = [&](const float* p, size_t rem, float pad) -> V {
    return rem == lanes ? hn::LoadU(d, p) : LoadTail(d, p, rem, pad);
  };
  auto store = [&](V v, float* p, size_t rem) {
    if (rem == lanes) {
      hn::StoreU(v, d, p);
    } else {
      StoreTail(d, v, p, rem);
    }
  };
  for (size_t i = 0; i < inner; ++i) {
    mx[i] = kNegInf;
    sum[i] = 0.0f;
  }
  for (size_t k = 0; k < n; ++k) {
    const float* s = src + k * pitch;
    for_each_vector([&](size_t i, size_t rem) {
      store(hn::Max(load(mx + i, rem, kNegInf), load(s + i, rem, kNegInf)), mx + i, rem);
    });
  }
  for (size_t k = 0; k < n; ++k) {
    const float* s = src + k * pitch;
    float* o = dst + k * pitch;
    for_each_vector([&](size_t i, size_t rem) {
      const V e = ExpF32(d, hn::Sub(load(s + i, rem, 0.0f), load(mx + i, rem, 0.0f)));
      if (kind == SoftmaxKind::kSoftmax) store(e, o + i, rem);
      store(hn::Add(load(sum + i, rem, 0.0f), e), sum + i, rem);
    });
  }
  if (kind == SoftmaxKind::kSoftmax) {
    for (size_t i = 0; i < inner; ++i) sum[i] = 1.0f / sum[i];
    for (size_t k = 0; k < n; ++k) {
      float* o = dst + k * pitch;
      for_each_vector([&](size_t i, size_t rem) {
        store(hn::Mul(load(o + i, rem, 0.0f), load(sum + i, rem, 0.0f)), o + i, rem);
      });
    }
  } else {
    for (size_t i = 0; i < inner; ++i) sum[i] = mx[i] + std::log(sum[i]);
    for (size_t k = 0; k < n; ++k) {
      const float* s = src + k * pitch;
      float* o = dst + k * pitch;
      for_each_vector([&](size_t i, size_t rem) {
        store(hn::Sub(load(s + i, rem, 0.0f), load(sum + i, rem, 0.0f)), o + i, rem);
      });
    }
  }
}

}  // namespace
}  // namespace onyx::kernels::common::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::kernels::common {

HWY_EXPORT(SoftmaxRowsF32Impl);
HWY_EXPORT(SoftmaxSlabF32Impl);

void SoftmaxRowsF32(SoftmaxKind kind, const float* src, float* dst, int64_t rows, int64_t n) {
  if (rows > 0 && n > 0) HWY_DYNAMIC_DISPATCH(SoftmaxRowsF32Impl)(kind, src, dst, rows, n);
}

void SoftmaxSlabF32(SoftmaxKind kind, const float* src, float* dst, int64_t n, int64_t cols,
                    int64_t stride, float* scratch) {
  if (n > 0 && cols > 0)
    HWY_DYNAMIC_DISPATCH(SoftmaxSlabF32Impl)(kind, src, dst, n, cols, stride, scratch);
}

}  // namespace onyx::kernels::common
#endif  // HWY_ONCE
