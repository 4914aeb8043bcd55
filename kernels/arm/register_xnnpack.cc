// Registers the XNNPACK kernels (ONYX_XNNPACK) in front of every other kernel of their ops.
#include <cstdlib>
#include <cstring>

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
  // Test-only: ONYX_XNNPACK_WITHOUT_ONEDNN=1 drops oneDNN's kernels, so that an x86-64 build
  // plans (layout pass included) with the kernel set of an AArch64 build, which has no oneDNN.
  const char* env = std::getenv("ONYX_XNNPACK_WITHOUT_ONEDNN");
  if (env && std::strcmp(env, "1") == 0)
    r.RemoveImpls([](const KernelImpl& k) { return std::strcmp(k.isa.library, "onednn") == 0; });
}

}  // namespace onyx::kernels
