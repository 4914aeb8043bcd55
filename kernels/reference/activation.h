// Reference kernels of the activation family (ai.onnx). Each reads its attributes per run (with the
// defaults of the node's opset) and maps X to Y of the same type and shape; float16/bfloat16
// compute through float. Outputs are written in index order, so in-place use is safe.
#pragma once

#include "kernels/kernel.h"

namespace onyx::kernels::reference {

// Every activation of the table (kernels/activation_rules.h): the node's parameters read by
// ParseActivation and Y = ActivationScalar(X) per element. Relu takes every numeric type (signed
// integers from opset 14), the others the float types.
Status ActivationRef(KernelContext& ctx);
Status PReluRef(KernelContext& ctx);   // slope broadcasts unidirectionally onto X
Status SwiGLURef(KernelContext& ctx);  // Swish_alpha(A) * B, A and B of one shape, opset 28
Status ShrinkRef(KernelContext& ctx);  // every numeric type

}  // namespace onyx::kernels::reference
