// oneDNN Attention (opset 23+) for float32 Q/K/V with equal head counts, an optional additive
// mask and only output Y; everything else stays on the reference kernel.
#pragma once

#include <string>

#include "kernels/op_registry.h"

namespace onyx::kernels::x86 {

KernelImpl AttentionOnednnImpl(const std::string& name);

}  // namespace onyx::kernels::x86
