// Highway loop of the LSTM cell with ONNX's default activations (see simd_kernels.h for the
// contract).
#include <cstddef>
#include <cstdint>

#include "kernels/common/simd_kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/common/lstm_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/common/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::kernels::common::HWY_NAMESPACE {
namespace {

template <class D, class V = hn::VFromD<D>>
HWY_INLINE void Cell(D d, const float* g, size_t hidden, size_t j, size_t rem, float* c, float* h) {
  const bool full = rem == hn::Lanes(d);
  const auto load = [&](const float* p) {
    return full ? hn::LoadU(d, p) : LoadTail(d, p, rem, 0.f);
  };
  const V i = SigmoidF32(d, load(g + j));
  const V o = SigmoidF32(d, load(g + hidden + j));
  const V f = SigmoidF32(d, load(g + 2 * hidden + j));
  const V cand = TanhF32(d, load(g + 3 * hidden + j));
  const V c_new = hn::MulAdd(f, load(c + j), hn::Mul(i, cand));
  const V h_new = hn::Mul(o, TanhF32(d, c_new));
  if (full) {
    hn::StoreU(c_new, d, c + j);
    hn::StoreU(h_new, d, h + j);
  } else {
    StoreTail(d, c_new, c + j, rem);
    StoreTail(d, h_new, h + j, rem);
  }
}

void LstmCellF32Impl(const float* gates, int64_t batch, int64_t hidden, float* c, float* h) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d), n = static_cast<size_t>(hidden);
  for (int64_t b = 0; b < batch; ++b) {
    const float* g = gates + b * 4 * hidden;
    float* cb = c + b * hidden;
    float* hb = h + b * hidden;
    size_t j = 0;
    for (; j + lanes <= n; j += lanes) Cell(d, g, n, j, lanes, cb, hb);
    if (j < n) Cell(d, g, n, j, n - j, cb, hb);
  }
}

}  // namespace
}  // namespace onyx::kernels::common::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::kernels::common {

HWY_EXPORT(LstmCellF32Impl);

void LstmCellF32(const float* gates, int64_t batch, int64_t hidden, float* c, float* h) {
  HWY_DYNAMIC_DISPATCH(LstmCellF32Impl)(gates, batch, hidden, c, h);
}

}  // namespace onyx::kernels::common
#endif  // HWY_ONCE
