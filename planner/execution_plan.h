// ExecutionPlan: everything decided before a run — the steps in schedule order with their kernels,
// each value's storage (input, constant, arena offset, heap) and the arena statistics.
#pragma once

#include <climits>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/ir/graph.h"
#include "kernels/kernel.h"
#include "kernels/op_registry.h"
#include "onyx/value.h"

namespace onyx::planner {

enum class Storage {
  kInput,     // bound from a feed (or an IR < 4 initializer default)
  kConstant,  // initializer or folded value, held by the plan
  kArena,     // planned offset in the run's arena
  kHeap,      // allocated by the kernel at run time (dynamic shape, strings, sequences, outputs)
  kOuter,     // read from an enclosing graph's frame (subgraphs)
};
const char* StorageName(Storage s);
// Escapes a string for a JSON string literal; shared by ToJson and the CLI's JSON reports.
std::string JsonEscape(const std::string& s);

struct ValueSlot {
  std::string name;
  TypeInfo type;  // inferred (or declared) type
  Storage storage = Storage::kHeap;
  size_t offset = 0;   // arena offset in bytes (kArena)
  size_t bytes = 0;    // planned size in bytes, 64-byte aligned (kArena)
  int def_step = -1;   // producing step; -1 when defined before the first step
  int last_step = -1;  // last step reading it; INT_MAX when it is a graph output
  bool is_graph_output = false;
  int in_place_of = -1;  // slot whose arena bytes this value reuses (its kernel runs in place)
};

struct PlanStep {
  const ir::Node* node = nullptr;
  const kernels::OpDef* op = nullptr;
  std::string impl_name;
  kernels::IsaLevel isa = kernels::IsaLevel::kScalar;  // the level the chosen impl runs at
  // The impls tried before it, each with why it did not take the node (`onyx plan --why`).
  std::vector<std::pair<std::string, std::string>> rejected;
  std::unique_ptr<kernels::Kernel> kernel;
  std::vector<int> inputs;             // slot ids; -1 for an omitted optional input
  std::vector<int> outputs;            // slot ids; -1 for an omitted optional output
  std::vector<int> implicit;           // slots read by the node's subgraphs
  std::vector<int> release;            // heap slots whose last reader is this step
  std::vector<const ir::Node*> fused;  // nodes folded into this step by the fusion pass
};

// One rewrite of the fusion pass, as `onyx plan` lists it.
struct FusionRecord {
  std::string kind;                    // the rule's kind, e.g. "ConvBatchNorm"
  std::vector<const ir::Node*> nodes;  // the model nodes the rewritten nodes stood for
  const ir::Node* into = nullptr;      // node of the step that computes them now; null: removed
};

struct ExecutionPlan {
  const ir::Graph* graph = nullptr;
  std::vector<ValueSlot> slots;
  std::map<std::string, int> slot_of;
  std::map<int, Value> constants;  // kConstant slots
  // constants' entries by slot id (null: none), for the executor's per-input look-ups; made by
  // IndexConstants when the planner has finished the plan (a plan is run only after that).
  std::vector<const Value*> constant_at;
  std::vector<PlanStep> steps;
  // Nodes the planner made (fused ops, layout reorders); steps point at them, so a deque keeps
  // their addresses stable. The model's own graph is shared by all plans and never modified.
  std::deque<ir::Node> synthesized_nodes;
  std::vector<int> input_slots;          // in graph-input order
  std::vector<int> output_slots;         // in graph-output order
  std::vector<std::string> outer_names;  // names read from enclosing scopes
  size_t arena_bytes = 0;                // size of the planned arena
  size_t arena_bytes_no_reuse = 0;       // sum of all arena values' sizes
  size_t arena_bytes_max_live = 0;       // max over steps of bytes live at once (lower bound)
  int folded_nodes = 0;                  // nodes removed by constant folding
  int fused_nodes = 0;                   // nodes removed by the fusion pass
  std::vector<FusionRecord> fusions;     // every rewrite of the fusion pass, in order
  int layout_transposes = 0;             // Transposes placed by layout propagation
  size_t released_constant_bytes = 0;    // constant values dropped after kernels packed them

  void IndexConstants();

  // Human-readable schedule with each value's storage, offset and size (`onyx plan`).
  // `why`: under each step, the impls tried before the chosen one and why each was passed over.
  std::string Print(bool why = false) const;
  // JSON object with nodes, schedule, arena_bytes, no_reuse_bytes, max_live_bytes, values;
  // `extra`, when given, is more members ("key": value, ...) the caller adds at the end.
  std::string ToJson(const std::string& extra = "") const;
};

}  // namespace onyx::planner
