// oneDNN pooling for MaxPool (no Indices), AveragePool, GlobalAveragePool, GlobalMaxPool and the
// channels-last com.onyx NhwcMaxPool / NhwcAveragePool (float32, static shapes).
#pragma once

#include <string>

#include "kernels/op_registry.h"

namespace onyx::kernels::x86 {

KernelImpl PoolOnednnImpl(const std::string& name);

}  // namespace onyx::kernels::x86
