// com.onyx QLinearLookup (a 256-entry byte table applied to an 8-bit tensor) on AVX512-VBMI's
// byte permutes.
#pragma once

#include <string>

#include "kernels/op_registry.h"

namespace onyx::kernels::x86 {

KernelImpl QLinearLookupVbmiImpl(const std::string& name);

}  // namespace onyx::kernels::x86
