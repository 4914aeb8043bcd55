// Highway loop of a product of a few rows with a matrix packed in column panels (oneDNN's blocked
// weights): one pass over B per call, so a decoder's one-token step streams its weights at the
// memory's speed (see simd_kernels.h for the contract).
#include <algorithm>
#include <cstddef>
#include <cstdint>

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
// `n0`): the accumulators stay in registers over the whole of K. Tail: B has no columns past N
// (a plain row-major matrix), so the vectors there are read only up to N.
template <int R, int C, bool Tail, class D>
HWY_INLINE void Block(D d, const PanelGemvArgs& g, const float* panel, int64_t col, int64_t n0) {
  using V = hn::VFromD<D>;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  size_t rem[C];
  for (int c = 0; c < C; ++c)
    rem[c] = static_cast<size_t>(std::clamp<int64_t>(g.n - (n0 + c * lanes), 0, lanes));
  V acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = hn::Zero(d);
  const float* bk = panel + col;
  for (int64_t k = 0; k < g.k; ++k, bk += g.ldb) {
    V b[C];
    for (int c = 0; c < C; ++c) {
      if (!Tail || rem[c] == static_cast<size_t>(lanes)) {
        b[c] = hn::LoadU(d, bk + c * lanes);
      } else {
        b[c] = rem[c] ? LoadTail(d, bk + c * lanes, rem[c], 0.f) : hn::Zero(d);
      }
    }
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

template <int R, bool Tail, class D>
HWY_INLINE void Panel(D d, const PanelGemvArgs& g, const float* panel, int64_t n0) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t col = 0;
  // Four vectors at a time (sixteen accumulators for four rows), the panel's rest after.
  for (; col + 4 * lanes <= g.panel; col += 4 * lanes)
    Block<R, 4, Tail>(d, g, panel, col, n0 + col);
  switch ((g.panel - col) / lanes) {
    case 3:
      Block<R, 3, Tail>(d, g, panel, col, n0 + col);
      break;
    case 2:
      Block<R, 2, Tail>(d, g, panel, col, n0 + col);
      break;
    case 1:
      Block<R, 1, Tail>(d, g, panel, col, n0 + col);
      break;
    default:
      break;
  }
}

template <int R>
void Panels(const PanelGemvArgs& g, int64_t begin, int64_t end) {
  const hn::ScalableTag<float> d;
  // Without padding, the panel holding column N - 1 is read with care when N ends inside it.
  const int64_t whole = g.b_padded ? end : std::min(end, g.n / g.panel);
  int64_t p = begin;
  if (R == 1 && g.panel == 4 * static_cast<int64_t>(hn::Lanes(d)))
    for (; p + 2 <= whole; p += 2) PanelPair(d, g, g.b + p * g.panel_stride, p * g.panel);
  for (; p < whole; ++p) Panel<R, false>(d, g, g.b + p * g.panel_stride, p * g.panel);
  for (; p < end; ++p) Panel<R, true>(d, g, g.b + p * g.panel_stride, p * g.panel);
}

void PanelGemvF32Impl(const PanelGemvArgs& g, int64_t begin, int64_t end) {
  switch (g.rows) {
    case 1:
      return Panels<1>(g, begin, end);
    case 2:
      return Panels<2>(g, begin, end);
    case 3:
      return Panels<3>(g, begin, end);
    default:
      return Panels<4>(g, begin, end);
  }
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
  if (args.rows < 1 || args.rows > kPanelGemvMaxRows || begin >= end) return;
  HWY_DYNAMIC_DISPATCH(PanelGemvF32Impl)(args, begin, end);
}

}  // namespace onyx::kernels::common
#endif  // HWY_ONCE
