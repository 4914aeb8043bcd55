// Reference kernels for Attention and FlexAttention, plus the float helpers of attention.h.
#include "kernels/reference/attention.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/element_types.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/gemm_core.h"

namespace onyx::kernels::reference {

std::vector<double> LoadFloats(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  const bool ok = VisitFloat(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(src[i]);
  });
  if (!ok)
    for (size_t i = 0; i < out.size(); ++i) out[i] = ElementAsDouble(t, static_cast<int64_t>(i));
  return out;
}

void StoreFloats(const double* src, Tensor* t) {
  const int64_t n = t->numel();
  const bool ok = VisitFloat(t->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = t->data<T>();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, double>) {
        dst[i] = src[i];
      } else {
        dst[i] = T(static_cast<float>(src[i]));
      }
    }
  });
  if (!ok)
    for (int64_t i = 0; i < n; ++i) StoreFromDouble(t->dtype(), t->raw_data(), i, src[i]);
}

double RoundTo(DType t, double v) {
  switch (t) {
    case DType::kFloat:
      return static_cast<float>(v);
    case DType::kFloat16:
      return static_cast<float>(float16_t(static_cast<float>(v)));
    case DType::kBFloat16:
      return static_cast<float>(bfloat16_t(static_cast<float>(v)));
    default:
      return v;
  }
}

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Softmax of s[0..n) in place as numpy computes it in float type c: every step rounded to c, the
// sum too for bfloat16 (ml_dtypes rounds each partial sum), while float16 and float sums
// accumulate in float32 and round once. An all -inf row gives zeros (the ONNX reference's guard).
void SoftmaxAs(DType c, double* s, int64_t n) {
  const auto r = [c](double x) { return RoundTo(c, x); };
  double mx = kNegInf;
  for (int64_t j = 0; j < n; ++j) mx = std::max(mx, s[j]);
  if (mx == kNegInf) mx = 0;
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    s[j] = r(std::exp(r(s[j] - mx)));
    sum = c == DType::kBFloat16 ? r(sum + s[j]) : sum + s[j];
  }
  sum = r(sum);
  if (sum == 0) sum = 1;
  for (int64_t j = 0; j < n; ++j) s[j] = r(s[j] / sum);
}

// Numerically stable softmax of s[0..n) in place; all -inf gives NaN (0/0) like numpy.
void Softmax(double* s, int64_t n) {
  double mx = kNegInf;
  for (int64_t j = 0; j < n; ++j) mx = std::max(mx, s[j]);
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    s[j] = std::exp(s[j] - mx);
    sum += s[j];
  }
  for (int64_t j = 0; j < n; ++j) s[j] /= sum;
}

// The mask as additive values broadcast against [B, Hq, Lq, M]: strides per leading dim (0 when
// broadcast) and its last dim M.
struct MaskView {
  std::vector<double> values;
  int64_t stride[3] = {0, 0, 0};
  int64_t last = 0;
};

MaskView ViewMask(const Tensor& mask) {
  MaskView m;
  if (mask.dtype() == DType::kBool) {
    m.values.resize(static_cast<size_t>(mask.numel()));
    for (int64_t i = 0; i < mask.numel(); ++i) m.values[i] = mask.data<bool>()[i] ? 0.0 : kNegInf;
  } else if (IsFloatingPoint(mask.dtype())) {
    m.values = LoadFloats(mask);
  } else {
    m.values = TensorToDoubles(mask);
  }
  // Right-align the mask's dims with [B, Hq, Lq, M].
  int64_t dims[4] = {1, 1, 1, 1};
  const int64_t rank = mask.rank();
  for (int64_t r = 0; r < rank; ++r) dims[4 - rank + r] = mask.dim(r);
  m.last = dims[3];
  int64_t stride = dims[3];
  for (int d = 2; d >= 0; --d) {
    m.stride[d] = dims[d] == 1 ? 0 : stride;
    stride *= dims[d];
  }
  return m;
}

// Query rows per task of the float32 path: bounds the scores buffer at kQueryBlock x total keys.
constexpr int64_t kQueryBlock = 64;

// The float32 path for the common case (no KV cache, no softcap, no extra outputs, no softmax
// rounding): per (batch, head, block of query rows), scores = scale * Q K^T and Y = P V run on the
// shared GEMM straight from the strided Q/K/V rows, with the mask, causality and padding applied
// to the scores in between. Same results as the double loop up to float rounding.
void AttentionF32(const AttentionParams& p, const Tensor& q, const Tensor& k, const Tensor& v,
                  const Tensor* mask, const int64_t* nonpad, Tensor* y) {
  const int64_t B = p.batch, Hq = p.q_heads, Hkv = p.kv_heads, Lq = p.q_len, T = p.kv_len;
  const int64_t D = p.head_size, Dv = p.v_head_size;
  const int64_t group = Hq / Hkv;
  const float* qd = q.data<float>();
  const float* kd = k.data<float>();
  const float* vd = v.data<float>();
  float* yd = y->data<float>();
  MaskView m;
  if (mask) m = ViewMask(*mask);
  // Row strides: packed [B, L, H*D] interleaves the heads of one position.
  const int64_t ldq = p.packed_heads ? Hq * D : D;
  const int64_t ldk = p.packed_heads ? Hkv * D : D;
  const int64_t ldv = p.packed_heads ? Hkv * Dv : Dv;
  const int64_t ldy = p.packed_heads ? Hq * Dv : Dv;
  const auto head_base = [&](int64_t b, int64_t h, int64_t heads, int64_t len, int64_t dim) {
    return p.packed_heads ? (b * len * heads + h) * dim : (b * heads + h) * len * dim;
  };
  const int64_t blocks = (Lq + kQueryBlock - 1) / kQueryBlock;
  tbb::parallel_for(int64_t{0}, B * Hq * blocks, [&](int64_t task) {
    const int64_t b = task / (Hq * blocks);
    const int64_t h = (task / blocks) % Hq;
    const int64_t i0 = (task % blocks) * kQueryBlock;
    const int64_t rows = std::min(kQueryBlock, Lq - i0);
    const int64_t g = h / group;
    const float* qh = qd + head_base(b, h, Hq, Lq, D) + i0 * ldq;
    const float* kh = kd + head_base(b, g, Hkv, T, D);
    const float* vh = vd + head_base(b, g, Hkv, T, Dv);
    float* yh = yd + head_base(b, h, Hq, Lq, Dv) + i0 * ldy;
    std::vector<float> s(static_cast<size_t>(rows * T));
    if (T > 0 && D > 0) {
      Gemm<float>(false, true, rows, T, D, static_cast<float>(p.scale), qh, ldq, kh, ldk, 0.0f,
                  s.data(), T, false);
    } else {
      std::fill(s.begin(), s.end(), 0.0f);
    }
    const float neg_inf = -std::numeric_limits<float>::infinity();
    const int64_t offset = QueryOffset(p, nonpad, b);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      float* row = s.data() + r * T;
      const double* mrow =
          mask ? m.values.data() + b * m.stride[0] + h * m.stride[1] + i * m.stride[2] : nullptr;
      bool any_key = false;  // a key whose bias is not -inf
      for (int64_t j = 0; j < T; ++j) {
        const double bias = !KeyVisible(p, nonpad, b, offset, i, j) ? kNegInf
                            : !mrow                                 ? 0.0
                            : j < m.last                            ? mrow[j]
                                                                    : kNegInf;
        row[j] = bias == kNegInf ? neg_inf : row[j] + static_cast<float>(bias);
        any_key |= bias != kNegInf;
      }
      if (!any_key) {  // fully masked: zero probabilities, so a zero output row
        std::fill(row, row + T, 0.0f);
        continue;
      }
      float mx = neg_inf;
      for (int64_t j = 0; j < T; ++j) mx = std::max(mx, row[j]);
      float sum = 0;
      for (int64_t j = 0; j < T; ++j) {
        row[j] = std::exp(row[j] - mx);
        sum += row[j];
      }
      const float inv = 1.0f / sum;
      for (int64_t j = 0; j < T; ++j) row[j] *= inv;
    }
    if (Dv == 0) return;
    if (T > 0) {
      Gemm<float>(false, false, rows, Dv, T, 1.0f, s.data(), T, vh, ldv, 0.0f, yh, ldy, false);
    } else {
      for (int64_t r = 0; r < rows; ++r) std::fill(yh + r * ldy, yh + r * ldy + Dv, 0.0f);
    }
  });
}

}  // namespace

void Attention(const AttentionParams& p, const Tensor& q, const Tensor& k, const Tensor& v,
               const Tensor* mask, const Tensor* past_key, const Tensor* past_value,
               const int64_t* nonpad, Tensor* y, Tensor* present_key, Tensor* present_value,
               Tensor* qk_out) {
  if (q.dtype() == DType::kFloat && k.dtype() == DType::kFloat && v.dtype() == DType::kFloat &&
      y->dtype() == DType::kFloat && !past_key && !past_value && !present_key && !present_value &&
      !qk_out && p.softcap <= 0 && p.softmax_type == DType::kUndefined && p.past_len == 0) {
    AttentionF32(p, q, k, v, mask, nonpad, y);
    return;
  }
  const int64_t B = p.batch, Hq = p.q_heads, Hkv = p.kv_heads, Lq = p.q_len, Lk = p.kv_len;
  const int64_t P = p.past_len, T = p.total_len(), D = p.head_size, Dv = p.v_head_size;
  const int64_t group = Hq / Hkv;
  const std::vector<double> qd = LoadFloats(q);

  // present K/V: [B, Hkv, T, D] = past rows, then the new rows (unpacked from [B, L, H*D]).
  const auto concat = [&](const Tensor& fresh, const Tensor* past, int64_t dim) {
    const std::vector<double> nd = LoadFloats(fresh);
    const std::vector<double> pd = past ? LoadFloats(*past) : std::vector<double>();
    std::vector<double> out(static_cast<size_t>(B * Hkv * T * dim));
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t g = 0; g < Hkv; ++g) {
        for (int64_t j = 0; j < T; ++j) {
          const double* src;
          if (j < P) {
            src = pd.data() + ((b * Hkv + g) * P + j) * dim;
          } else if (p.packed_heads) {
            src = nd.data() + ((b * Lk + (j - P)) * Hkv + g) * dim;
          } else {
            src = nd.data() + ((b * Hkv + g) * Lk + (j - P)) * dim;
          }
          std::copy(src, src + dim, out.data() + ((b * Hkv + g) * T + j) * dim);
        }
      }
    }
    return out;
  };
  const std::vector<double> kc = concat(k, past_key, D);
  const std::vector<double> vc = concat(v, past_value, Dv);
  if (present_key) StoreFloats(kc.data(), present_key);
  if (present_value) StoreFloats(vc.data(), present_value);

  MaskView m;
  if (mask) m = ViewMask(*mask);
  std::vector<double> yd(static_cast<size_t>(B * Hq * Lq * Dv));
  std::vector<double> qk(qk_out ? static_cast<size_t>(B * Hq * Lq * T) : 0);
  std::vector<double> s(static_cast<size_t>(T));
  // float16/bfloat16 as numpy computes them: every operation rounds to Q's type t. Q and K are
  // each scaled by sqrt(scale) (rounded to t) before their product, which accumulates in float.
  const DType t = q.dtype();
  const bool stepwise = t == DType::kFloat16 || t == DType::kBFloat16;
  const auto r = [&](double x) { return stepwise ? RoundTo(t, x) : x; };
  const double sqrt_scale = RoundTo(t, std::sqrt(p.scale));
  std::vector<double> ks;  // K * sqrt(scale), rounded
  if (stepwise) {
    ks = kc;
    for (double& e : ks) e = r(e * sqrt_scale);
  }
  const DType softmax_type = p.softmax_type != DType::kUndefined ? p.softmax_type : t;
  std::vector<double> qs(static_cast<size_t>(D));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t offset = QueryOffset(p, nonpad, b);
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t g = h / group;  // GQA: consecutive query heads share a kv head
      const double* kh = (stepwise ? ks : kc).data() + (b * Hkv + g) * T * D;
      const double* vh = vc.data() + (b * Hkv + g) * T * Dv;
      for (int64_t i = 0; i < Lq; ++i) {
        const double* qr = p.packed_heads ? qd.data() + ((b * Lq + i) * Hq + h) * D
                                          : qd.data() + ((b * Hq + h) * Lq + i) * D;
        if (stepwise) {
          for (int64_t d = 0; d < D; ++d) qs[d] = r(qr[d] * sqrt_scale);
          qr = qs.data();
        }
        double* qk_row = qk_out ? qk.data() + ((b * Hq + h) * Lq + i) * T : nullptr;
        for (int64_t j = 0; j < T; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += qr[d] * kh[j * D + d];
          s[j] = stepwise ? r(static_cast<float>(dot)) : dot * p.scale;
        }
        if (qk_row && p.qk_output_mode == 0) std::copy(s.begin(), s.end(), qk_row);
        // Softcap comes before the mask so that -inf stays -inf.
        if (p.softcap > 0)
          for (double& e : s) e = r(r(std::tanh(r(e / p.softcap))) * p.softcap);
        if (qk_row && p.qk_output_mode == 1) std::copy(s.begin(), s.end(), qk_row);
        const int64_t mask_row = b * m.stride[0] + h * m.stride[1] + i * m.stride[2];
        bool any_key = false;  // a key whose bias (mask, causality, window, padding) is not -inf
        for (int64_t j = 0; j < T; ++j) {
          const double bias = !KeyVisible(p, nonpad, b, offset, i, j) ? kNegInf
                              : !mask                                 ? 0.0
                              : j < m.last                            ? r(m.values[mask_row + j])
                                                                      : kNegInf;
          s[j] = bias == kNegInf ? kNegInf : r(s[j] + bias);
          any_key |= bias != kNegInf;
        }
        if (qk_row && p.qk_output_mode == 2) std::copy(s.begin(), s.end(), qk_row);
        if (!any_key) {
          std::fill(s.begin(), s.end(), 0.0);  // fully masked: zero probabilities
        } else if (stepwise || p.softmax_type != DType::kUndefined) {
          for (double& e : s) e = RoundTo(softmax_type, e);
          SoftmaxAs(softmax_type, s.data(), T);
          for (double& e : s) e = RoundTo(t, e);
        } else {
          Softmax(s.data(), T);
        }
        if (qk_row && p.qk_output_mode == 3) std::copy(s.begin(), s.end(), qk_row);
        double* yr = p.packed_heads ? yd.data() + ((b * Lq + i) * Hq + h) * Dv
                                    : yd.data() + ((b * Hq + h) * Lq + i) * Dv;
        std::fill(yr, yr + Dv, 0.0);
        for (int64_t j = 0; j < T; ++j) {
          const double w = s[j];
          for (int64_t d = 0; d < Dv; ++d) yr[d] += w * vh[j * Dv + d];
        }
        if (stepwise)
          for (int64_t d = 0; d < Dv; ++d) yr[d] = static_cast<float>(yr[d]);
      }
    }
  }
  StoreFloats(yd.data(), y);
  if (qk_out) StoreFloats(qk.data(), qk_out);
}

void FlexAttentionScores(const FlexAttentionParams& p, const Tensor& q, const Tensor& k,
                         Tensor* scores) {
  const DType t = q.dtype();
  const int64_t L = p.q_len, S = p.kv_len, E = p.head_size, group = p.q_heads / p.kv_heads;
  // The ONNX reference scales both inputs by sqrt(scale), taken in float32 and rounded to Q's type.
  const double sqrt_scale = RoundTo(t, std::sqrt(static_cast<float>(p.scale)));
  std::vector<double> qd = LoadFloats(q);
  std::vector<double> kd = LoadFloats(k);
  for (double& e : qd) e = RoundTo(t, e * sqrt_scale);
  for (double& e : kd) e = RoundTo(t, e * sqrt_scale);
  std::vector<double> out(static_cast<size_t>(p.batch * p.q_heads * L * S));
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.q_heads; ++h) {
      const double* kh = kd.data() + (b * p.kv_heads + h / group) * S * E;
      for (int64_t i = 0; i < L; ++i) {
        const double* qr = qd.data() + ((b * p.q_heads + h) * L + i) * E;
        double* row = out.data() + ((b * p.q_heads + h) * L + i) * S;
        for (int64_t j = 0; j < S; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < E; ++e) dot += qr[e] * kh[j * E + e];
          row[j] = RoundTo(t, dot);  // the matmul's result type, then the softmax type
        }
      }
    }
  }
  StoreFloats(out.data(), scores);
}

void SoftmaxRows(Tensor* x, int64_t rows, int64_t n) {
  std::vector<double> d = LoadFloats(*x);
  for (int64_t r = 0; r < rows; ++r) Softmax(d.data() + r * n, n);
  StoreFloats(d.data(), x);
}

void FlexAttentionOutput(const FlexAttentionParams& p, const Tensor& probs, const Tensor& v,
                         Tensor* y) {
  const DType c = probs.dtype();
  const int64_t L = p.q_len, S = p.kv_len, Ev = p.v_head_size, group = p.q_heads / p.kv_heads;
  const std::vector<double> pd = LoadFloats(probs);
  std::vector<double> vd = LoadFloats(v);
  for (double& e : vd) e = RoundTo(c, e);  // V is cast to the softmax type first
  std::vector<double> out(static_cast<size_t>(p.batch * p.q_heads * L * Ev));
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.q_heads; ++h) {
      const double* vh = vd.data() + (b * p.kv_heads + h / group) * S * Ev;
      for (int64_t i = 0; i < L; ++i) {
        const double* pr = pd.data() + ((b * p.q_heads + h) * L + i) * S;
        double* yr = out.data() + ((b * p.q_heads + h) * L + i) * Ev;
        for (int64_t j = 0; j < S; ++j)
          for (int64_t e = 0; e < Ev; ++e) yr[e] += pr[j] * vh[j * Ev + e];
        for (int64_t e = 0; e < Ev; ++e) yr[e] = RoundTo(c, yr[e]);
      }
    }
  }
  StoreFloats(out.data(), y);
}

}  // namespace onyx::kernels::reference
