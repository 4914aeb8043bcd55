// oneDNN matrix products for MatMul, Gemm (opset 7+) and com.onyx FusedMatMul (float32, static
// shapes, rank >= 2).
#pragma once

#include <string>
#include <vector>

#include "kernels/op_registry.h"

namespace onyx::kernels::x86 {

Status MatMulOnednnSupports(const NodeView& node, const std::vector<TypeInfo>& types);
KernelImpl MatMulOnednnImpl(const std::string& name);

}  // namespace onyx::kernels::x86
