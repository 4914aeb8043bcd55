// Reference kernels for RotaryEmbedding, TensorScatter, BitCast, CausalConvWithState and
// LinearAttention (see attention.h).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/op_helpers.h"
#include "kernels/reference/attention.h"

namespace onyx::kernels::reference {

void RotaryEmbedding(const RotaryParams& p, const Tensor& x, const Tensor& cos_cache,
                     const Tensor& sin_cache, const int64_t* position_ids, Tensor* y) {
  const DType t = x.dtype();
  const int64_t S = p.seq_len, H = p.num_heads, D = p.head_size, half = p.rotary_dim / 2;
  const std::vector<double> xd = LoadFloats(x);
  const std::vector<double> cd = LoadFloats(cos_cache);
  const std::vector<double> sd = LoadFloats(sin_cache);
  std::vector<double> out(xd);  // the unrotated tail of each head is copied as is
  // An empty x may still have huge batch, sequence and head counts (head size 0).
  if (x.numel() == 0) return;
  const auto r = [t](double v) { return RoundTo(t, v); };
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t s = 0; s < S; ++s) {
      const int64_t cache_row = position_ids ? position_ids[b * S + s] : b * S + s;
      const double* cr = cd.data() + cache_row * half;
      const double* sr = sd.data() + cache_row * half;
      for (int64_t h = 0; h < H; ++h) {
        const int64_t base = p.packed_heads ? ((b * S + s) * H + h) * D : ((b * H + h) * S + s) * D;
        for (int64_t i = 0; i < half; ++i) {
          const int64_t i1 = p.interleaved ? 2 * i : i;
          const int64_t i2 = p.interleaved ? 2 * i + 1 : i + half;
          const double x1 = xd[base + i1], x2 = xd[base + i2];
          // Each product and sum is rounded to x's type, as numpy does for float16.
          out[base + i1] = r(r(cr[i] * x1) - r(sr[i] * x2));
          out[base + i2] = r(r(sr[i] * x1) + r(cr[i] * x2));
        }
      }
    }
  }
  StoreFloats(out.data(), y);
}

void TensorScatter(const Tensor& past, const Tensor& update, const int64_t* write_indices,
                   int64_t axis, bool circular, Tensor* present) {
  const DType t = past.dtype();
  CopyElements(t, past.raw_data(), 0, present->raw_data(), 0, past.numel());
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= past.dim(d);
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < past.rank(); ++d) inner *= past.dim(d);
  const int64_t max_len = past.dim(axis);
  const int64_t len = update.dim(axis);
  const int64_t batch = past.dim(0);
  if (batch == 0 || max_len == 0) return;
  const int64_t per_batch = outer / batch;  // prefix indices that share one write index
  for (int64_t o = 0; o < outer; ++o) {
    int64_t start = write_indices ? write_indices[o / per_batch] : 0;
    // Wrapped first so that start + s cannot overflow for a write index near INT64_MAX.
    if (circular) start = ((start % max_len) + max_len) % max_len;
    for (int64_t s = 0; s < len; ++s) {
      int64_t pos = start + s;
      if (circular) pos %= max_len;
      CopyElements(t, update.raw_data(), (o * len + s) * inner, present->raw_data(),
                   (o * max_len + pos) * inner, inner);
    }
  }
}

int BitWidth(DType t) {
  switch (t) {
    case DType::kInt4:
    case DType::kUInt4:
    case DType::kFloat4E2M1:
      return 4;
    case DType::kInt2:
    case DType::kUInt2:
      return 2;
    default:
      return static_cast<int>(DTypeSize(t)) * 8;
  }
}

void BitCast(const Tensor& x, Tensor* y) {
  const int64_t n = x.numel();
  const DType to = y->dtype();
  const int width = BitWidth(to);
  if (width < 8) {
    // One value per byte: keep the low bits, sign-extend for the signed types.
    const uint8_t mask = static_cast<uint8_t>((1u << width) - 1);
    const bool is_signed = to == DType::kInt4 || to == DType::kInt2;
    const uint8_t* src = static_cast<const uint8_t*>(x.raw_data());
    uint8_t* dst = static_cast<uint8_t*>(y->raw_data());
    for (int64_t i = 0; i < n; ++i) {
      uint8_t bits = src[i] & mask;
      if (is_signed && (bits >> (width - 1)))
        bits = static_cast<uint8_t>(bits | static_cast<uint8_t>(~mask));
      dst[i] = bits;
    }
    return;
  }
  if (to == DType::kBool) {
    // A bool byte other than 0/1 is not a valid C++ bool; any nonzero pattern becomes true.
    const uint8_t* src = static_cast<const uint8_t*>(x.raw_data());
    bool* dst = y->data<bool>();
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i] != 0;
    return;
  }
  if (x.nbytes() > 0) std::memcpy(y->raw_data(), x.raw_data(), x.nbytes());
}

void CausalConvWithState(const Tensor& x, const Tensor& weight, const Tensor* bias,
                         const Tensor* past_state, bool silu, Tensor* y, Tensor* present_state) {
  const DType t = x.dtype();
  const int64_t B = x.dim(0), C = x.dim(1), L = x.dim(2), K = weight.dim(2);
  const std::vector<double> xd = LoadFloats(x);
  const std::vector<double> wd = LoadFloats(weight);
  const std::vector<double> bd = bias ? LoadFloats(*bias) : std::vector<double>();
  const std::vector<double> pd = past_state ? LoadFloats(*past_state) : std::vector<double>();
  std::vector<double> out(static_cast<size_t>(B * C * L));
  std::vector<double> state(static_cast<size_t>(B * C * (K - 1)));
  // With no rows (B or C 0) L and K are unbounded by any buffer: [1, 0, 1] and weight [0, 1, 2^50].
  if (B == 0 || C == 0) return;
  std::vector<double> padded(static_cast<size_t>(L + K - 1));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t c = 0; c < C; ++c) {
      const int64_t row = b * C + c;
      for (int64_t j = 0; j < K - 1; ++j) padded[j] = past_state ? pd[row * (K - 1) + j] : 0.0;
      std::copy(xd.begin() + row * L, xd.begin() + (row + 1) * L, padded.begin() + (K - 1));
      for (int64_t i = 0; i < L; ++i) {
        double dot = 0;
        for (int64_t j = 0; j < K; ++j) dot += wd[c * K + j] * padded[i + j];
        // As in the ONNX reference: the dot product is rounded to x's type before the bias.
        double v = RoundTo(t, RoundTo(t, dot) + (bias ? bd[c] : 0.0));
        if (silu) {
          // The ONNX reference applies SiLU in float32 to the rounded convolution.
          const float f = static_cast<float>(v);
          v = static_cast<double>(f * (1.0f / (1.0f + std::exp(-f))));
        }
        out[row * L + i] = v;
      }
      std::copy(padded.begin() + L, padded.end(), state.begin() + row * (K - 1));
    }
  }
  StoreFloats(out.data(), y);
  StoreFloats(state.data(), present_state);
}

void LinearAttention(const LinearAttentionParams& p, const Tensor& q, const Tensor& k,
                     const Tensor& v, const Tensor* past_state, const Tensor* decay,
                     const Tensor* beta, Tensor* output, Tensor* present_state) {
  const int64_t B = p.batch, T = p.seq_len, Hq = p.q_heads, Hkv = p.kv_heads;
  const int64_t dk = p.key_size, dv = p.value_size, group = Hq / Hkv;
  const std::vector<double> qd = LoadFloats(q);
  const std::vector<double> kd = LoadFloats(k);
  const std::vector<double> vd = LoadFloats(v);
  const std::vector<double> gd = decay ? LoadFloats(*decay) : std::vector<double>();
  const std::vector<double> bd = beta ? LoadFloats(*beta) : std::vector<double>();
  std::vector<double> state = past_state
                                  ? LoadFloats(*past_state)
                                  : std::vector<double>(static_cast<size_t>(B * Hkv * dk * dv));
  std::vector<double> out(static_cast<size_t>(B * T * Hq * dv));
  // Only used per row; with B or T 0, dv is not bounded by value's size ([0, 0, 2^50]).
  std::vector<double> write(static_cast<size_t>(B > 0 && T > 0 ? dv : 0));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t g = 0; g < Hkv; ++g) {
        double* s = state.data() + (b * Hkv + g) * dk * dv;  // [dk, dv]
        const double* kt = kd.data() + ((b * T + t) * Hkv + g) * dk;
        const double* vt = vd.data() + ((b * T + t) * Hkv + g) * dv;
        if (p.gated) {
          for (int64_t d = 0; d < dk; ++d) {
            const double gate =
                p.per_head_decay ? gd[(b * T + t) * Hkv + g] : gd[((b * T + t) * Hkv + g) * dk + d];
            const double f = std::exp(gate);
            for (int64_t m = 0; m < dv; ++m) s[d * dv + m] *= f;
          }
        }
        if (p.delta) {
          // v' = beta * (v - S^T k): write only what the state does not already predict.
          const double bt = p.per_head_beta ? bd[(b * T + t) * Hkv + g] : bd[b * T + t];
          for (int64_t m = 0; m < dv; ++m) {
            double retrieved = 0;
            for (int64_t d = 0; d < dk; ++d) retrieved += s[d * dv + m] * kt[d];
            write[m] = bt * (vt[m] - retrieved);
          }
        } else {
          std::copy(vt, vt + dv, write.begin());
        }
        for (int64_t d = 0; d < dk; ++d)
          for (int64_t m = 0; m < dv; ++m) s[d * dv + m] += kt[d] * write[m];
        for (int64_t r = 0; r < group; ++r) {
          const int64_t h = g * group + r;
          const double* qt = qd.data() + ((b * T + t) * Hq + h) * dk;
          double* o = out.data() + ((b * T + t) * Hq + h) * dv;
          for (int64_t m = 0; m < dv; ++m) {
            double acc = 0;
            for (int64_t d = 0; d < dk; ++d) acc += qt[d] * s[d * dv + m];
            o[m] = p.scale * acc;
          }
        }
      }
    }
  }
  StoreFloats(out.data(), output);
  StoreFloats(state.data(), present_state);
}

}  // namespace onyx::kernels::reference
