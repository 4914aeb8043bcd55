// Registers the XNNPACK kernels (ONYX_XNNPACK) in front of every other kernel of their ops.
#include "kernels/arm/xnnpack_kernels.h"

namespace onyx::kernels {

void RegisterXnnpackKernels(OpRegistry& r) {
  r.PrependImpl("com.onyx", "NhwcConv", arm::ConvXnnpackImpl("NhwcConv_f32_xnnpack"));
  r.PrependImpl("", "MatMul", arm::FullyConnectedXnnpackImpl("MatMul_f32_xnnpack"));
  r.PrependImpl("", "Gemm", arm::FullyConnectedXnnpackImpl("Gemm_f32_xnnpack"));
  r.PrependImpl("com.onyx", "FusedMatMul",
                arm::FullyConnectedXnnpackImpl("FusedMatMul_f32_xnnpack"));
  r.PrependImpl("com.onyx", "NhwcMaxPool", arm::MaxPoolXnnpackImpl("NhwcMaxPool_f32_xnnpack"));
  r.PrependImpl("com.onyx", "NhwcAveragePool",
                arm::AveragePoolXnnpackImpl("NhwcAveragePool_f32_xnnpack"));
}

}  // namespace onyx::kernels
