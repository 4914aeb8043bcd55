// How `onyx plan` lists the fusion pass's rewrites (ExecutionPlan::Print and ToJson call these).
#pragma once

#include <string>

#include "planner/execution_plan.h"

namespace onyx::planner::fusion {

// Text: one summary line with the count per kind, then one line per rewrite.
std::string FusionsText(const ExecutionPlan& plan);
// JSON members (no braces): "fusions": [{"kind", "nodes", "into", "into_node"}, ...],
// "fusion_counts": {kind: count}. "into" is the step index, or null when the nodes were removed.
std::string FusionsJson(const ExecutionPlan& plan, const std::string& indent);

}  // namespace onyx::planner::fusion
