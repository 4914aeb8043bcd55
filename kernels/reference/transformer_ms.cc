// Reference kernels of the com.microsoft transformer operators (see transformer_ms.h).
#include "kernels/reference/transformer_ms.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/op_helpers.h"
#include "kernels/reference/gemm_core.h"

namespace onyx::kernels::reference {

// ---- layer norms ----

void SkipNormRows(const SkipNormArgs& a, int64_t row_begin, int64_t row_end) {
  const int64_t cols = a.cols;
  std::vector<double> s(static_cast<size_t>(cols));
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float* x = a.x + r * cols;
    const float* skip = a.skip ? a.skip + (r % a.skip_rows) * cols : nullptr;
    // The sum is rounded to float first: ORT keeps it (and writes it out) in the input type.
    for (int64_t j = 0; j < cols; ++j) {
      float v = x[j];
      if (skip) v += skip[j];
      if (a.bias) v += a.bias[j];
      s[j] = v;
      if (a.sum_out) a.sum_out[r * cols + j] = v;
    }
    double mean = 0, sq = 0;
    if (!a.simplified) {
      for (int64_t j = 0; j < cols; ++j) mean += s[j];
      mean /= static_cast<double>(cols);
    }
    for (int64_t j = 0; j < cols; ++j) sq += (s[j] - mean) * (s[j] - mean);
    const double inv_std = 1.0 / std::sqrt(sq / static_cast<double>(cols) + a.epsilon);
    float* y = a.y + r * cols;
    for (int64_t j = 0; j < cols; ++j) {
      double v = (s[j] - mean) * inv_std * a.gamma[j];
      if (a.beta) v += a.beta[j];
      y[j] = static_cast<float>(v);
    }
    if (a.mean_out) a.mean_out[r] = static_cast<float>(mean);
    if (a.inv_std_out) a.inv_std_out[r] = static_cast<float>(inv_std);
  }
}

// ---- EmbedLayerNormalization ----

void EmbedLayerNorm(const EmbedLayerNormArgs& a) {
  const int64_t h = a.hidden;
  std::vector<float> sum(static_cast<size_t>(h));
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t s = 0; s < a.seq; ++s) {
      const int64_t t = b * a.seq + s;
      const float* word = a.word + static_cast<int64_t>(a.input_ids[t]) * h;
      const int64_t p = a.position_ids ? a.position_ids[b * a.pos_batch_stride + s] : s;
      const float* pos = a.position + p * h;
      const float* seg =
          a.segment_ids ? a.segment + static_cast<int64_t>(a.segment_ids[t]) * h : nullptr;
      for (int64_t j = 0; j < h; ++j) sum[j] = word[j] + pos[j] + (seg ? seg[j] : 0.f);
      if (a.embedding_sum) std::copy(sum.begin(), sum.end(), a.embedding_sum + t * h);
      SkipNormArgs n;
      n.x = sum.data();
      n.gamma = a.gamma;
      n.beta = a.beta;
      n.rows = 1;
      n.cols = h;
      n.epsilon = a.epsilon;
      n.y = a.y + t * h;
      SkipNormRows(n, 0, 1);
    }
  }
}

// ---- Gelu family ----

namespace {
float GeluOf(MsGeluKind kind, float alpha, float v) {
  const double x = v;
  switch (kind) {
    case MsGeluKind::kErf:
      return static_cast<float>(0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))));
    case MsGeluKind::kTanh: {
      const double c = std::sqrt(2.0 / M_PI);
      return static_cast<float>(0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x))));
    }
    case MsGeluKind::kQuick:
      return static_cast<float>(x / (1.0 + std::exp(-static_cast<double>(alpha) * x)));
  }
  return v;
}
}  // namespace

void MsGelu(MsGeluKind kind, float alpha, const float* x, const float* bias, int64_t bias_n,
            float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = bias ? x[i] + bias[i % bias_n] : x[i];
    y[i] = GeluOf(kind, alpha, v);
  }
}

void BiasSplitGelu(const float* x, const float* bias, int64_t rows, int64_t cols, float* y) {
  const int64_t half = cols / 2;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    for (int64_t j = 0; j < half; ++j) {
      const float left = xr[j] + bias[j];
      const float right = xr[j + half] + bias[j + half];
      y[r * half + j] = left * GeluOf(MsGeluKind::kErf, 0.f, right);
    }
  }
}

// ---- attention core ----

void MsAttention(const MsAttentionArgs& a, int threads) {
  const int64_t s_len = a.q_len, t_len = a.kv_len, d = a.head_size, dv = a.v_head_size;
  const int64_t group = a.q_heads / a.kv_heads;
  const int64_t y_row = a.q_heads * dv;
  const int64_t tasks = a.batch * a.q_heads;
  ParallelFor(tasks, s_len * t_len * (d + dv), threads, [&](int64_t t0, int64_t t1) {
    std::vector<float> scores(static_cast<size_t>(s_len * t_len));
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
      Gemm<float>(false, true, s_len, t_len, d, a.scale, q, d, k, d, 0.f, scores.data(), t_len,
                  false);
      const float* bias = a.HeadBias(b, h);
      for (int64_t i = 0; i < s_len; ++i) {
        float* row = scores.data() + i * t_len;
        int64_t lo = 0, hi = 0;
        a.VisibleKeys(b, i, t_len, &lo, &hi);
        if (lo >= hi) {
          std::fill(row, row + t_len, 0.f);
          continue;
        }
        float max = -std::numeric_limits<float>::infinity();
        for (int64_t j = lo; j < hi; ++j) {
          float s = row[j];
          if (a.softcap > 0) s = a.softcap * std::tanh(s / a.softcap);
          if (bias) s += bias[i * t_len + j];
          row[j] = s;
          max = std::max(max, s);
        }
        double sum = 0;
        for (int64_t j = lo; j < hi; ++j) {
          row[j] = std::exp(row[j] - max);
          sum += row[j];
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (int64_t j = 0; j < t_len; ++j) row[j] = j >= lo && j < hi ? row[j] * inv : 0.f;
      }
      Gemm<float>(false, false, s_len, dv, t_len, 1.f, scores.data(), t_len, v, dv, 0.f, y, y_row,
                  false);
    }
  });
}

// ---- MatMulNBits ----

void DequantizeNBits(const NBitsWeights& q, int64_t n0, int64_t n1, float* w) {
  const int64_t kb = q.k_blocks(), blob = q.blob(), bits = q.bits;
  const int mask = (1 << bits) - 1;
  for (int64_t n = n0; n < n1; ++n) {
    float* out = w + (n - n0) * q.k;
    for (int64_t blk = 0; blk < kb; ++blk) {
      const float scale = q.scales[n * kb + blk];
      const float zp = q.zero_point(n, blk);
      const uint8_t* src = q.b + (n * kb + blk) * blob;
      const int64_t k0 = blk * q.block_size;
      const int64_t count = std::min(q.block_size, q.k - k0);
      for (int64_t i = 0; i < count; ++i) {
        const int64_t bit = i * bits;
        const int v = (src[bit / 8] >> (bit % 8)) & mask;
        out[k0 + i] = (static_cast<float>(v) - zp) * scale;
      }
    }
  }
}

void MatMulNBitsRef(const NBitsWeights& q, const float* a, int64_t m, const float* bias, float* y) {
  std::vector<float> w(static_cast<size_t>(q.k));
  for (int64_t n = 0; n < q.n; ++n) {
    DequantizeNBits(q, n, n + 1, w.data());
    for (int64_t i = 0; i < m; ++i) {
      const float* ar = a + i * q.k;
      double sum = 0;
      for (int64_t kk = 0; kk < q.k; ++kk) sum += static_cast<double>(ar[kk]) * w[kk];
      if (bias) sum += bias[n];
      y[i * q.n + n] = static_cast<float>(sum);
    }
  }
}

}  // namespace onyx::kernels::reference
