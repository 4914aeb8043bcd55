// Layout propagation (channels-last activations between oneDNN convolutions).
#pragma once

#include "planner/execution_plan.h"

namespace onyx::planner {

// Rewrites 2-D float convolutions that a channels-last kernel accepts into com.onyx NhwcConv,
// lets pooling, elementwise ops and channel Concats between them follow in that layout, and
// inserts Transpose steps named "layout/to_nhwc/..." and "layout/to_nchw/..." where values cross
// between layouts (graph outputs keep the ONNX layout). Runs before liveness and the arena plan.
// Returns the number of Transposes placed; does nothing without a channels-last conv kernel.
// Only kernels at or below `max_isa` count as accepting a node (a capped session plans no layout
// change for kernels it may not use).
int PropagateChannelsLast(ExecutionPlan& plan,
                          kernels::IsaLevel max_isa = kernels::ProcessIsaCap());

}  // namespace onyx::planner
