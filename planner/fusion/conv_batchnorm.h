// Conv + BatchNormalization (inference) → Conv with folded weights and bias.
#pragma once

#include "planner/execution_plan.h"

namespace onyx::planner::fusion {

// Folds every BatchNormalization whose only input producer is a float Conv with constant
// weights (and bias) and constant BN parameters into that Conv: W'[m] = W[m]·s[m],
// B'[m] = (B[m] − mean[m])·s[m] + beta[m] with s = gamma / sqrt(var + eps). The Conv's output must
// feed nothing but the BN. Returns how many BNs were removed.
int FuseConvBatchNorm(ExecutionPlan& plan);

}  // namespace onyx::planner::fusion
