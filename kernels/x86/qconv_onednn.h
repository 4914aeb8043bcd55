// oneDNN int8 convolution for QLinearConv: uint8 or int8 activations, int8 weights with zero
// zero points, per-tensor or per-channel weight scales, int32 bias, requantized output.
#pragma once

#include <string>
#include <vector>

#include "kernels/op_registry.h"

namespace onyx::kernels::x86 {

// Accepts 8-bit X and int8 W with static shapes (1- to 3-D spatial), scalar scales and zero
// points of the right types, a per-channel or scalar weight scale and an int32 [M] bias. Whether
// the scales and zero points are constants is checked when the kernel is made.
Status QLinearConvOnednnSupports(const NodeView& node, const std::vector<TypeInfo>& types);
KernelImpl QLinearConvOnednnImpl(const std::string& name);

}  // namespace onyx::kernels::x86
