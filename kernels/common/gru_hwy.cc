// Highway loops of the GRU cell with ONNX's default activations (see simd_kernels.h for the
// contract).
#include <cstddef>
#include <cstdint>

#include "kernels/common/simd_kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/common/gru_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/common/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::kernels::common::HWY_NAMESPACE {
namespace {

// Calls f(j, rem) for each vector of [0, n): rem lanes, fewer in the tail.
template <class D, class F>
HWY_INLINE void ForEachVector(D d, size_t n, const F& f) {
  const size_t lanes = hn::Lanes(d);
  size_t j = 0;
  for (; j + lanes <= n; j += lanes) f(j, lanes);
  if (j < n) f(j, n - j);
}

template <class D>
HWY_INLINE hn::VFromD<D> Load(D d, const float* p, size_t rem) {
  return rem == hn::Lanes(d) ? hn::LoadU(d, p) : LoadTail(d, p, rem, 0.f);
}

template <class D>
HWY_INLINE void Store(D d, hn::VFromD<D> v, float* p, size_t rem) {
  if (rem == hn::Lanes(d)) {
    hn::StoreU(v, d, p);
  } else {
    StoreTail(d, v, p, rem);
  }
}

// (1 - z) h~ + z h, in the reference's order.
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V Blend(D d, V z, V cand, V h) {
  return hn::MulAdd(z, h, hn::Mul(hn::Sub(hn::Set(d, 1.f), z), cand));
}

void GruCellF32Impl(const float* xw, const float* hr, int64_t batch, int64_t hidden, float* h) {
  const hn::ScalableTag<float> d;
  const size_t n = static_cast<size_t>(hidden);
  for (int64_t b = 0; b < batch; ++b) {
    const float* x = xw + b * 3 * hidden;
    const float* r = hr + b * 3 * hidden;
    float* hb = h + b * hidden;
    ForEachVector(d, n, [&](size_t j, size_t rem) {
      const auto z = SigmoidF32(d, hn::Add(Load(d, x + j, rem), Load(d, r + j, rem)));
      const auto rg = SigmoidF32(d, hn::Add(Load(d, x + n + j, rem), Load(d, r + n + j, rem)));
      const auto cand =
          TanhF32(d, hn::MulAdd(rg, Load(d, r + 2 * n + j, rem), Load(d, x + 2 * n + j, rem)));
      Store(d, Blend(d, z, cand, Load(d, hb + j, rem)), hb + j, rem);
    });
  }
}

void GruResetF32Impl(const float* xw, float* hr, int64_t batch, int64_t hidden, const float* h,
                     float* rh) {
  const hn::ScalableTag<float> d;
  const size_t n = static_cast<size_t>(hidden);
  for (int64_t b = 0; b < batch; ++b) {
    const float* x = xw + b * 3 * hidden;
    float* r = hr + b * 3 * hidden;
    ForEachVector(d, n, [&](size_t j, size_t rem) {
      const auto z = SigmoidF32(d, hn::Add(Load(d, x + j, rem), Load(d, r + j, rem)));
      const auto rg = SigmoidF32(d, hn::Add(Load(d, x + n + j, rem), Load(d, r + n + j, rem)));
      Store(d, z, r + j, rem);
      Store(d, hn::Mul(rg, Load(d, h + b * hidden + j, rem)), rh + b * hidden + j, rem);
    });
  }
}

void GruUpdateF32Impl(const float* xw, const float* hr, int64_t batch, int64_t hidden, float* h) {
  const hn::ScalableTag<float> d;
  const size_t n = static_cast<size_t>(hidden);
  for (int64_t b = 0; b < batch; ++b) {
    const float* x = xw + b * 3 * hidden;
    const float* r = hr + b * 3 * hidden;
    float* hb = h + b * hidden;
    ForEachVector(d, n, [&](size_t j, size_t rem) {
      const auto cand =
          TanhF32(d, hn::Add(Load(d, x + 2 * n + j, rem), Load(d, r + 2 * n + j, rem)));
      Store(d, Blend(d, Load(d, r + j, rem), cand, Load(d, hb + j, rem)), hb + j, rem);
    });
  }
}

}  // namespace
}  // namespace onyx::kernels::common::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::kernels::common {

HWY_EXPORT(GruCellF32Impl);
HWY_EXPORT(GruResetF32Impl);
HWY_EXPORT(GruUpdateF32Impl);

void GruCellF32(const float* xw, const float* hr, int64_t batch, int64_t hidden, float* h) {
  HWY_DYNAMIC_DISPATCH(GruCellF32Impl)(xw, hr, batch, hidden, h);
}

void GruResetF32(const float* xw, float* hr, int64_t batch, int64_t hidden, const float* h,
                 float* rh) {
  HWY_DYNAMIC_DISPATCH(GruResetF32Impl)(xw, hr, batch, hidden, h, rh);
}

void GruUpdateF32(const float* xw, const float* hr, int64_t batch, int64_t hidden, float* h) {
  HWY_DYNAMIC_DISPATCH(GruUpdateF32Impl)(xw, hr, batch, hidden, h);
}

}  // namespace onyx::kernels::common
#endif  // HWY_ONCE
