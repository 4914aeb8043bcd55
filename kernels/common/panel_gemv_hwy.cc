// Highway loop of a product of a few rows with a matrix packed in column panels (oneDNN's blocked
// weights): one pass over B per call, so a decoder's one-token step streams its weights at the
// memory's speed (see simd_kernels.h for the contract).
// SVE's sizeless vector types cannot form arrays, which these loops keep their accumulators in:
// on AArch64 this file builds for NEON only, which SVE machines run too (before any Highway
// header: it shapes HWY_TARGETS).
#if defined(__aarch64__)
#define HWY_DISABLED_TARGETS (HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128)
#endif
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/common/simd_kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/common/panel_gemv_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/common/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::kernels::common::HWY_NAMESPACE {
namespace {

size_t PanelGemvLanesImpl() {
  return hn::Lanes(hn::ScalableTag<float>());
}

// Writes R rows of C vectors of sums for global columns from n0: alpha, bias and residual
// applied, nothing stored at or past N.
template <int R, int C, class D, class V>
HWY_INLINE void Finish(D d, const PanelGemvArgs& g, const V (&acc)[R][C], int64_t n0) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const V alpha = hn::Set(d, g.alpha);
  for (int c = 0; c < C; ++c) {
    const int64_t n = n0 + c * lanes;
    if (n >= g.n) break;
    const size_t rem = static_cast<size_t>(std::min<int64_t>(lanes, g.n - n));
    const bool full = rem == static_cast<size_t>(lanes);
    V bias = hn::Zero(d);
    if (g.bias) {
      bias = g.bias_scalar ? hn::Set(d, g.bias[0])
                           : (full ? hn::LoadU(d, g.bias + n) : LoadTail(d, g.bias + n, rem, 0.f));
    }
    for (int r = 0; r < R; ++r) {
      V y = hn::Mul(acc[r][c], alpha);
      if (g.bias) y = hn::Add(y, bias);
      float* out = g.y + r * g.ldy + n;
      if (g.z) {
        const float* z = g.z + r * g.ldy + n;
        y = hn::Add(y, full ? hn::LoadU(d, z) : LoadTail(d, z, rem, 0.f));
      }
      if (full) {
        hn::StoreU(y, d, out);
      } else {
        StoreTail(d, y, out, rem);
      }
    }
  }
}

// R rows times C vectors of one panel, starting `col` columns into the panel (global column
// `n0`): the accumulators stay in registers over the whole of K. Every vector read is whole (the
// panel N ends inside is a zero-padded copy when B has no columns past N).
template <int R, int C, class D>
HWY_INLINE void Block(D d, const PanelGemvArgs& g, const float* panel, int64_t col, int64_t n0) {
  using V = hn::VFromD<D>;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  V acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = hn::Zero(d);
  const float* bk = panel + col;
  for (int64_t k = 0; k < g.k; ++k, bk += g.ldb) {
    V b[C];
    for (int c = 0; c < C; ++c) b[c] = hn::LoadU(d, bk + c * lanes);
    for (int r = 0; r < R; ++r) {
      const V a = hn::Set(d, g.a[r * g.lda + k]);
      for (int c = 0; c < C; ++c) acc[r][c] = hn::MulAdd(a, b[c], acc[r][c]);
    }
  }
  Finish<R, C>(d, g, acc, n0);
}

// One row against two whole panels of four vectors at once: two streams of B in flight read
// 6% faster than one (GPT-2's LM head with the caches cold: 1.84 against 1.97 ms).
template <class D>
HWY_INLINE void PanelPair(D d, const PanelGemvArgs& g, const float* panel, int64_t n0) {
  using V = hn::VFromD<D>;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  V acc0[1][4], acc1[1][4];
  for (int c = 0; c < 4; ++c) acc0[0][c] = acc1[0][c] = hn::Zero(d);
  const float* b0 = panel;
  const float* b1 = panel + g.panel_stride;
  for (int64_t k = 0; k < g.k; ++k, b0 += g.ldb, b1 += g.ldb) {
    const V a = hn::Set(d, g.a[k]);
    for (int c = 0; c < 4; ++c) {
      acc0[0][c] = hn::MulAdd(a, hn::LoadU(d, b0 + c * lanes), acc0[0][c]);
      acc1[0][c] = hn::MulAdd(a, hn::LoadU(d, b1 + c * lanes), acc1[0][c]);
    }
  }
  Finish<1, 4>(d, g, acc0, n0);
  Finish<1, 4>(d, g, acc1, n0 + g.panel);
}

// R rows against the first `width` columns of a panel (a multiple of the vector length).
template <int R, class D>
HWY_INLINE void Panel(D d, const PanelGemvArgs& g, const float* panel, int64_t n0, int64_t width) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t col = 0;
  // Four vectors at a time (twenty accumulators for five rows), the panel's rest after.
  for (; col + 4 * lanes <= width; col += 4 * lanes) Block<R, 4>(d, g, panel, col, n0 + col);
  switch ((width - col) / lanes) {
    case 3:
      Block<R, 3>(d, g, panel, col, n0 + col);
      break;
    case 2:
      Block<R, 2>(d, g, panel, col, n0 + col);
      break;
    case 1:
      Block<R, 1>(d, g, panel, col, n0 + col);
      break;
    default:
      break;
  }
}

// The columns of the panel starting at global column n0 that hold columns below N, in whole
// vectors: what RowBlock computes and CopiedPanel fills.
int64_t PanelWidth(const PanelGemvArgs& g, int64_t n0) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(hn::ScalableTag<float>()));
  return std::min(g.panel, (g.n - n0 + lanes - 1) / lanes * lanes);
}

// Panel p of a plain B (rows ldb apart, no columns past N) copied contiguous into `pad`, K rows
// `panel` apart, with zeros past N up to PanelWidth. For the panel N ends inside: read in place it
// took a masked load per row and vector, five times the time of a whole panel. For any panel read
// by more than one block of rows: rows a power of two apart (Q x K^T with K^T's rows 256 floats
// long) fall in a few L1 sets and miss on every block after the first.
const float* CopiedPanel(const PanelGemvArgs& g, int64_t p, float* pad) {
  const int64_t cols = std::min(g.panel, g.n - p * g.panel);
  const int64_t width = PanelWidth(g, p * g.panel);
  const float* src = g.b + p * g.panel_stride;
  float* dst = pad;
  for (int64_t k = 0; k < g.k; ++k, src += g.ldb, dst += g.panel) {
    std::memcpy(dst, src, static_cast<size_t>(cols) * sizeof(float));
    std::fill(dst + cols, dst + width, 0.f);
  }
  return pad;
}

// R rows from row r0 against one panel, the vectors that hold columns below N.
template <int R>
HWY_INLINE void RowBlock(const PanelGemvArgs& g, int64_t r0, const float* panel, int64_t n0) {
  PanelGemvArgs b = g;
  b.a = g.a + r0 * g.lda;
  b.y = g.y + r0 * g.ldy;
  if (g.z) b.z = g.z + r0 * g.ldy;
  Panel<R>(hn::ScalableTag<float>(), b, panel, n0, PanelWidth(g, n0));
}

// All rows against one panel: blocks of five rows (twenty accumulators; with six, GCC spills
// one of B's four vectors and the block ran 10-20% slower), so the panel is read once from
// memory and then from cache.
void Rows(const PanelGemvArgs& g, const float* panel, int64_t n0) {
  int64_t r = 0;
  for (; r + 5 <= g.rows; r += 5) RowBlock<5>(g, r, panel, n0);
  switch (g.rows - r) {
    case 4:
      return RowBlock<4>(g, r, panel, n0);
    case 3:
      return RowBlock<3>(g, r, panel, n0);
    case 2:
      return RowBlock<2>(g, r, panel, n0);
    case 1:
      return RowBlock<1>(g, r, panel, n0);
    default:
      return;
  }
}

void PanelGemvF32Impl(const PanelGemvArgs& g, int64_t begin, int64_t end) {
  const hn::ScalableTag<float> d;
  // Panels read in place: all of a padded B; of a plain B, those N does not end inside, when one
  // block of rows reads them (or their rows are contiguous already). The others are copied.
  const int64_t whole = g.b_padded ? end : std::min(end, g.n / g.panel);
  const bool in_place = g.b_padded || g.rows <= kPanelGemvMaxRows || g.ldb == g.panel;
  int64_t p = begin;
  if (in_place) {
    if (g.rows == 1 && g.panel == 4 * static_cast<int64_t>(hn::Lanes(d)))
      for (; p + 2 <= whole; p += 2) PanelPair(d, g, g.b + p * g.panel_stride, p * g.panel);
    for (; p < whole; ++p) Rows(g, g.b + p * g.panel_stride, p * g.panel);
  }
  if (p == end) return;
  // A decoder step's Q x K^T copies a 64 x 64 panel per head and call: a buffer kept per thread
  // up to 256 KiB (no allocation), a fresh one above.
  constexpr size_t kKeptFloats = size_t{64} << 10;
  thread_local std::vector<float> kept;
  std::vector<float> fresh;
  const size_t need = static_cast<size_t>(g.k * g.panel);
  std::vector<float>& pad = need <= kKeptFloats ? kept : fresh;
  if (pad.size() < need) pad.resize(need);
  PanelGemvArgs t = g;
  t.ldb = g.panel;
  for (; p < end; ++p) Rows(t, CopiedPanel(g, p, pad.data()), p * g.panel);
}

}  // namespace
}  // namespace onyx::kernels::common::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::kernels::common {

HWY_EXPORT(PanelGemvLanesImpl);
HWY_EXPORT(PanelGemvF32Impl);

int64_t PanelGemvPlainPanel() {
  return 4 * static_cast<int64_t>(HWY_DYNAMIC_DISPATCH(PanelGemvLanesImpl)());
}

bool PanelGemvTakesPanel(int64_t panel) {
  const int64_t lanes = static_cast<int64_t>(HWY_DYNAMIC_DISPATCH(PanelGemvLanesImpl)());
  return panel > 0 && panel % lanes == 0;
}

void PanelGemvF32(const PanelGemvArgs& args, int64_t begin, int64_t end) {
  if (args.rows < 1 || begin >= end) return;
  HWY_DYNAMIC_DISPATCH(PanelGemvF32Impl)(args, begin, end);
}

std::vector<float> PackColumnPanels(const float* rows_nk, int64_t n, int64_t k, int64_t panel) {
  const int64_t panels = (n + panel - 1) / panel;
  std::vector<float> out(static_cast<size_t>(panels * k * panel), 0.f);
  for (int64_t col = 0; col < n; ++col) {
    float* dst = out.data() + (col / panel) * k * panel + col % panel;
    const float* src = rows_nk + col * k;
    for (int64_t kk = 0; kk < k; ++kk) dst[kk * panel] = src[kk];
  }
  return out;
}

}  // namespace onyx::kernels::common
#endif  // HWY_ONCE
