// Highway loops of LayerNormalization rows and the per-channel affine map behind inference
// BatchNormalization, in float32 (see simd_kernels.h for the contracts).
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/common/simd_kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/common/normalization_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/common/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::kernels::common::HWY_NAMESPACE {
namespace {

// Sum of (src[i] - center)^2 (or of src[i] when !kCentered) in double, for i < n.
template <bool kCentered>
double SumDouble(const float* src, size_t n, double center) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const size_t lanes = hn::Lanes(dd);
  const auto c = hn::Set(dd, center);
  auto a0 = hn::Zero(dd), a1 = hn::Zero(dd);
  auto step = [&](auto acc, const float* p) {
    const auto v = hn::PromoteTo(dd, hn::LoadU(df, p));
    if (!kCentered) return hn::Add(acc, v);
    const auto diff = hn::Sub(v, c);
    return hn::MulAdd(diff, diff, acc);
  };
  size_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    a0 = step(a0, src + i);
    a1 = step(a1, src + i + lanes);
  }
  for (; i + lanes <= n; i += lanes) a0 = step(a0, src + i);
  double s = hn::GetLane(hn::SumOfLanes(dd, hn::Add(a0, a1)));
  for (; i < n; ++i) {
    const double v = static_cast<double>(src[i]) - (kCentered ? center : 0.0);
    s += kCentered ? v * v : v;
  }
  return s;
}

void LayerNormRowsF32Impl(const float* src, float* dst, int64_t rows, int64_t count,
                          const float* scale, const float* bias, double epsilon, float* mean_out,
                          float* inv_std_out) {
  const hn::ScalableTag<float> d;
  using V = hn::VFromD<decltype(d)>;
  const size_t n = static_cast<size_t>(count);
  const size_t lanes = hn::Lanes(d);
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src + r * count;
    float* o = dst + r * count;
    // Two passes in double, as the reference: the mean, then the centred sum of squares.
    const double mean = n > 0 ? SumDouble<false>(s, n, 0.0) / static_cast<double>(n) : 0.0;
    const double var = n > 0 ? SumDouble<true>(s, n, mean) / static_cast<double>(n) : 0.0;
    const double inv_std = 1.0 / std::sqrt(var + epsilon);
    const V m = hn::Set(d, static_cast<float>(mean));
    const V is = hn::Set(d, static_cast<float>(inv_std));
    auto norm = [&](V x, V w, V b) { return hn::MulAdd(hn::Mul(hn::Sub(x, m), is), w, b); };
    size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
      const V b = bias ? hn::LoadU(d, bias + i) : hn::Zero(d);
      hn::StoreU(norm(hn::LoadU(d, s + i), hn::LoadU(d, scale + i), b), d, o + i);
    }
    if (i < n) {
      const size_t rem = n - i;
      const V b = bias ? LoadTail(d, bias + i, rem, 0.0f) : hn::Zero(d);
      StoreTail(d, norm(LoadTail(d, s + i, rem, 0.0f), LoadTail(d, scale + i, rem, 0.0f), b), o + i,
                rem);
    }
    if (mean_out) mean_out[r] = static_cast<float>(mean);
    if (inv_std_out) inv_std_out[r] = static_cast<float>(inv_std);
  }
}

void ChannelAffineF32Impl(const float* src, float* dst, int64_t batch, int64_t channels,
                          int64_t inner_count, const float* scale, const float* shift) {
  const hn::ScalableTag<float> d;
  const size_t inner = static_cast<size_t>(inner_count);
  const size_t lanes = hn::Lanes(d);
  for (int64_t bc = 0; bc < batch * channels; ++bc) {
    const int64_t c = bc % channels;
    const auto a = hn::Set(d, scale[c]);
    const auto b = hn::Set(d, shift[c]);
    const float* s = src + bc * inner_count;
    float* o = dst + bc * inner_count;
    size_t i = 0;
    for (; i + lanes <= inner; i += lanes)
      hn::StoreU(hn::MulAdd(hn::LoadU(d, s + i), a, b), d, o + i);
    if (i < inner)
      StoreTail(d, hn::MulAdd(LoadTail(d, s + i, inner - i, 0.0f), a, b), o + i, inner - i);
  }
}

void ChannelAffineLastF32Impl(const float* src, float* dst, int64_t rows, int64_t channels_count,
                              const float* scale, const float* shift) {
  const hn::ScalableTag<float> d;
  const size_t channels = static_cast<size_t>(channels_count);
  const size_t lanes = hn::Lanes(d);
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src + r * channels_count;
    float* o = dst + r * channels_count;
    size_t c = 0;
    for (; c + lanes <= channels; c += lanes)
      hn::StoreU(hn::MulAdd(hn::LoadU(d, s + c), hn::LoadU(d, scale + c), hn::LoadU(d, shift + c)),
                 d, o + c);
    if (c < channels) {
      const size_t n = channels - c;
      StoreTail(d,
                hn::MulAdd(LoadTail(d, s + c, n, 0.0f), LoadTail(d, scale + c, n, 0.0f),
                           LoadTail(d, shift + c, n, 0.0f)),
                o + c, n);
    }
  }
}

}  // namespace
}  // namespace onyx::kernels::common::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::kernels::common {

HWY_EXPORT(LayerNormRowsF32Impl);
HWY_EXPORT(ChannelAffineF32Impl);
HWY_EXPORT(ChannelAffineLastF32Impl);

void LayerNormRowsF32(const float* src, float* dst, int64_t rows, int64_t cols, const float* scale,
                      const float* bias, double epsilon, float* mean_out, float* inv_std_out) {
  if (rows <= 0) return;
  const auto fn = HWY_DYNAMIC_DISPATCH(LayerNormRowsF32Impl);
  fn(src, dst, rows, cols, scale, bias, epsilon, mean_out, inv_std_out);
}

void ChannelAffineF32(const float* src, float* dst, int64_t batch, int64_t channels, int64_t inner,
                      const float* scale, const float* shift) {
  if (batch > 0 && channels > 0 && inner > 0)
    HWY_DYNAMIC_DISPATCH(ChannelAffineF32Impl)(src, dst, batch, channels, inner, scale, shift);
}

void ChannelAffineLastF32(const float* src, float* dst, int64_t rows, int64_t channels,
                          const float* scale, const float* shift) {
  if (rows > 0 && channels > 0)
    HWY_DYNAMIC_DISPATCH(ChannelAffineLastF32Impl)(src, dst, rows, channels, scale, shift);
}

}  // namespace onyx::kernels::common
#endif  // HWY_ONCE
