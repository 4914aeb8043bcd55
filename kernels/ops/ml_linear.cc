// placeholder
#include "kernels/ops/ml_common.h"

namespace onyx::kernels::ml {
void RegisterMlLinear(OpRegistry&) {}
}  // namespace onyx::kernels::ml
