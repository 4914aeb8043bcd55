// ConvInteger (2-D, constant 8-bit weights with any zero point) on oneDNN's int8 convolution,
// exact in int32.
#pragma once

#include <string>

#include "kernels/op_registry.h"

namespace onyx::kernels::x86 {

KernelImpl ConvIntegerOnednnImpl(const std::string& name);

}  // namespace onyx::kernels::x86
