// placeholder
#include "kernels/ops/ml_common.h"

namespace onyx::kernels::ml {
void RegisterMlFeatures(OpRegistry&) {}
}  // namespace onyx::kernels::ml
