// oneDNN local response normalization across channels for LRN and the channels-last
// com.onyx NhwcLRN (float32, 4-D, static shapes, odd sizes).
#pragma once

#include <string>

#include "kernels/op_registry.h"

namespace onyx::kernels::x86 {

KernelImpl LrnOnednnImpl(const std::string& name);

}  // namespace onyx::kernels::x86
