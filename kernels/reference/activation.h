// Reference kernels of the activation family (ai.onnx). Each reads its attributes per run (with the
// defaults of the node's opset) and maps X to Y of the same type and shape; float16/bfloat16
// compute through float. Outputs are written in index order, so in-place use is safe.
#pragma once

#include "kernels/kernel.h"

namespace onyx::kernels::reference {

Status ReluRef(KernelContext& ctx);  // float types; signed integers from opset 14
Status LeakyReluRef(KernelContext& ctx);
Status PReluRef(KernelContext& ctx);  // slope broadcasts unidirectionally onto X
Status EluRef(KernelContext& ctx);
Status SeluRef(KernelContext& ctx);
Status CeluRef(KernelContext& ctx);
Status GeluRef(KernelContext& ctx);  // approximate = "none" | "tanh"
Status SigmoidRef(KernelContext& ctx);
Status HardSigmoidRef(KernelContext& ctx);
Status HardSwishRef(KernelContext& ctx);
Status SoftplusRef(KernelContext& ctx);
Status SoftsignRef(KernelContext& ctx);
Status MishRef(KernelContext& ctx);
Status SwishRef(KernelContext& ctx);   // x * sigmoid(alpha * x), opset 24
Status SwiGLURef(KernelContext& ctx);  // Swish_alpha(A) * B, A and B of one shape, opset 28
Status ThresholdedReluRef(KernelContext& ctx);
Status ShrinkRef(KernelContext& ctx);  // every numeric type
Status TanhRef(KernelContext& ctx);

}  // namespace onyx::kernels::reference
