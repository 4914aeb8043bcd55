// Liveness: [def_step, last_step] for every slot of a plan; graph outputs stay live to the end.
#pragma once

#include "planner/execution_plan.h"

namespace onyx::planner {

// Fills ValueSlot::def_step/last_step and PlanStep::release from the plan's steps.
void ComputeLiveness(ExecutionPlan& plan);

}  // namespace onyx::planner
