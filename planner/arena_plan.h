// Arena planning: liveness intervals → 64-byte-aligned offsets in one block, greedy by size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "planner/execution_plan.h"

namespace onyx::planner {

struct Interval {
  int first;     // first step the value is live (inclusive)
  int last;      // last step the value is live (inclusive)
  size_t bytes;  // size, already aligned
};

struct ArenaLayout {
  std::vector<size_t> offsets;  // one per interval
  size_t arena_bytes = 0;
  size_t no_reuse_bytes = 0;
  size_t max_live_bytes = 0;
};

// Places every interval so that no two whose lifetimes overlap share a byte. Largest first; each
// goes to the lowest offset that fits among the already placed ones it overlaps in time.
// Deterministic: ties break by first step, then by input order.
ArenaLayout PlanArena(const std::vector<Interval>& intervals);

// Lets a step's output 0 take over input k's arena bytes when its OpDef allows it
// (inplace_input), the input dies at that step and both have the same dtype and size.
void ChooseInPlace(ExecutionPlan& plan);

// Assigns offsets to the plan's kArena slots from their liveness and fills the statistics.
// Values chained in place share one buffer whose lifetime spans the whole chain. Fails (kLimit)
// when a size does not fit 64 bits or the arena needs more than `max_arena_bytes` (0: no
// ceiling), before any arena is allocated.
Status PlanArenaForPlan(ExecutionPlan& plan, uint64_t max_arena_bytes = 0);

}  // namespace onyx::planner
