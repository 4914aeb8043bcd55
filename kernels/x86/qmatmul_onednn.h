// oneDNN int8 matrix products with constant int8 weights: MatMulInteger (int32 out),
// com.microsoft MatMulIntegerToFloat (float out: a_scale * b_scale, plus a bias) and
// com.microsoft QGemm (float or 8-bit out). A's rows may change from run to run (a symbolic batch
// or sequence length).
#pragma once

#include <string>
#include <vector>

#include "kernels/op_registry.h"

namespace onyx::kernels::x86 {

// Accepts 8-bit A of rank >= 2 (shape may be symbolic), int8 B [K, N] with a static shape,
// scalar A zero point and scale, and float per-tensor or per-column B scales and bias. Whether
// B, its scale and zero point (all zeros) and the bias are constants is checked when the kernel
// is made.
Status QuantizedMatMulOnednnSupports(const NodeView& node, const std::vector<TypeInfo>& types);
KernelImpl QuantizedMatMulOnednnImpl(const std::string& name);

}  // namespace onyx::kernels::x86
