// The fast float32 kernels of the com.microsoft transformer ops (kernels/ops/transformer_ms.cc,
// on the Highway loops), as entries of their operators' kernel lists (kernels/kernel_lists.cc).
#pragma once

#include "kernels/op_registry.h"

namespace onyx::kernels {

KernelImpl MsSkipLayerNormHwyKernel();
KernelImpl MsSkipSimplifiedLayerNormHwyKernel();
KernelImpl MsEmbedLayerNormHwyKernel();
KernelImpl MsGeluHwyKernel();
KernelImpl MsBiasGeluHwyKernel();
KernelImpl MsFastGeluHwyKernel();
KernelImpl MsQuickGeluHwyKernel();
KernelImpl MsAttentionHwyKernel();
KernelImpl MsMultiHeadAttentionHwyKernel();
KernelImpl MsGroupQueryAttentionHwyKernel();
KernelImpl MsMatMulNBitsHwyKernel();

}  // namespace onyx::kernels
