// The fusion pass: applies the fusion rules to a plan's steps until none matches.
//
// Order independence: each round collects every match of every rule over the whole graph, then
// applies a greedy set of non-touching matches chosen by a key that depends only on the matches
// (larger first, then rule priority, then the earlier root, then the rule name) — never on the
// position of a rule in the list. Matches that share a node, or where one reads a value the
// other produces, never apply in the same round, so each applied match still sees the graph it
// was matched on. The rewritten graph, and the Kahn schedule written back from it, are therefore
// the same for any order of the rule list.
#pragma once

#include <cstdint>

#include "planner/constant_pool.h"
#include "planner/execution_plan.h"
#include "planner/planner.h"

namespace onyx::planner::fusion {

// Runs the rules of `level` (basic: exact removals; all: everything) on plan.steps, records each
// rewrite in plan.fusions and returns how many steps were removed. `rule_seed` != 0 shuffles
// the rule list first (for the order-independence test); the result must not change.
// `pool` (may be null) keeps the constants rewrites derive once per session (ConstantPool).
int RunFusionPass(ExecutionPlan& plan, OptLevel level, uint64_t rule_seed = 0,
                  ConstantPool* pool = nullptr);

}  // namespace onyx::planner::fusion
