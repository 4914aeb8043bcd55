// Highway loops of the channels-last Winograd convolution F(2x2, 3x3) (contract in
// simd_kernels.h). A block of output tiles goes through three passes that stay in L2: the input
// transform writes V[16][tiles][C], sixteen small GEMMs (one per transformed position) multiply V
// by the packed weights U into M[16][tiles][64] one 64-channel panel at a time, and the output
// transform turns each tile's 16 values into its 2x2 outputs, adding bias, residual and activation.
// Vectors run along the channels, contiguous in NHWC, so no transform needs a shuffle.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/common/simd_kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/common/winograd_conv_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/common/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::kernels::common::HWY_NAMESPACE {
namespace {

constexpr int64_t kPanel = kWinogradPanel;

template <class D>
HWY_INLINE hn::VFromD<D> LoadPart(D d, const float* p, size_t n) {
  return n == hn::Lanes(d) ? hn::LoadU(d, p) : LoadTail(d, p, n, 0.0f);
}
template <class D>
HWY_INLINE void StorePart(D d, hn::VFromD<D> v, float* p, size_t n) {
  if (n == hn::Lanes(d)) {
    hn::StoreU(v, d, p);
  } else {
    StoreTail(d, v, p, n);
  }
}

// Where a tile's input patch and outputs are.
struct TileSite {
  const float* x;  // the tile's image
  float* y;
  const float* z;  // residual image, or null
  int64_t iy0, ix0, oy0, ox0;
};
TileSite Locate(const WinogradConvArgs& a, int64_t tile) {
  const int64_t tiles_w = (a.out_w + 1) / 2, per_image = (a.out_h + 1) / 2 * tiles_w;
  const int64_t n = tile / per_image, t = tile % per_image;
  TileSite s;
  s.x = a.x + n * a.in_h * a.in_w * a.channels;
  s.y = a.y + n * a.out_h * a.out_w * a.out_channels;
  s.z = a.z ? a.z + n * a.out_h * a.out_w * a.out_channels : nullptr;
  s.oy0 = t / tiles_w * 2;
  s.ox0 = t % tiles_w * 2;
  s.iy0 = s.oy0 - a.pad_top;
  s.ix0 = s.ox0 - a.pad_left;
  return s;
}

// (d0, d1, d2, d3) -> (d0 - d2, d1 + d2, d2 - d1, d1 - d3): B^T of F(2, 3) along one axis.
template <class V>
HWY_INLINE void InputTransform1D(V& d0, V& d1, V& d2, V& d3) {
  const V t0 = hn::Sub(d0, d2), t1 = hn::Add(d1, d2), t2 = hn::Sub(d2, d1), t3 = hn::Sub(d1, d3);
  d0 = t0;
  d1 = t1;
  d2 = t2;
  d3 = t3;
}

// V[p][t][c] for the 16 positions p of tile `t` (local index in the block) and channels
// [c, c + n): B^T d B of the tile's 4x4 input patch, zeros outside the image.
template <class D>
HWY_INLINE void InputTile(D d, const WinogradConvArgs& a, const TileSite& s, int64_t c, size_t n,
                          float* v) {
  using V = hn::VFromD<D>;
  const int64_t C = a.channels;
  auto at = [&](int64_t i, int64_t j) -> V {
    const int64_t iy = s.iy0 + i, ix = s.ix0 + j;
    if (iy < 0 || iy >= a.in_h || ix < 0 || ix >= a.in_w) return hn::Zero(d);
    return LoadPart(d, s.x + (iy * a.in_w + ix) * C + c, n);
  };
  // Rows of the patch, transformed along x as they are loaded.
  V r00 = at(0, 0), r01 = at(0, 1), r02 = at(0, 2), r03 = at(0, 3);
  InputTransform1D(r00, r01, r02, r03);
  V r10 = at(1, 0), r11 = at(1, 1), r12 = at(1, 2), r13 = at(1, 3);
  InputTransform1D(r10, r11, r12, r13);
  V r20 = at(2, 0), r21 = at(2, 1), r22 = at(2, 2), r23 = at(2, 3);
  InputTransform1D(r20, r21, r22, r23);
  V r30 = at(3, 0), r31 = at(3, 1), r32 = at(3, 2), r33 = at(3, 3);
  InputTransform1D(r30, r31, r32, r33);
  // Then along y, column by column; position p = 4 * row + column.
  InputTransform1D(r00, r10, r20, r30);
  InputTransform1D(r01, r11, r21, r31);
  InputTransform1D(r02, r12, r22, r32);
  InputTransform1D(r03, r13, r23, r33);
  const int64_t ps = a.block_tiles * C;  // stride between positions
  StorePart(d, r00, v + 0 * ps, n);
  StorePart(d, r01, v + 1 * ps, n);
  StorePart(d, r02, v + 2 * ps, n);
  StorePart(d, r03, v + 3 * ps, n);
  StorePart(d, r10, v + 4 * ps, n);
  StorePart(d, r11, v + 5 * ps, n);
  StorePart(d, r12, v + 6 * ps, n);
  StorePart(d, r13, v + 7 * ps, n);
  StorePart(d, r20, v + 8 * ps, n);
  StorePart(d, r21, v + 9 * ps, n);
  StorePart(d, r22, v + 10 * ps, n);
  StorePart(d, r23, v + 11 * ps, n);
  StorePart(d, r30, v + 12 * ps, n);
  StorePart(d, r31, v + 13 * ps, n);
  StorePart(d, r32, v + 14 * ps, n);
  StorePart(d, r33, v + 15 * ps, n);
}

#if !HWY_HAVE_SCALABLE
// m[r][j] (+)= sum over c < cc of v[r][c] * u[c][j] for kRows rows (v's rows `vs` floats apart)
// and kVecs vectors of columns, accumulating onto m unless kFirst: the accumulators stay in
// registers (6 x 4 of 32 on AVX-512; 6 x 2 of 16 on AVX2).
template <size_t kRows, size_t kVecs, bool kFirst, class D>
HWY_INLINE void GemmTile(D d, const float* HWY_RESTRICT v, int64_t vs, int64_t cc,
                         const float* HWY_RESTRICT u, float* HWY_RESTRICT m) {
  using V = hn::VFromD<D>;
  constexpr size_t N = hn::MaxLanes(D());
  V acc[kRows][kVecs];
  for (size_t r = 0; r < kRows; ++r)
    for (size_t j = 0; j < kVecs; ++j)
      acc[r][j] = kFirst ? hn::Zero(d) : hn::Load(d, m + r * kPanel + j * N);
  for (int64_t c = 0; c < cc; ++c) {
    V b[kVecs];
    for (size_t j = 0; j < kVecs; ++j) b[j] = hn::Load(d, u + c * kPanel + j * N);
    for (size_t r = 0; r < kRows; ++r) {
      const V s = hn::Set(d, v[static_cast<int64_t>(r) * vs + c]);
      for (size_t j = 0; j < kVecs; ++j) acc[r][j] = hn::MulAdd(s, b[j], acc[r][j]);
    }
  }
  for (size_t r = 0; r < kRows; ++r)
    for (size_t j = 0; j < kVecs; ++j) hn::Store(acc[r][j], d, m + r * kPanel + j * N);
}

// Registers allow 6 rows of 4 vectors on targets with 32 of them, 6 rows of 2 with 16.
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_SSSE3 || \
    HWY_TARGET == HWY_SSE2
constexpr size_t kGemmVecs = 2;
#else
constexpr size_t kGemmVecs = 4;
#endif

// Rows [r, r + kRows) for one chunk of channels, every column of the panel.
template <size_t kRows, bool kFirst, class D>
HWY_INLINE void GemmRows(D d, const float* v, int64_t vs, int64_t cc, const float* u, float* m) {
  constexpr size_t N = hn::MaxLanes(D());
  constexpr size_t kVecs = kGemmVecs * N <= kPanel ? kGemmVecs : 1;
  static_assert(kPanel % (kVecs * N) == 0, "the panel must split into whole vectors");
  for (size_t col = 0; col < kPanel; col += kVecs * N)
    GemmTile<kRows, kVecs, kFirst>(d, v, vs, cc, u + col, m + col);
}

template <bool kFirst, class D>
void GemmChunk(D d, const float* v, int64_t rows, int64_t vs, int64_t cc, const float* u,
               float* m) {
  int64_t r = 0;
  for (; r + 6 <= rows; r += 6) GemmRows<6, kFirst>(d, v + r * vs, vs, cc, u, m + r * kPanel);
  const float* vr = v + r * vs;
  float* mr = m + r * kPanel;
  switch (rows - r) {
    case 5:
      GemmRows<5, kFirst>(d, vr, vs, cc, u, mr);
      break;
    case 4:
      GemmRows<4, kFirst>(d, vr, vs, cc, u, mr);
      break;
    case 3:
      GemmRows<3, kFirst>(d, vr, vs, cc, u, mr);
      break;
    case 2:
      GemmRows<2, kFirst>(d, vr, vs, cc, u, mr);
      break;
    case 1:
      GemmRows<1, kFirst>(d, vr, vs, cc, u, mr);
      break;
    default:
      break;
  }
}

// One position's GEMM for `rows` tiles: M[rows][64] = V[rows][C] * U[C][64]. Where a row block
// takes several column passes (AVX2), the channels go in chunks of 64, so that a 64 x 64 chunk of
// weights (16 KiB) stays in L1 through every pass and row block: over all channels at once, the
// passes re-streamed a position's weights (C x 64) for C = 512, and ResNet-50's 7x7 layers ran
// 1.4x slower. With one pass (AVX-512) chunks measured slower: 0.87 against 0.78 ms on one of them.
template <class D>
void Gemm(D d, const float* v, int64_t rows, int64_t cs, const float* u, float* m) {
  constexpr size_t N = hn::MaxLanes(D());
  const int64_t chunk = kGemmVecs * N < kPanel ? 64 : cs;
  for (int64_t c0 = 0; c0 < cs; c0 += chunk) {
    const int64_t cc = std::min(chunk, cs - c0);
    if (c0 == 0) {
      GemmChunk<true>(d, v, rows, cs, cc, u, m);
    } else {
      GemmChunk<false>(d, v + c0, rows, cs, cc, u + c0 * kPanel, m);
    }
  }
}
#else
// Scalable vectors cannot live in arrays: one accumulator at a time.
template <class D>
void Gemm(D d, const float* v, int64_t rows, int64_t cs, const float* u, float* m) {
  const size_t N = hn::Lanes(d);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t col = 0; col < kPanel; col += static_cast<int64_t>(N)) {
      auto acc = hn::Zero(d);
      for (int64_t c = 0; c < cs; ++c)
        acc = hn::MulAdd(hn::Set(d, v[r * cs + c]), hn::LoadU(d, u + c * kPanel + col), acc);
      hn::StoreU(acc, d, m + r * kPanel + col);
    }
}
#endif

// (m0, m1, m2, m3) -> (m0 + m1 + m2, m1 - m2 - m3): A^T of F(2, 3) along one axis.
template <class V>
HWY_INLINE void OutputTransform1D(V m0, V m1, V m2, V m3, V& o0, V& o1) {
  o0 = hn::Add(hn::Add(m0, m1), m2);
  o1 = hn::Sub(hn::Sub(m1, m2), m3);
}

template <class D>
HWY_INLINE hn::VFromD<D> Activate(D d, const WinogradConvArgs& a, hn::VFromD<D> v) {
  return ApplyVectorActivation(d, a.activation, v, hn::Set(d, a.clip_lo), hn::Set(d, a.clip_hi));
}

// act(bias + z + direct sum) for output pixel (oy, ox) and channels [k, k + n), into y: the
// path for outputs that came out non-finite, where the transforms would have spread an Inf or
// NaN of the input (or an overflow) to neighbours whose direct sums are finite, or turned an
// Inf into NaN.
template <class D>
HWY_NOINLINE void DirectPixel(D d, const WinogradConvArgs& a, const TileSite& s, int64_t oy,
                              int64_t ox, int64_t k, size_t n, float* y) {
  HWY_ALIGN float sum[kMaxLanesF32];
  const int64_t C = a.channels, pixel = oy * a.out_w + ox;
  for (size_t i = 0; i < n; ++i) {
    const int64_t kk = k + static_cast<int64_t>(i);
    float acc = 0.0f;
    for (int64_t ky = 0; ky < 3; ++ky) {
      const int64_t iy = oy - a.pad_top + ky;
      if (iy < 0 || iy >= a.in_h) continue;
      for (int64_t kx = 0; kx < 3; ++kx) {
        const int64_t ix = ox - a.pad_left + kx;
        if (ix < 0 || ix >= a.in_w) continue;
        const float* xp = s.x + (iy * a.in_w + ix) * C;
        const float* wp = a.direct_weights + kk * C * 9 + ky * 3 + kx;
        for (int64_t c = 0; c < C; ++c) acc += xp[c] * wp[c * 9];
      }
    }
    sum[i] = a.bias[kk] + acc + (s.z ? s.z[pixel * a.out_channels + kk] : 0.0f);
  }
  StorePart(d, Activate(d, a, LoadTail(d, sum, n, 0.0f)), y, n);
}

// Output (oy, ox) = y + bias (+ z), activated, channels [k, k + n); skipped outside the map.
template <class D>
HWY_INLINE void StoreOutput(D d, const WinogradConvArgs& a, const TileSite& s, int64_t oy,
                            int64_t ox, int64_t k, size_t n, hn::VFromD<D> y) {
  if (oy >= a.out_h || ox >= a.out_w) return;
  y = hn::Add(y, hn::Load(d, a.bias + k));
  const int64_t pixel = oy * a.out_w + ox;
  if (s.z) y = hn::Add(y, LoadPart(d, s.z + pixel * a.out_channels + k, n));
  float* dst = s.y + pixel * a.out_channels + k;
  if (HWY_UNLIKELY(!hn::AllTrue(d, hn::IsFinite(y)))) {
    DirectPixel(d, a, s, oy, ox, k, n, dst);
    return;
  }
  StorePart(d, Activate(d, a, y), dst, n);
}

// The 2x2 outputs of a tile for channels [k, k + n) of the panel starting at channel k0; m is the
// tile's first row of M. (No arrays of vectors: scalable vectors cannot live in them.)
template <class D>
HWY_INLINE void OutputTile(D d, const WinogradConvArgs& a, const TileSite& s, const float* m,
                           int64_t k0, int64_t k, size_t n) {
  using V = hn::VFromD<D>;
  const int64_t ps = a.block_tiles * kPanel;  // stride between positions
  const float* mk = m + (k - k0);
  auto ld = [&](int p) { return hn::Load(d, mk + p * ps); };
  // Along x for each of the four rows of positions, then along y.
  V a0, b0, a1, b1, a2, b2, a3, b3;
  OutputTransform1D(ld(0), ld(1), ld(2), ld(3), a0, b0);
  OutputTransform1D(ld(4), ld(5), ld(6), ld(7), a1, b1);
  OutputTransform1D(ld(8), ld(9), ld(10), ld(11), a2, b2);
  OutputTransform1D(ld(12), ld(13), ld(14), ld(15), a3, b3);
  V y00, y10, y01, y11;
  OutputTransform1D(a0, a1, a2, a3, y00, y10);
  OutputTransform1D(b0, b1, b2, b3, y01, y11);
  StoreOutput(d, a, s, s.oy0, s.ox0, k, n, y00);
  StoreOutput(d, a, s, s.oy0, s.ox0 + 1, k, n, y01);
  StoreOutput(d, a, s, s.oy0 + 1, s.ox0, k, n, y10);
  StoreOutput(d, a, s, s.oy0 + 1, s.ox0 + 1, k, n, y11);
}

void WinogradConvF32Impl(const WinogradConvArgs& a, int64_t tile_begin, int64_t tile_end,
                         int64_t panel_begin, int64_t panel_end, float* scratch) {
  using D = hn::ScalableTag<float>;
  const D d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int64_t C = a.channels, tiles = tile_end - tile_begin;
  float* v = scratch;                           // [16][block_tiles][C]
  float* m = scratch + 16 * a.block_tiles * C;  // [16][block_tiles][64]
  for (int64_t t = 0; t < tiles; ++t) {
    const TileSite s = Locate(a, tile_begin + t);
    for (int64_t c = 0; c < C; c += N)
      InputTile(d, a, s, c, static_cast<size_t>(std::min(N, C - c)), v + t * C + c);
  }
  for (int64_t p = panel_begin; p < panel_end; ++p) {
    const float* u = a.weights + p * 16 * C * kPanel;
    for (int64_t pos = 0; pos < 16; ++pos)
      Gemm(d, v + pos * a.block_tiles * C, tiles, C, u + pos * C * kPanel,
           m + pos * a.block_tiles * kPanel);
    const int64_t k0 = p * kPanel, k1 = std::min(a.out_channels, k0 + kPanel);
    for (int64_t t = 0; t < tiles; ++t) {
      const TileSite s = Locate(a, tile_begin + t);
      for (int64_t k = k0; k < k1; k += N)
        OutputTile(d, a, s, m + t * kPanel, k0, k, static_cast<size_t>(std::min(N, k1 - k)));
    }
  }
}

}  // namespace
}  // namespace onyx::kernels::common::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::kernels::common {

HWY_EXPORT(WinogradConvF32Impl);

void WinogradConvF32(const WinogradConvArgs& args, int64_t tile_begin, int64_t tile_end,
                     int64_t panel_begin, int64_t panel_end, float* scratch) {
  if (tile_begin < tile_end && panel_begin < panel_end) HWY_DYNAMIC_DISPATCH(WinogradConvF32Impl)
  (args, tile_begin, tile_end, panel_begin, panel_end, scratch);
}

void WinogradPackWeightsF32(const float* w, int64_t out_channels, int64_t channels, float* packed) {
  const int64_t panels = (out_channels + kWinogradPanel - 1) / kWinogradPanel;
  std::fill(packed, packed + panels * 16 * channels * kWinogradPanel, 0.0f);
  for (int64_t k = 0; k < out_channels; ++k)
    for (int64_t c = 0; c < channels; ++c) {
      const float* g = w + (k * channels + c) * 9;
      // G g G^T with G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1], in double.
      double gg[4][3];
      for (int j = 0; j < 3; ++j) {
        const double g0 = g[0 * 3 + j], g1 = g[1 * 3 + j], g2 = g[2 * 3 + j];
        gg[0][j] = g0;
        gg[1][j] = 0.5 * (g0 + g1 + g2);
        gg[2][j] = 0.5 * (g0 - g1 + g2);
        gg[3][j] = g2;
      }
      float* dst = packed + (k / kWinogradPanel) * 16 * channels * kWinogradPanel +
                   c * kWinogradPanel + k % kWinogradPanel;
      for (int i = 0; i < 4; ++i) {
        const double u[4] = {gg[i][0], 0.5 * (gg[i][0] + gg[i][1] + gg[i][2]),
                             0.5 * (gg[i][0] - gg[i][1] + gg[i][2]), gg[i][2]};
        for (int j = 0; j < 4; ++j)
          dst[(i * 4 + j) * channels * kWinogradPanel] = static_cast<float>(u[j]);
      }
    }
}

}  // namespace onyx::kernels::common
#endif  // HWY_ONCE
