// The plans of a model's subgraphs (If branches, Loop and Scan bodies), by subgraph.
#pragma once

#include <map>
#include <memory>

#include "onyx/status.h"
#include "planner/execution_plan.h"

namespace onyx::engine {

// A subgraph's plan, or the planning error of an If branch or Loop body left to run time (it
// fails with that error when a run reaches it; see InferIf and InferLoop). A session holds one set
// made at creation for the declared input types; each plan for concrete input shapes may hold
// another, planned for those shapes (CachedPlan::subplans), which runs first where it has a plan.
using SubgraphPlans = std::map<const ir::Graph*, StatusOr<std::unique_ptr<planner::ExecutionPlan>>>;

}  // namespace onyx::engine
