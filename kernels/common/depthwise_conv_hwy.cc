// Highway loop of the channels-last depthwise convolution (see simd_kernels.h for the contract).
// Vectors run along the channels, which are contiguous in NHWC: each lane is one channel's filter,
// so a tap is one FMA per vector with no shuffles. Four outputs of a row share each weight load
// in the interior, where no tap needs a bounds check.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/common/simd_kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/common/depthwise_conv_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/common/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::kernels::common::HWY_NAMESPACE {
namespace {

// Loads and stores of `n` channels: whole vectors, or the last partial one of a row.
template <bool kFull, class D>
HWY_INLINE hn::VFromD<D> Load(D d, const float* p, size_t n) {
  if constexpr (kFull) {
    return hn::LoadU(d, p);
  } else {
    return LoadTail(d, p, n, 0.0f);
  }
}
template <bool kFull, class D>
HWY_INLINE void Store(D d, hn::VFromD<D> v, float* p, size_t n) {
  if constexpr (kFull) {
    hn::StoreU(v, d, p);
  } else {
    StoreTail(d, v, p, n);
  }
}

// The taps of one output row inside the image: ky in [lo, hi) and ox in [lo, hi) for which
// every kx is inside too.
struct TapRange {
  int64_t lo = 0, hi = 0;
};
// Taps k in [0, taps) with 0 <= origin + k * dilation < size.
TapRange InsideTaps(int64_t origin, int64_t taps, int64_t dilation, int64_t size) {
  TapRange r{0, taps};
  if (origin < 0) r.lo = (-origin + dilation - 1) / dilation;
  const int64_t last = size - 1 - origin;  // largest k * dilation still inside
  r.hi = last < 0 ? 0 : std::min(taps, last / dilation + 1);
  if (r.hi < r.lo) r.hi = r.lo;
  return r;
}

// One row's work shared by its outputs: the rows of taps inside the image. (No vectors: SVE's
// sizeless vector types cannot be struct members.)
struct RowContext {
  const DepthwiseConvArgs* a;
  int64_t iy0;  // input row of tap ky = 0
  TapRange ky;  // taps inside the image
};

// Adds the residual, applies the activation and stores output ox, channels [c, c + n).
template <bool kFull, class D>
HWY_INLINE void Finish(D d, const RowContext& r, hn::VFromD<D> v, int64_t ox, int64_t c, size_t n) {
  const DepthwiseConvArgs& a = *r.a;
  const int64_t off = ox * a.geometry.channels + c;
  if (a.z) v = hn::Add(v, Load<kFull>(d, a.z + off, n));
  Store<kFull>(
      d, ApplyVectorActivation(d, a.activation, v, hn::Set(d, a.clip_lo), hn::Set(d, a.clip_hi)),
      a.y + off, n);
}

// Output ox, channels [c, c + n), with a bounds check per tap (the borders).
template <bool kFull, class D>
HWY_INLINE void Single(D d, const RowContext& r, int64_t ox, int64_t c, size_t n) {
  const DepthwiseConvArgs& a = *r.a;
  const DepthwiseGeometry& g = a.geometry;
  const int64_t cs = g.channels;  // stride between pixels
  const int64_t ix0 = ox * g.stride_w - g.pad_left;
  const TapRange kx = InsideTaps(ix0, g.kernel_w, g.dilation_w, g.in_w);
  auto acc = hn::LoadU(d, a.bias + c);  // padded: a whole vector is always there
  for (int64_t i = r.ky.lo; i < r.ky.hi; ++i) {
    const float* row = a.x + (r.iy0 + i * g.dilation_h) * g.in_w * cs + c;
    const float* w = a.weights + i * g.kernel_w * a.weight_stride + c;
    for (int64_t j = kx.lo; j < kx.hi; ++j)
      acc = hn::MulAdd(Load<kFull>(d, row + (ix0 + j * g.dilation_w) * cs, n),
                       hn::LoadU(d, w + j * a.weight_stride), acc);
  }
  Finish<kFull>(d, r, acc, ox, c, n);
}

// Outputs ox..ox+3, channels [c, c + n), every tap inside the row: each weight load serves four.
template <bool kFull, class D>
HWY_INLINE void Four(D d, const RowContext& r, int64_t ox, int64_t c, size_t n) {
  const DepthwiseConvArgs& a = *r.a;
  const DepthwiseGeometry& g = a.geometry;
  const int64_t cs = g.channels;
  const int64_t step = g.stride_w * cs;  // between neighbouring outputs' taps
  const int64_t ix0 = ox * g.stride_w - g.pad_left;
  auto acc0 = hn::LoadU(d, a.bias + c);
  auto acc1 = acc0, acc2 = acc0, acc3 = acc0;
  for (int64_t i = r.ky.lo; i < r.ky.hi; ++i) {
    const float* p = a.x + ((r.iy0 + i * g.dilation_h) * g.in_w + ix0) * cs + c;
    const float* w = a.weights + i * g.kernel_w * a.weight_stride + c;
    for (int64_t j = 0; j < g.kernel_w; ++j, p += g.dilation_w * cs) {
      const auto wv = hn::LoadU(d, w + j * a.weight_stride);
      acc0 = hn::MulAdd(Load<kFull>(d, p, n), wv, acc0);
      acc1 = hn::MulAdd(Load<kFull>(d, p + step, n), wv, acc1);
      acc2 = hn::MulAdd(Load<kFull>(d, p + 2 * step, n), wv, acc2);
      acc3 = hn::MulAdd(Load<kFull>(d, p + 3 * step, n), wv, acc3);
    }
  }
  Finish<kFull>(d, r, acc0, ox, c, n);
  Finish<kFull>(d, r, acc1, ox + 1, c, n);
  Finish<kFull>(d, r, acc2, ox + 2, c, n);
  Finish<kFull>(d, r, acc3, ox + 3, c, n);
}

// Outputs ox..ox+3 for four whole vectors of channels from c, every tap inside the row. Sixteen
// independent accumulators hide the FMA latency: with four (one vector per pass) the dependent
// chains of 9 taps ran at 2.5 cycles per FMA.
template <class D>
HWY_INLINE void FourByFour(D d, const RowContext& r, int64_t ox, int64_t c) {
  const DepthwiseConvArgs& a = *r.a;
  const DepthwiseGeometry& g = a.geometry;
  const int64_t cs = g.channels, ws = a.weight_stride;
  const int64_t step = g.stride_w * cs, tap_step = g.dilation_w * cs;
  const int64_t kw = g.kernel_w;
  const size_t lanes = hn::Lanes(d);
  const float* bias = a.bias + c;
  auto a00 = hn::LoadU(d, bias), a01 = hn::LoadU(d, bias + lanes);
  auto a02 = hn::LoadU(d, bias + 2 * lanes), a03 = hn::LoadU(d, bias + 3 * lanes);
  auto a10 = a00, a11 = a01, a12 = a02, a13 = a03;
  auto a20 = a00, a21 = a01, a22 = a02, a23 = a03;
  auto a30 = a00, a31 = a01, a32 = a02, a33 = a03;
  const int64_t ix0 = ox * g.stride_w - g.pad_left;
  for (int64_t i = r.ky.lo; i < r.ky.hi; ++i) {
    const float* p = a.x + ((r.iy0 + i * g.dilation_h) * g.in_w + ix0) * cs + c;
    const float* w = a.weights + i * kw * ws + c;
    for (int64_t j = 0; j < kw; ++j, p += tap_step, w += ws) {
      const auto w0 = hn::LoadU(d, w), w1 = hn::LoadU(d, w + lanes);
      const auto w2 = hn::LoadU(d, w + 2 * lanes), w3 = hn::LoadU(d, w + 3 * lanes);
#define ONYX_DW_OUTPUT(q, x0, x1, x2, x3)               \
  x0 = hn::MulAdd(hn::LoadU(d, q), w0, x0);             \
  x1 = hn::MulAdd(hn::LoadU(d, q + lanes), w1, x1);     \
  x2 = hn::MulAdd(hn::LoadU(d, q + 2 * lanes), w2, x2); \
  x3 = hn::MulAdd(hn::LoadU(d, q + 3 * lanes), w3, x3);
      ONYX_DW_OUTPUT(p, a00, a01, a02, a03)
      ONYX_DW_OUTPUT(p + step, a10, a11, a12, a13)
      ONYX_DW_OUTPUT(p + 2 * step, a20, a21, a22, a23)
      ONYX_DW_OUTPUT(p + 3 * step, a30, a31, a32, a33)
#undef ONYX_DW_OUTPUT
    }
  }
  const int64_t l = static_cast<int64_t>(lanes);
  Finish<true>(d, r, a00, ox, c, lanes);
  Finish<true>(d, r, a01, ox, c + l, lanes);
  Finish<true>(d, r, a02, ox, c + 2 * l, lanes);
  Finish<true>(d, r, a03, ox, c + 3 * l, lanes);
  Finish<true>(d, r, a10, ox + 1, c, lanes);
  Finish<true>(d, r, a11, ox + 1, c + l, lanes);
  Finish<true>(d, r, a12, ox + 1, c + 2 * l, lanes);
  Finish<true>(d, r, a13, ox + 1, c + 3 * l, lanes);
  Finish<true>(d, r, a20, ox + 2, c, lanes);
  Finish<true>(d, r, a21, ox + 2, c + l, lanes);
  Finish<true>(d, r, a22, ox + 2, c + 2 * l, lanes);
  Finish<true>(d, r, a23, ox + 2, c + 3 * l, lanes);
  Finish<true>(d, r, a30, ox + 3, c, lanes);
  Finish<true>(d, r, a31, ox + 3, c + l, lanes);
  Finish<true>(d, r, a32, ox + 3, c + 2 * l, lanes);
  Finish<true>(d, r, a33, ox + 3, c + 3 * l, lanes);
}

// Groups of 64 channels outer, then pixels, then the group's vectors: a group's taps for four
// outputs (3 rows x 6 pixels x 256 bytes for 3x3) stay in L1 while the pixels advance, and
// each pixel's 256 bytes are whole cache lines read in address order. All channels per pixel
// overflowed L1 (C = 384: 2x slower); one vector per pass defeated the prefetchers.
void DepthwiseConvRowF32Impl(const DepthwiseConvArgs& a) {
  using D = hn::ScalableTag<float>;
  const D d;
  const DepthwiseGeometry& g = a.geometry;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  RowContext r{&a, a.oy * g.stride_h - g.pad_top, {}};
  r.ky = InsideTaps(r.iy0, g.kernel_h, g.dilation_h, g.in_h);
  // Outputs whose taps all fall inside the row: ox in [inner_lo, inner_hi).
  const int64_t inner_lo = std::min(g.out_w, (g.pad_left + g.stride_w - 1) / g.stride_w);
  const int64_t span = g.in_w - 1 + g.pad_left - (g.kernel_w - 1) * g.dilation_w;
  const int64_t inner_hi =
      std::max(inner_lo, span < 0 ? int64_t{0} : std::min(g.out_w, span / g.stride_w + 1));
  for (int64_t c0 = a.c_begin; c0 < a.c_end; c0 += kDepthwiseChannelPad) {
    const int64_t c1 = std::min(a.c_end, c0 + kDepthwiseChannelPad);
    const int64_t full_end = c0 + (c1 - c0) / lanes * lanes;
    const size_t tail = static_cast<size_t>(c1 - full_end);
    auto single = [&](int64_t ox) {
      for (int64_t c = c0; c < full_end; c += lanes) Single<true>(d, r, ox, c, lanes);
      if (tail) Single<false>(d, r, ox, full_end, tail);
    };
    int64_t ox = 0;
    for (; ox < inner_lo; ++ox) single(ox);
    for (; ox + 4 <= inner_hi; ox += 4) {
      int64_t c = c0;
      for (; c + 4 * lanes <= full_end; c += 4 * lanes) FourByFour(d, r, ox, c);
      for (; c < full_end; c += lanes) Four<true>(d, r, ox, c, lanes);
      if (tail) Four<false>(d, r, ox, full_end, tail);
    }
    for (; ox < g.out_w; ++ox) single(ox);
  }
}

}  // namespace
}  // namespace onyx::kernels::common::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::kernels::common {

HWY_EXPORT(DepthwiseConvRowF32Impl);

void DepthwiseConvRowF32(const DepthwiseConvArgs& args) {
  if (args.c_begin < args.c_end && args.geometry.out_w > 0)
    HWY_DYNAMIC_DISPATCH(DepthwiseConvRowF32Impl)(args);
}

}  // namespace onyx::kernels::common
#endif  // HWY_ONCE
