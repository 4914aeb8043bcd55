// The executor: walks an ExecutionPlan's steps, binding inputs, constants, arena slots and outer
// scope values; runs subgraphs for control-flow kernels. Allocates only heap-stored values.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/subgraph_plans.h"
#include "memory/arena.h"
#include "onyx/session.h"
#include "planner/execution_plan.h"

namespace onyx::engine {

// Values of one graph execution; `parent` resolves outer-scope names.
struct Frame {
  const planner::ExecutionPlan* plan = nullptr;
  std::vector<Value> values;  // by slot id
  const Frame* parent = nullptr;
  uint8_t* arena = nullptr;
  // By slot id: caller memory for graph outputs (RunOptions::output_buffers; main graph only).
  const std::vector<const Tensor*>* caller_outputs = nullptr;

  // The value of a slot: constant, bound input, computed value or outer-scope lookup.
  const Value* Get(int slot) const;
  const Value* Lookup(const std::string& name) const;
};

// Whether a run must stop (RunOptions::terminate, RunOptions::timeout_ms): made once per
// top-level run, so its subgraph runs share one deadline (DESIGN contract 8).
class RunControl {
 public:
  explicit RunControl(const RunOptions& options);
  const RunOptions& options() const { return options_; }
  // Cancelled once the terminate flag is set or the deadline has passed, else Ok. Costs one
  // relaxed load, plus a clock read when there is a timeout.
  Status Check() const;

 private:
  const RunOptions& options_;
  bool has_deadline_ = false;
  std::chrono::steady_clock::time_point deadline_;
};

class Executor {
 public:
  // `shaped` (may be null): subgraph plans made for the shapes of the plans this executor runs,
  // tried before the session's `subplans`.
  Executor(const SubgraphPlans* subplans, int threads, const SubgraphPlans* shaped = nullptr)
      : subplans_(subplans), shaped_(shaped), threads_(threads) {}

  // Runs `plan` with `inputs` bound by position to plan.input_slots (undefined = not fed, use
  // the plan's constant). Outputs own their buffers. `options` carries the per-value and
  // per-step observers and the cancellation flag and timeout, whose clock starts here; `depth` is
  // the subgraph nesting level reported to the step observer.
  Status Run(const planner::ExecutionPlan& plan, memory::ArenaPool* arenas,
             const std::vector<Value>& inputs, const Frame* parent, std::vector<Value>* outputs,
             const RunOptions& options, int depth = 0) const;
  // Same, within a run whose deadline is already fixed (subgraphs). Checks `control` before every
  // step.
  Status Run(const planner::ExecutionPlan& plan, memory::ArenaPool* arenas,
             const std::vector<Value>& inputs, const Frame* parent, std::vector<Value>* outputs,
             const RunControl& control, int depth) const;

  // Runs a subgraph body with its formal inputs bound in order.
  StatusOr<std::vector<Value>> RunSubgraph(const ir::Graph& graph, const std::vector<Value>& inputs,
                                           const Frame* parent, const RunControl& control,
                                           int depth) const;

  int threads() const { return threads_; }

 private:
  const SubgraphPlans* subplans_;
  const SubgraphPlans* shaped_;
  int threads_;
};

}  // namespace onyx::engine
