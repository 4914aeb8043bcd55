// oneDNN convolution for Conv, com.onyx FusedConv and com.onyx NhwcConv (float32, static shapes).
#pragma once

#include <string>
#include <vector>

#include "kernels/op_registry.h"

namespace onyx::kernels::x86 {

// Accepts float32 X/W with static shapes, 1- to 3-D spatial, a matching group, [M] bias, a
// residual of the output's shape and an activation oneDNN can fuse.
Status ConvOnednnSupports(const NodeView& node, const std::vector<TypeInfo>& types);
KernelImpl ConvOnednnImpl(const std::string& name);

}  // namespace onyx::kernels::x86
