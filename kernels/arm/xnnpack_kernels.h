// The XNNPACK kernels (fp32, channels-last): each operator and its packed weights are created
// once when the kernel is created, from constant weights; a run only sets up and runs it on the
// pool for the run's thread count. Built with ONYX_XNNPACK (default ON on AArch64).
#pragma once

#include <string>

#include "kernels/op_registry.h"

namespace onyx::kernels {

namespace arm {

// com.onyx NhwcConv (2-D): groups, depthwise, pads, strides, dilations, bias, residual and the
// fused activation. Constant W and B.
KernelImpl ConvXnnpackImpl(const std::string& name);
// MatMul, Gemm and com.onyx FusedMatMul with a constant 2-D B: XNNPACK's fully connected
// operator over A's rows.
KernelImpl FullyConnectedXnnpackImpl(const std::string& name);
// com.onyx NhwcMaxPool and NhwcAveragePool (2-D, float32); a window over the whole map runs
// as XNNPACK's global average pooling.
KernelImpl MaxPoolXnnpackImpl(const std::string& name);
KernelImpl AveragePoolXnnpackImpl(const std::string& name);

}  // namespace arm

}  // namespace onyx::kernels
