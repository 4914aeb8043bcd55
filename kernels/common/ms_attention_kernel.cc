// The attention core of the com.microsoft Attention, MultiHeadAttention and GroupQueryAttention
// kernels (see transformer_ms_kernels.h): per head, scores on the panel GEMM's SIMD loops, the
// masks, a softmax whose exponentials run on the SIMD exp, and the product with V on the panel
// GEMM again.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/common/simd_kernels.h"
#include "kernels/common/transformer_ms_kernels.h"
#include "kernels/op_helpers.h"

namespace onyx::kernels::common {
namespace {

// y (rows x n, rows ldy apart) = alpha * a (rows x k, contiguous) b (k x n, contiguous), on the
// panel GEMM's SIMD loops over b as a plain row-major matrix.
void PlainProduct(const float* a, int64_t rows, int64_t k, const float* b, int64_t n, float alpha,
                  float* y, int64_t ldy) {
  PanelGemvArgs g;
  g.a = a;
  g.lda = k;
  g.rows = rows;
  g.b = b;
  g.panel = PanelGemvPlainPanel();
  g.panel_stride = g.panel;
  g.ldb = n;
  g.b_padded = false;
  g.k = k;
  g.n = n;
  g.alpha = alpha;
  g.y = y;
  g.ldy = ldy;
  PanelGemvF32(g, 0, (n + g.panel - 1) / g.panel);
}

}  // namespace

void MsAttentionF32(const reference::MsAttentionArgs& a, int threads) {
  const int64_t s_len = a.q_len, t_len = a.kv_len, d = a.head_size, dv = a.v_head_size;
  const int64_t group = a.q_heads / a.kv_heads;
  const int64_t y_row = a.q_heads * dv;
  const UnaryParams no_params;
  ParallelFor(a.batch * a.q_heads, s_len * t_len * (d + dv), threads, [&](int64_t t0, int64_t t1) {
    std::vector<float> scores(static_cast<size_t>(s_len * t_len));
    std::vector<float> kt(static_cast<size_t>(d * t_len));
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t b = task / a.q_heads, h = task % a.q_heads, kvh = h / group;
      const float* q = a.q + (b * a.q_heads + h) * s_len * d;
      const float* k = a.k + (b * a.kv_heads + kvh) * a.kv_cap * d;
      const float* v = a.v + (b * a.kv_heads + kvh) * a.kv_cap * dv;
      float* y = a.y + b * s_len * y_row + h * dv;
      if (t_len == 0 || s_len == 0) {
        for (int64_t i = 0; i < s_len; ++i) std::fill(y + i * y_row, y + i * y_row + dv, 0.f);
        continue;
      }
      // scores = scale * Q K^T: K transposed to [D, T], then the panel GEMM on the plain matrix.
      Transpose2D32(reinterpret_cast<const uint32_t*>(k), d, reinterpret_cast<uint32_t*>(kt.data()),
                    t_len, d, t_len);
      PlainProduct(q, s_len, d, kt.data(), t_len, a.scale, scores.data(), t_len);
      const float* bias = a.HeadBias(b, h);
      for (int64_t i = 0; i < s_len; ++i) {
        float* row = scores.data() + i * t_len;
        int64_t lo = 0, hi = 0;
        a.VisibleKeys(b, i, t_len, &lo, &hi);
        if (lo >= hi) {
          std::fill(row, row + t_len, 0.f);
          continue;
        }
        float* seg = row + lo;
        const int64_t count = hi - lo;
        if (a.softcap > 0) {
          const float inv_cap = 1.f / a.softcap;
          for (int64_t j = 0; j < count; ++j) seg[j] *= inv_cap;
          UnaryF32(UnaryOp::kTanh, no_params, seg, seg, count);
          for (int64_t j = 0; j < count; ++j) seg[j] *= a.softcap;
        }
        if (bias) {
          const float* br = bias + i * t_len + lo;
          for (int64_t j = 0; j < count; ++j) seg[j] += br[j];
        }
        float max = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < count; ++j) max = std::max(max, seg[j]);
        for (int64_t j = 0; j < count; ++j) seg[j] -= max;
        UnaryF32(UnaryOp::kExp, no_params, seg, seg, count);
        float sum = 0;
        for (int64_t j = 0; j < count; ++j) sum += seg[j];
        const float inv = 1.f / sum;
        for (int64_t j = 0; j < count; ++j) seg[j] *= inv;
        std::fill(row, seg, 0.f);
        std::fill(seg + count, row + t_len, 0.f);
      }
      PlainProduct(scores.data(), s_len, t_len, v, dv, 1.f, y, y_row);
    }
  });
}

}  // namespace onyx::kernels::common
