// Steps of a plan by op type, for tests that check what the planner's passes left to run.
#pragma once

#include <map>
#include <string>

#include "planner/execution_plan.h"

namespace onyx::testing {

inline std::map<std::string, int> StepCounts(const planner::ExecutionPlan& plan) {
  std::map<std::string, int> n;
  for (const planner::PlanStep& st : plan.steps) ++n[st.node->op_type];
  return n;
}

}  // namespace onyx::testing
