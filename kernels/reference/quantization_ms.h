// Reference math of ONNX Runtime's com.microsoft quantized operators (the QOperator format that
// onnxruntime.quantization writes): QLinearAdd, QLinearMul, QLinearConcat, QLinearAveragePool,
// QLinearGlobalAveragePool, QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax, QGemm,
// MatMulIntegerToFloat and DynamicQuantizeMatMul. Quantized tensors are uint8 or int8 with one
// float scale and one zero point each (per tensor), except B of the products, whose scale and zero
// point may also be one per column. Everything runs on plain loops; the float steps reuse the
// QuantizeLinear, DequantizeLinear, AveragePool and Softmax reference kernels.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/kernel.h"
#include "onyx/status.h"
#include "onyx/tensor.h"

namespace onyx::kernels::reference {

// The per-tensor quantization parameters of one uint8/int8 tensor.
struct QuantParams {
  const Tensor* scale = nullptr;       // float, one element; never null
  const Tensor* zero_point = nullptr;  // the quantized tensor's type, one element; null = 0
};

// y = scale * (x - zero_point), rounded once to float (DequantizeLinear). y: float, x's shape.
void DequantizePerTensor(const Tensor& x, QuantParams q, Tensor& y);
// y = saturate(round_half_even(x / scale) + zero_point), the division rounded to float
// (QuantizeLinear with a float scale). x: float; y: uint8 or int8 with x's shape.
void QuantizePerTensor(const Tensor& x, QuantParams q, Tensor& y);

// ---- Elementwise ----

enum class QLinearBinaryOp { kAdd, kMul };
// c = Quantize(Dequantize(a) op Dequantize(b)) with numpy broadcasting, the operation in float:
// the QuantizeLinear / Add|Mul / DequantizeLinear graph the operator replaces. c must be allocated
// with the broadcast shape and a's type (b's too).
void QLinearBinary(QLinearBinaryOp op, const Tensor& a, QuantParams qa, const Tensor& b,
                   QuantParams qb, QuantParams qc, Tensor& c);

// The 256 results of y = Quantize(f(Dequantize(x))) for every value x of type `t` (uint8 or int8),
// indexed by x's byte. f maps float to float.
std::vector<uint8_t> BuildLookupTable(DType t, QuantParams qx, QuantParams qy,
                                      const std::function<float(float)>& f);
// y[i] = table[byte of x[i]]. x and y: the same 8-bit type and shape.
void ApplyLookupTable(const Tensor& x, const std::vector<uint8_t>& table, Tensor& y);

// ---- Concat ----

// y = concatenation along `axis` of xs[i] requantized from qx[i] to qy (through float, as
// BuildLookupTable with the identity). Every x has y's type and rank and y's dims except at the
// axis; y must be allocated.
void QLinearConcat(const std::vector<const Tensor*>& xs, const std::vector<QuantParams>& qx,
                   QuantParams qy, int64_t axis, Tensor& y);

// ---- Pooling ----

// Moves the channel dim of an [N, C, spatial...] tensor last ([N, spatial..., C]), or back when
// `to_channels_last` is false. Any element type; dst must be allocated with the moved shape.
void MoveChannels(const Tensor& src, bool to_channels_last, Tensor& dst);

// Runs onyx's float AveragePool reference kernel on x [N, C, spatial...] (float) with `node`'s
// window attributes (kernel_shape, strides, pads, auto_pad, ceil_mode, count_include_pad).
StatusOr<Tensor> AveragePoolFloat(const NodeView& node, const Tensor& x);

// Average over the spatial dims of x ([N, C, spatial...], or [N, spatial..., C] when
// channels_last), with ONNX Runtime's integer formula: the exact sum of x - x_zero over the S
// spatial positions times the float multiplier x_scale / (y_scale * S), rounded half to even,
// plus y_zero, saturated. y: x's type, the spatial dims 1.
void QLinearGlobalAveragePool(const Tensor& x, QuantParams qx, QuantParams qy, bool channels_last,
                              Tensor& y);

// ---- Softmax ----

// y = Quantize(Softmax(Dequantize(x))) along the middle axis of x viewed as [outer, n, inner]
// (the opset < 13 flattening is [outer, n, 1]); Softmax in float (SoftmaxAxis). y: x's type and
// shape.
void QLinearSoftmax(const Tensor& x, QuantParams qx, QuantParams qy, int64_t outer, int64_t n,
                    int64_t inner, Tensor& y);

// ---- Integer products ----

// The int32 matrix op(A - a_zero) * op(B - b_zero) ([m, n], row-major), wrapping on overflow as
// int32 accumulators do. A: uint8/int8 [m, k] ([k, m] when trans_a); B: uint8/int8 [k, n] ([n, k]
// when trans_b). b_zero holds 1 value or one per column of op(B) (n).
std::vector<int32_t> QuantizedGemm(const Tensor& a, int32_t a_zero, bool trans_a, const Tensor& b,
                                   const std::vector<int32_t>& b_zero, bool trans_b);

// The int32 numpy matmul (A - a_zero) x (B - b_zero) (batch dims broadcast, 1-D operands as in
// MatMul), row-major over `out` (MatMulShape(A, B), which the caller has checked). b_zero holds
// 1 value or one per column of B.
std::vector<int32_t> QuantizedMatMul(const Tensor& a, int32_t a_zero, const Tensor& b,
                                     const std::vector<int32_t>& b_zero, const Shape& out);

// y[r, j] = saturate(round_half_even(float(acc[r, j]) * multiplier[j]) + zero_point) over rows of
// `n` columns, in float as ONNX Runtime's requantization. multiplier holds 1 value or n. y: uint8
// or int8 with acc's element count.
void RequantizeInt32(const std::vector<int32_t>& acc, int64_t n,
                     const std::vector<float>& multiplier, int32_t zero_point, Tensor& y);
// y[r, j] = float(acc[r, j]) * multiplier[j] (+ bias[j]) in float. multiplier holds 1 value or
// n; bias is null or holds n. y: float with acc's element count.
void ScaleInt32ToFloat(const std::vector<int32_t>& acc, int64_t n,
                       const std::vector<float>& multiplier, const float* bias, Tensor& y);

}  // namespace onyx::kernels::reference
