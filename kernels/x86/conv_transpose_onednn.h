// oneDNN deconvolution for ConvTranspose (float32, static shapes, 1- to 3-D spatial).
#pragma once

#include <string>

#include "kernels/op_registry.h"

namespace onyx::kernels::x86 {

KernelImpl ConvTransposeOnednnImpl(const std::string& name);

}  // namespace onyx::kernels::x86
