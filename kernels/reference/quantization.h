// Reference kernels for linear quantization: QuantizeLinear, DequantizeLinear and
// DynamicQuantizeLinear (ONNX opsets 10-25).
#pragma once

#include <cstdint>

#include "onyx/dtype.h"
#include "onyx/tensor.h"

namespace onyx::kernels::reference {

// How a scale / zero-point tensor maps onto the elements of x. x is viewed as
// [outer, axis_len, inner] around the quantization axis.
struct QuantLayout {
  enum class Kind { kPerTensor, kPerAxis, kBlocked };
  Kind kind = Kind::kPerTensor;
  int64_t outer = 1;       // product of x's dims before the axis
  int64_t axis_len = 1;    // x's dim at the axis
  int64_t inner = 1;       // product of x's dims after the axis
  int64_t block_size = 1;  // axis elements per scale entry (kBlocked only)
  int64_t num_blocks = 1;  // scale's dim at the axis (kBlocked only): ceil(axis_len / block_size)

  // Index into the scale (and zero point) of x's element at (o, a, i).
  int64_t ScaleIndex(int64_t o, int64_t a, int64_t i) const {
    switch (kind) {
      case Kind::kPerTensor:
        return 0;
      case Kind::kPerAxis:
        return a;
      case Kind::kBlocked:
        return (o * num_blocks + a / block_size) * inner + i;
    }
    return 0;
  }
};

// y = saturate(round_half_even(x / scale) + zero_point), converted to y's dtype (int8/uint8/
// int16/uint16/int4/uint4/int2/uint2 clamp to their range; float8 types follow `saturate`;
// float4e2m1 always saturates). `precision` is the float type the division is rounded to (float,
// float16, bfloat16 or double); x and scale are first rounded to it. `zero_point` may be null.
// x: float/float16/bfloat16/double/int32. scale: float/float16/bfloat16/double/int32/float8e8m0.
// y must be allocated with x's shape.
void QuantizeLinear(const Tensor& x, const Tensor& scale, const Tensor* zero_point,
                    const QuantLayout& layout, DType precision, bool saturate, Tensor& y);

// y = (x - zero_point) * scale in double, rounded once to y's dtype (float/float16/bfloat16/
// double). `zero_point` may be null (zero). y must be allocated with x's shape.
void DequantizeLinear(const Tensor& x, const Tensor& scale, const Tensor* zero_point,
                      const QuantLayout& layout, Tensor& y);

// uint8 dynamic quantization of n floats, in float32 arithmetic as the ONNX function body does:
// scale = (max(0, max x) - min(0, min x)) / 255 (1/255 when the range is empty),
// zero_point = round_half_even(clamp(-min / scale, 0, 255)),
// y = clamp(round_half_even(x / scale) + zero_point, 0, 255).
void DynamicQuantizeLinear(const float* x, int64_t n, uint8_t* y, float* scale,
                           uint8_t* zero_point);

}  // namespace onyx::kernels::reference
