// Common subexpression elimination: a step that applies the same operator, with the same
// attributes, to the same values as an earlier step is dropped, and its readers read the earlier
// step's outputs. Exporters write `x.shape` anew at every use: GPT-2's plan for symbolic shapes
// held 48 Shape nodes over a handful of tensors, each with its own Gather and Unsqueeze chain.
#pragma once

#include "planner/execution_plan.h"

namespace onyx::planner {

// Returns the number of steps removed; each is listed in plan.fusions as "CommonSubexpression".
// Random operators, nodes with subgraph or tensor attributes, and steps whose outputs are graph
// outputs or read by subgraphs are left alone.
int EliminateCommonSubexpressions(ExecutionPlan& plan);

}  // namespace onyx::planner
