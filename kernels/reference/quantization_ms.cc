// Reference kernels of the com.microsoft quantized operators (see quantization_ms.h). The float
// steps go through the QuantizeLinear / DequantizeLinear, AveragePool and Softmax references, so
// a QOperator node gives the bits of the DequantizeLinear → float op → QuantizeLinear graph it
// stands for wherever ONNX Runtime defines it that way.
#include "kernels/reference/quantization_ms.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "kernels/op_helpers.h"
#include "kernels/reference/conv_pool.h"
#include "kernels/reference/gemm_core.h"
#include "kernels/reference/quantization.h"
#include "kernels/reference/reduction.h"
#include "kernels/substitute_context.h"

namespace onyx::kernels::reference {
namespace {

constexpr int kTableSize = 256;  // one entry per 8-bit value

// Element i of a uint8 or int8 tensor.
int32_t Load8(const Tensor& t, int64_t i) {
  return t.dtype() == DType::kInt8 ? static_cast<int32_t>(t.data<int8_t>()[i])
                                   : static_cast<int32_t>(t.data<uint8_t>()[i]);
}

float ScaleOf(QuantParams q) {
  return static_cast<float>(ElementAsDouble(*q.scale, 0));
}

int32_t ZeroOf(QuantParams q) {
  return q.zero_point ? static_cast<int32_t>(ElementAsDouble(*q.zero_point, 0)) : 0;
}

// Stores round_half_even(v) + zero_point, saturated to y's type (uint8 or int8), as element i.
void StoreQuantized(Tensor& y, int64_t i, float v, int32_t zero_point) {
  const double lo = y.dtype() == DType::kInt8 ? -128 : 0;
  const double hi = y.dtype() == DType::kInt8 ? 127 : 255;
  double r = static_cast<double>(std::nearbyint(v)) + zero_point;
  if (std::isnan(r)) r = 0;
  StoreFromDouble(y.dtype(), y.raw_data(), i, std::clamp(r, lo, hi));
}

// One scale for the whole tensor.
QuantLayout PerTensor(const Tensor& x) {
  QuantLayout layout;
  layout.inner = x.numel();
  return layout;
}

// t - zero[column], with the column of flat element i given by `column(i)`.
template <typename ColumnFn>
std::vector<int32_t> Centered(const Tensor& t, const std::vector<int32_t>& zero, ColumnFn column) {
  std::vector<int32_t> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i)
    v[i] = Load8(t, i) - (zero.size() == 1 ? zero[0] : zero[column(i)]);
  return v;
}

}  // namespace

void DequantizePerTensor(const Tensor& x, QuantParams q, Tensor& y) {
  DequantizeLinear(x, *q.scale, q.zero_point, PerTensor(x), y);
}

void QuantizePerTensor(const Tensor& x, QuantParams q, Tensor& y) {
  QuantizeLinear(x, *q.scale, q.zero_point, PerTensor(x), DType::kFloat, /*saturate=*/true, y);
}

void QLinearBinary(QLinearBinaryOp op, const Tensor& a, QuantParams qa, const Tensor& b,
                   QuantParams qb, QuantParams qc, Tensor& c) {
  Tensor af = Tensor::AllocateUninitialized(DType::kFloat, a.shape());
  Tensor bf = Tensor::AllocateUninitialized(DType::kFloat, b.shape());
  Tensor cf = Tensor::AllocateUninitialized(DType::kFloat, c.shape());
  DequantizePerTensor(a, qa, af);
  DequantizePerTensor(b, qb, bf);
  const float* as = af.data<float>();
  const float* bs = bf.data<float>();
  float* cs = cf.data<float>();
  ForEachBroadcast(
      c.shape(), {BroadcastStrides(a.shape(), c.shape()), BroadcastStrides(b.shape(), c.shape())},
      [&](int64_t i, const int64_t* off) {
        cs[i] = op == QLinearBinaryOp::kAdd ? as[off[0]] + bs[off[1]] : as[off[0]] * bs[off[1]];
      });
  QuantizePerTensor(cf, qc, c);
}

std::vector<uint8_t> BuildLookupTable(DType t, QuantParams qx, QuantParams qy,
                                      const std::function<float(float)>& f) {
  Tensor x = Tensor::AllocateUninitialized(t, {kTableSize});
  for (int i = 0; i < kTableSize; ++i) static_cast<uint8_t*>(x.raw_data())[i] = i;
  Tensor v = Tensor::AllocateUninitialized(DType::kFloat, {kTableSize});
  DequantizePerTensor(x, qx, v);
  float* vs = v.data<float>();
  for (int i = 0; i < kTableSize; ++i) vs[i] = f(vs[i]);
  Tensor q = Tensor::AllocateUninitialized(t, {kTableSize});
  QuantizePerTensor(v, qy, q);
  const uint8_t* qs = static_cast<const uint8_t*>(q.raw_data());
  return std::vector<uint8_t>(qs, qs + kTableSize);
}

void ApplyLookupTable(const Tensor& x, const std::vector<uint8_t>& table, Tensor& y) {
  const uint8_t* src = static_cast<const uint8_t*>(x.raw_data());
  uint8_t* dst = static_cast<uint8_t*>(y.raw_data());
  for (int64_t i = 0; i < x.numel(); ++i) dst[i] = table[src[i]];
}

void QLinearConcat(const std::vector<const Tensor*>& xs, const std::vector<QuantParams>& qx,
                   QuantParams qy, int64_t axis, Tensor& y) {
  const Shape& out = y.shape();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out[d];
  for (size_t d = axis + 1; d < out.size(); ++d) inner *= out[d];
  const int64_t y_row = out[axis] * inner;  // elements of one outer slice of y
  uint8_t* dst = static_cast<uint8_t*>(y.raw_data());
  int64_t offset = 0;  // where input i starts inside an outer slice of y
  const auto identity = [](float v) { return v; };
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& x = *xs[i];
    const std::vector<uint8_t> table = BuildLookupTable(y.dtype(), qx[i], qy, identity);
    const uint8_t* src = static_cast<const uint8_t*>(x.raw_data());
    const int64_t x_row = x.dim(axis) * inner;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < x_row; ++j) dst[o * y_row + offset + j] = table[src[o * x_row + j]];
    offset += x_row;
  }
}

void MoveChannels(const Tensor& src, bool to_channels_last, Tensor& dst) {
  const Shape& s = src.shape();
  const int64_t batch = s[0];
  const int64_t channels = to_channels_last ? s[1] : s.back();
  const int64_t spatial = channels == 0 || batch == 0 ? 0 : src.numel() / (batch * channels);
  const size_t elem = DTypeSize(src.dtype());
  const char* from = static_cast<const char*>(src.raw_data());
  char* to = static_cast<char*>(dst.raw_data());
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t p = 0; p < spatial; ++p) {
        const int64_t first = (n * channels + c) * spatial + p;  // [N, C, S] index
        const int64_t last = (n * spatial + p) * channels + c;   // [N, S, C] index
        const int64_t i = to_channels_last ? first : last;
        const int64_t o = to_channels_last ? last : first;
        std::memcpy(to + o * elem, from + i * elem, elem);
      }
    }
  }
}

StatusOr<Tensor> AveragePoolFloat(const NodeView& node, const Tensor& x) {
  SubstituteContext inner(node, Value(x));
  ONYX_RETURN_IF_ERROR(AveragePoolKernel(inner));
  return inner.output();
}

void QLinearGlobalAveragePool(const Tensor& x, QuantParams qx, QuantParams qy, bool channels_last,
                              Tensor& y) {
  const int64_t batch = x.dim(0);
  const int64_t channels = channels_last ? x.shape().back() : x.dim(1);
  const int64_t size = batch * channels == 0 ? 0 : x.numel() / (batch * channels);
  const int32_t x_zero = ZeroOf(qx);
  const int32_t y_zero = ZeroOf(qy);
  // ONNX Runtime's multiplier, in float: x_scale / (y_scale * size).
  const float multiplier = ScaleOf(qx) / (ScaleOf(qy) * static_cast<float>(size));
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      int64_t sum = 0;
      for (int64_t p = 0; p < size; ++p) {
        const int64_t i =
            channels_last ? (n * size + p) * channels + c : (n * channels + c) * size + p;
        sum += Load8(x, i) - x_zero;
      }
      const float v = size == 0 ? 0.0f : static_cast<float>(sum) * multiplier;
      StoreQuantized(y, n * channels + c, v, y_zero);
    }
  }
}

void QLinearSoftmax(const Tensor& x, QuantParams qx, QuantParams qy, int64_t outer, int64_t n,
                    int64_t inner, Tensor& y) {
  if (x.numel() == 0) return;
  Tensor xf = Tensor::AllocateUninitialized(DType::kFloat, x.shape());
  Tensor yf = Tensor::AllocateUninitialized(DType::kFloat, x.shape());
  DequantizePerTensor(x, qx, xf);
  SoftmaxAxis<float>(SoftmaxKind::kSoftmax, xf.data<float>(), yf.data<float>(), outer, n, inner);
  QuantizePerTensor(yf, qy, y);
}

std::vector<int32_t> QuantizedGemm(const Tensor& a, int32_t a_zero, bool trans_a, const Tensor& b,
                                   const std::vector<int32_t>& b_zero, bool trans_b) {
  const int64_t m = trans_a ? a.dim(1) : a.dim(0);
  const int64_t k = trans_a ? a.dim(0) : a.dim(1);
  const int64_t n = trans_b ? b.dim(0) : b.dim(1);
  const std::vector<int32_t> a32 = Centered(a, {a_zero}, [](int64_t) { return 0; });
  // Column j of op(B) is row j of B when B is stored transposed.
  const std::vector<int32_t> b32 =
      Centered(b, b_zero, [&](int64_t i) { return trans_b ? i / k : i % n; });
  std::vector<int32_t> y(static_cast<size_t>(m * n));
  GemmNaive<int32_t, int64_t>(trans_a, trans_b, m, n, k, 1, a32.data(), a.dim(1), b32.data(),
                              b.dim(1), 0, y.data(), n);
  return y;
}

std::vector<int32_t> QuantizedMatMul(const Tensor& a, int32_t a_zero, const Tensor& b,
                                     const std::vector<int32_t>& b_zero, const Shape& out) {
  // 1-D operands: A [k] is [1, k], B [k] is [k, 1] (MatMul's rule); the dims are dropped again in
  // `out`, which has the same elements.
  Shape as = a.shape(), bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  const Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  const Shape batch(out.begin(), out.end() - (a.rank() > 1 ? 1 : 0) - (b.rank() > 1 ? 1 : 0));
  const std::vector<int32_t> a32 = Centered(a, {a_zero}, [](int64_t) { return 0; });
  const std::vector<int32_t> b32 = Centered(b, b_zero, [&](int64_t i) { return i % n; });
  std::vector<int32_t> y(static_cast<size_t>(ShapeElementCount(out)));
  if (m * n == 0) return y;
  ForEachBroadcast(batch, {BroadcastStrides(a_batch, batch), BroadcastStrides(b_batch, batch)},
                   [&](int64_t i, const int64_t* off) {
                     GemmNaive<int32_t, int64_t>(
                         false, false, m, n, k, 1, a32.data() + off[0] * m * k, k,
                         b32.data() + off[1] * k * n, n, 0, y.data() + i * m * n, n);
                   });
  return y;
}

void RequantizeInt32(const std::vector<int32_t>& acc, int64_t n,
                     const std::vector<float>& multiplier, int32_t zero_point, Tensor& y) {
  for (size_t i = 0; i < acc.size(); ++i) {
    const float m = multiplier.size() == 1 ? multiplier[0] : multiplier[i % n];
    StoreQuantized(y, static_cast<int64_t>(i), static_cast<float>(acc[i]) * m, zero_point);
  }
}

void ScaleInt32ToFloat(const std::vector<int32_t>& acc, int64_t n,
                       const std::vector<float>& multiplier, const float* bias, Tensor& y) {
  float* dst = y.data<float>();
  for (size_t i = 0; i < acc.size(); ++i) {
    const float m = multiplier.size() == 1 ? multiplier[0] : multiplier[i % n];
    float v = static_cast<float>(acc[i]) * m;
    if (bias) v += bias[i % n];
    dst[i] = v;
  }
}

}  // namespace onyx::kernels::reference
