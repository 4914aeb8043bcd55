// Reference kernels for the attention-era operators: Attention (opset 23/24), FlexAttention
// (ai.onnx.preview 1), RotaryEmbedding (23), TensorScatter (24), BitCast (26),
// CausalConvWithState (27) and LinearAttention (27). Shapes are validated by the callers in
// kernels/ops/ (attention.cc, rotary_embedding.cc, tensor_scatter.cc, ...); these loops trust them.
#pragma once

#include <cstdint>
#include <vector>

#include "onyx/dtype.h"
#include "onyx/tensor.h"

namespace onyx::kernels::reference {

// ---- element helpers for float kernels that compute in double ----

// Every element of a float/double/float16/bfloat16 tensor as double.
std::vector<double> LoadFloats(const Tensor& t);
// Writes src[0..t->numel()) into a float-typed tensor, rounding to its type.
void StoreFloats(const double* src, Tensor* t);
// v rounded to the precision of float type t (identity for double).
double RoundTo(DType t, double v);

// ---- Attention ----

struct AttentionParams {
  int64_t batch = 0;
  int64_t q_heads = 0;
  int64_t kv_heads = 0;  // divides q_heads; query head h reads kv head h / (q_heads / kv_heads)
  int64_t q_len = 0;
  int64_t kv_len = 0;         // rows of K and V (the new tokens)
  int64_t past_len = 0;       // rows of past_key / past_value (0 when absent)
  int64_t head_size = 0;      // Q and K
  int64_t v_head_size = 0;    // V
  bool packed_heads = false;  // Q/K/V are [B, L, H*D] (3-D) instead of [B, H, L, D]
  double scale = 1;           // applied to Q.K^T
  double softcap = 0;         // > 0: scores = softcap * tanh(scores / softcap) before the mask
  bool causal = false;        // key j is hidden from query i when j > i + offset (below)
  int64_t left_window = -1;   // >= 0: key j is hidden when i + offset - j > left_window
  int64_t right_window = -1;  // >= 0: key j is hidden when j - (i + offset) > right_window
  int qk_output_mode = 0;     // 0 raw Q.K^T, 1 after softcap, 2 after the mask, 3 after softmax
  DType softmax_type = DType::kUndefined;  // the softmax's type when set (else Q's)
  int64_t total_len() const { return past_len + kv_len; }
};

// The absolute position of query row 0 of batch b: the keys that precede the query block. It is
// past_len with a KV cache, nonpad[b] - q_len with an external cache (nonpad_kv_seqlen; may be
// negative, which hides every key from the leading rows), else 0.
inline int64_t QueryOffset(const AttentionParams& p, const int64_t* nonpad, int64_t b) {
  if (p.past_len > 0 || !nonpad) return p.past_len;
  return nonpad[b] - p.q_len;
}

// Whether causality, the sliding window and the padding (nonpad) let query row i of batch b see
// key j; `offset` is QueryOffset(p, nonpad, b).
inline bool KeyVisible(const AttentionParams& p, const int64_t* nonpad, int64_t b, int64_t offset,
                       int64_t i, int64_t j) {
  const int64_t pos = i + offset;
  if (p.causal && j > pos) return false;
  if (p.left_window >= 0 && pos - j > p.left_window) return false;
  if (p.right_window >= 0 && j - pos > p.right_window) return false;
  return !nonpad || j < nonpad[b];
}

// Scaled dot-product attention computed in double; float32 Q/K/V without a KV cache, softcap,
// softmax rounding or extra outputs take a float path on the shared GEMM instead (the same
// results up to float rounding, many times faster). present K/V = concat(past, new) along the
// sequence axis, [B, kv_heads, total, D]. `mask` (bool: true keeps; otherwise added to the scores)
// is right-aligned and broadcast against [B, q_heads, q_len, total]; when its last dim is shorter
// than total, the missing keys are masked out. `nonpad` ([B], may be null) hides keys j >=
// nonpad[b]; causality and the window are offset-aligned (QueryOffset). Outputs: y ([B, q_len,
// q_heads*Dv] when packed_heads, else [B, q_heads, q_len, Dv]); present_key, present_value and
// qk_out ([B, q_heads, q_len, total]) may be null. A query row whose keys are all masked (its
// bias all -inf) has zero probabilities and a zero output row (opset 25's rule, which the ONNX
// reference applies to every version). float16/bfloat16 inputs are rounded after every step as
// numpy computes them (scaled Q and K, the products, the softmax's steps), so the results are
// those of the ONNX reference bit for bit in the common cases.
void Attention(const AttentionParams& p, const Tensor& q, const Tensor& k, const Tensor& v,
               const Tensor* mask, const Tensor* past_key, const Tensor* past_value,
               const int64_t* nonpad, Tensor* y, Tensor* present_key, Tensor* present_value,
               Tensor* qk_out);

// ---- FlexAttention ----

struct FlexAttentionParams {
  int64_t batch = 0;
  int64_t q_heads = 0;
  int64_t kv_heads = 0;  // divides q_heads
  int64_t q_len = 0;
  int64_t kv_len = 0;
  int64_t head_size = 0;
  int64_t v_head_size = 0;
  double scale = 1;
  DType compute = DType::kFloat;  // the scores' type (softmax_precision)
};

// scores [B, q_heads, q_len, kv_len] of type p.compute = (Q*sqrt(scale)) . (K*sqrt(scale))^T,
// rounded like the ONNX reference: the scaled inputs and the product in Q's type.
void FlexAttentionScores(const FlexAttentionParams& p, const Tensor& q, const Tensor& k,
                         Tensor* scores);
// In-place softmax over the last axis of a float-typed tensor viewed as [rows, n].
void SoftmaxRows(Tensor* x, int64_t rows, int64_t n);
// y [B, q_heads, q_len, Dv] = probs . V, computed in probs' type and rounded to y's type.
void FlexAttentionOutput(const FlexAttentionParams& p, const Tensor& probs, const Tensor& v,
                         Tensor* y);

// ---- RotaryEmbedding ----

struct RotaryParams {
  int64_t batch = 0;
  int64_t seq_len = 0;
  int64_t num_heads = 0;
  int64_t head_size = 0;
  int64_t rotary_dim = 0;     // even, <= head_size; the rest of each head is copied
  bool packed_heads = false;  // x is [B, S, H*D] (else [B, H, S, D])
  bool interleaved = false;   // rotate pairs (2i, 2i+1) instead of halves (i, i + rotary_dim/2)
};

// y = RoPE(x). cos/sin caches are [max_pos, rotary_dim/2] indexed by position_ids [B, S] when
// position_ids is non-null (each id checked by the caller), else [B, S, rotary_dim/2]. All float
// tensors share x's type; products and sums are rounded to it as numpy does.
void RotaryEmbedding(const RotaryParams& p, const Tensor& x, const Tensor& cos_cache,
                     const Tensor& sin_cache, const int64_t* position_ids, Tensor* y);

// ---- TensorScatter ----

// present = past, then for every index of the dims before `axis` (b = the first of them) and
// s < update's axis length: present[..., pos, ...] = update[..., s, ...] with pos =
// write_index[b] + s (mod the cache's axis length when circular). Positions are checked by the
// caller (linear mode) or wrap (circular). write_indices may be null (all zero).
void TensorScatter(const Tensor& past, const Tensor& update, const int64_t* write_indices,
                   int64_t axis, bool circular, Tensor* present);

// ---- BitCast ----

// Bit width of one element of t (4 for int4/uint4/float4e2m1, 2 for int2/uint2).
int BitWidth(DType t);
// Reinterprets x's bits as y's type (same bit width). Sub-byte types hold one value per byte: the
// low bits are the pattern, sign-extended for int4/int2. A bool output is 1 for a nonzero byte.
void BitCast(const Tensor& x, Tensor* y);

// ---- CausalConvWithState ----

// Depthwise causal conv1d over [B, C, L] with weight [C, 1, K], optional bias [C] and
// past_state [B, C, K-1] (zeros when null). y[b,c,t] = bias[c] + sum_k w[c,k] * padded[b,c,t+k]
// where padded = concat(past_state, x); silu: y *= sigmoid(y) (computed in float on the rounded
// conv). present_state [B, C, K-1] = the last K-1 columns of padded.
void CausalConvWithState(const Tensor& x, const Tensor& weight, const Tensor* bias,
                         const Tensor* past_state, bool silu, Tensor* y, Tensor* present_state);

// ---- LinearAttention ----

struct LinearAttentionParams {
  int64_t batch = 0;
  int64_t seq_len = 0;
  int64_t q_heads = 0;
  int64_t kv_heads = 0;         // divides q_heads
  int64_t key_size = 0;         // d_k
  int64_t value_size = 0;       // d_v
  bool gated = false;           // decay the state by exp(decay) each step
  bool delta = false;           // delta rule: write beta * (v - S^T k)
  bool per_head_decay = false;  // decay is [B, T, H_kv] (else [B, T, H_kv*d_k])
  bool per_head_beta = true;    // beta is [B, T, H_kv] (else [B, T, 1])
  double scale = 1;
};

// The recurrence S_t = decay(S_{t-1}) + k_t (x) v'_t, o_t = scale * q_t^T S_t, run token by token
// in float. q [B,T,Hq*dk], k [B,T,Hkv*dk], v [B,T,Hkv*dv], past_state [B,Hkv,dk,dv] (zeros when
// null); output [B,T,Hq*dv]; present_state [B,Hkv,dk,dv].
void LinearAttention(const LinearAttentionParams& p, const Tensor& q, const Tensor& k,
                     const Tensor& v, const Tensor* past_state, const Tensor* decay,
                     const Tensor* beta, Tensor* output, Tensor* present_state);

}  // namespace onyx::kernels::reference
