// Deterministic Kahn schedule: the ready set is ordered by node position in the model file.
#pragma once

#include <vector>

#include "kernels/ir/graph.h"
#include "onyx/status.h"

namespace onyx::planner {

// Node indices in execution order. Dependencies are node inputs and subgraph (implicit) inputs.
// The same graph always gives the same order. Errors on a cycle, naming a node on it.
StatusOr<std::vector<int>> KahnSchedule(const ir::Graph& graph);

}  // namespace onyx::planner
