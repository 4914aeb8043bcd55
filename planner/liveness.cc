// Liveness intervals over the schedule. A value nobody reads still lives for its own step, so an
// output without consumers is allocated (a known ONNX Runtime planner bug, avoided here).
#include "planner/liveness.h"

#include <algorithm>

namespace onyx::planner {

void ComputeLiveness(ExecutionPlan& plan) {
  for (ValueSlot& s : plan.slots) {
    s.def_step = -1;
    s.last_step = -1;
  }
  for (int i = 0; i < static_cast<int>(plan.steps.size()); ++i) {
    PlanStep& st = plan.steps[i];
    st.release.clear();
    for (int o : st.outputs)
      if (o >= 0) {
        plan.slots[o].def_step = i;
        plan.slots[o].last_step = std::max(plan.slots[o].last_step, i);
      }
    for (const auto* list : {&st.inputs, &st.implicit})
      for (int in : *list)
        if (in >= 0) plan.slots[in].last_step = std::max(plan.slots[in].last_step, i);
  }
  for (int o : plan.output_slots) {
    plan.slots[o].is_graph_output = true;
    plan.slots[o].last_step = INT_MAX;
  }
  for (int id = 0; id < static_cast<int>(plan.slots.size()); ++id) {
    const ValueSlot& s = plan.slots[id];
    if (s.storage == Storage::kHeap && s.last_step >= 0 && s.last_step != INT_MAX)
      plan.steps[s.last_step].release.push_back(id);
  }
}

}  // namespace onyx::planner
