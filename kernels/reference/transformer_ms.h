// Reference kernels of ONNX Runtime's com.microsoft transformer operators (the ones
// onnxruntime.transformers' optimizer and LLM exporters write): the skip/simplified layer norms,
// EmbedLayerNormalization, the Gelu family, the attention core shared by Attention,
// MultiHeadAttention and GroupQueryAttention, and MatMulNBits' block dequantisation. Shapes and
// attributes are validated by kernels/ops/transformer_ms.cc; these loops trust them. Semantics
// follow ORT's contrib operator documentation (docs/ContribOperators.md).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace onyx::kernels::reference {

// ---- layer norms over the last axis (float32, statistics in double) ----

// For each of `rows` rows of `cols`: s = x + skip[r % skip_rows] (+ bias), then
//   LayerNorm:  y = (s - mean) * inv_std * gamma (+ beta),  inv_std = 1 / sqrt(var + epsilon)
//   simplified: y = s * inv_std * gamma,                     inv_std = 1 / sqrt(mean(s^2) + eps)
// skip may be null (no skip: SimplifiedLayerNormalization); bias/beta may be null. mean_out,
// inv_std_out ([rows]) and sum_out ([rows, cols]) may be null; the simplified norm writes 0 as
// its mean, as ORT does. y may alias x.
struct SkipNormArgs {
  const float* x = nullptr;
  const float* skip = nullptr;
  int64_t skip_rows = 1;  // rows of skip, repeated over x's rows
  const float* gamma = nullptr;
  const float* beta = nullptr;
  const float* bias = nullptr;
  int64_t rows = 0, cols = 0;
  double epsilon = 1e-12;
  bool simplified = false;
  float* y = nullptr;
  float* mean_out = nullptr;
  float* inv_std_out = nullptr;
  float* sum_out = nullptr;
};
void SkipNormRows(const SkipNormArgs& a, int64_t row_begin, int64_t row_end);

// ---- EmbedLayerNormalization ----
// y[b, s] = LayerNorm(word[ids[b,s]] + position[pos(b,s)] + segment[seg[b,s]]) with gamma, beta;
// indices are checked by the caller. pos(b, s) = position_ids[b * pos_batch_stride + s] when
// position_ids is non-null, else s. embedding_sum ([B, S, H]) may be null.
struct EmbedLayerNormArgs {
  int64_t batch = 0, seq = 0, hidden = 0;
  const int32_t* input_ids = nullptr;
  const int32_t* segment_ids = nullptr;  // may be null
  const int32_t* position_ids = nullptr;
  int64_t pos_batch_stride = 0;  // 0 when position_ids is [1, S]
  const float* word = nullptr;
  const float* position = nullptr;
  const float* segment = nullptr;  // null when segment_ids is
  const float* gamma = nullptr;
  const float* beta = nullptr;
  double epsilon = 1e-12;
  float* y = nullptr;
  float* embedding_sum = nullptr;
};
void EmbedLayerNorm(const EmbedLayerNormArgs& a);

// ---- Gelu family (float32) ----
enum class MsGeluKind {
  kErf,    // 0.5 v (1 + erf(v / sqrt(2)))
  kTanh,   // 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3)))
  kQuick,  // v * sigmoid(alpha v)
};
// y[i] = act(x[i] + bias[i % bias_n]) for i < n (bias may be null). In-place safe.
void MsGelu(MsGeluKind kind, float alpha, const float* x, const float* bias, int64_t bias_n,
            float* y, int64_t n);
// BiasSplitGelu: rows of `cols` (even); v = x + bias; y[r, j] = v[r, j] * gelu_erf(v[r, j +
// cols/2]) for j < cols / 2.
void BiasSplitGelu(const float* x, const float* bias, int64_t rows, int64_t cols, float* y);

// ---- attention core (Attention, MultiHeadAttention, GroupQueryAttention) ----
// Q [B, q_heads, q_len, D] (row-major); K and V [B, kv_heads, kv_cap, D | Dv] of which the first
// kv_len rows of each head are read; query head h reads kv head h / (q_heads / kv_heads).
// scores = scale * Q K^T, then softcap (when > 0), then + bias (broadcast over its batch and
// head dims of size 1), then softmax over the visible keys of each query row, then . V.
// Key j is visible to query i of batch b when key_begin[b] <= j < key_end[b] and, when causal,
// j <= i + causal_offset[b] and (window > 0) j > i + causal_offset[b] - window. A row with no
// visible key gives zeros. y is [B, q_len, q_heads * Dv] (heads interleaved, as ORT writes it).
struct MsAttentionArgs {
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, kv_cap = 0;
  int64_t head_size = 0, v_head_size = 0;
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  float scale = 1.f;
  float softcap = 0.f;
  const float* bias = nullptr;  // [bias_batch, bias_heads, q_len, kv_len]
  int64_t bias_batch = 1, bias_heads = 1;
  std::vector<int64_t> key_begin, key_end;  // per batch; empty: [0, kv_len)
  bool causal = false;
  std::vector<int64_t> causal_offset;  // per batch (causal only)
  int64_t window = -1;                 // > 0: local attention window (GroupQueryAttention)
  float* y = nullptr;

  // The bias rows [q_len, kv_len] of batch b and head h, or null: the one rule every kernel reads.
  const float* HeadBias(int64_t b, int64_t h) const {
    if (!bias) return nullptr;
    const int64_t bb = bias_batch == 1 ? 0 : b, bh = bias_heads == 1 ? 0 : h;
    return bias + (bb * bias_heads + bh) * q_len * kv_len;
  }
  // The keys [*lo, *hi) visible to query i of batch b among t_len (empty when *lo >= *hi).
  void VisibleKeys(int64_t b, int64_t i, int64_t t_len, int64_t* lo, int64_t* hi) const {
    *lo = key_begin.empty() ? 0 : std::max<int64_t>(key_begin[b], 0);
    *hi = key_end.empty() ? t_len : std::min(key_end[b], t_len);
    if (causal) {
      const int64_t last = i + causal_offset[b];  // the last visible key
      *hi = std::min(*hi, last + 1);
      if (window > 0) *lo = std::max(*lo, last - window + 1);
    }
  }
};
// Runs heads in parallel on up to `threads` threads; the products go through the shared GEMM.
void MsAttention(const MsAttentionArgs& a, int threads);

// ---- MatMulNBits ----
// W [N, K] (row n = output feature n) dequantised from B [N, k_blocks, blob] of `bits`-bit values
// (low bits of each byte first): w = (q - zp) * scale[n * k_blocks + blk], with zp read from
// zero_u8 (packed like B, rows of ceil(k_blocks * bits / 8) bytes), from zero_f (float,
// [N, k_blocks]) or, with neither, 2^(bits - 1).
struct NBitsWeights {
  int64_t n = 0, k = 0, bits = 4, block_size = 32;
  const uint8_t* b = nullptr;
  const float* scales = nullptr;
  const uint8_t* zero_u8 = nullptr;
  const float* zero_f = nullptr;
  int64_t k_blocks() const { return (k + block_size - 1) / block_size; }
  int64_t blob() const { return block_size * bits / 8; }
  // The zero point of row n's block blk.
  float zero_point(int64_t n, int64_t blk) const {
    if (zero_u8) {
      const int64_t row = (k_blocks() * bits + 7) / 8, bit = blk * bits;
      return static_cast<float>((zero_u8[n * row + bit / 8] >> (bit % 8)) & ((1 << bits) - 1));
    }
    if (zero_f) return zero_f[n * k_blocks() + blk];
    return static_cast<float>(1 << (bits - 1));
  }
};
// Rows [n0, n1) of W into w (row n at w + (n - n0) * k).
void DequantizeNBits(const NBitsWeights& q, int64_t n0, int64_t n1, float* w);
// y [M, N] = a [M, K] . W^T + bias (may be null), W dequantised block by block (double sums).
void MatMulNBitsRef(const NBitsWeights& q, const float* a, int64_t m, const float* bias, float* y);

}  // namespace onyx::kernels::reference
