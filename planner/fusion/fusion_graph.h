// FusionGraph: the fusion pass's mutable view of a plan's steps. Nodes are steps (or the fused
// nodes that replace them), values are the plan's slots. The model graph is never touched: new
// nodes are synthesized into the plan, new constants into its slots, and Commit() writes the
// surviving nodes back as the plan's steps in a Kahn order keyed by the original step positions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/constant_pool.h"
#include "planner/execution_plan.h"

namespace onyx::planner::fusion {

struct FusionNode {
  const ir::Node* node = nullptr;  // op type, domain, opset and attributes
  const kernels::OpDef* op = nullptr;
  std::vector<int> inputs;              // slot ids; -1 for an omitted optional input
  std::vector<int> outputs;             // slot ids; -1 for an omitted optional output
  std::vector<int> implicit;            // slots its subgraphs read
  std::vector<const ir::Node*> origin;  // model nodes it stands for, in model order
  int64_t position = 0;  // schedule key: derived from the original step positions, unique
  bool alive = true;
  int replaced_by = -1;  // when dead: the node that took its place (-1: removed outright)
};

// "Add" for ai.onnx, "com.onyx:FusedConv" otherwise: how patterns name op types.
std::string OpKey(const ir::Node& n);

class FusionGraph {
 public:
  // `pool` (may be null): where AddConstant shares derived constants across plans.
  FusionGraph(ExecutionPlan& plan, ConstantPool* pool = nullptr);

  ExecutionPlan& plan() { return plan_; }
  const ExecutionPlan& plan() const { return plan_; }
  int size() const { return static_cast<int>(nodes_.size()); }
  const FusionNode& node(int id) const { return nodes_[id]; }
  int num_original_steps() const { return original_steps_; }

  // Indices over the alive nodes; valid until the next mutation (call Reindex after a round).
  int Producer(int slot) const;                       // node id, or -1 (input, constant)
  const std::vector<int>& Consumers(int slot) const;  // one entry per use, implicit uses included
  bool HasImplicitUse(int slot) const;                // read by a subgraph (by name)
  bool IsGraphOutput(int slot) const;
  void Reindex();

  const TypeInfo& Type(int slot) const { return plan_.slots[slot].type; }
  const std::string& Name(int slot) const { return plan_.slots[slot].name; }
  // The slot's value when it is a constant tensor, else nullptr.
  const Tensor* Constant(int slot) const;

  // A new constant slot named after `base` (made unique).
  int AddConstant(const std::string& base, Tensor t);
  // A node owned by the plan (its address stays valid).
  const ir::Node* Synthesize(ir::Node n);
  // Appends a node; returns its id.
  int AddNode(FusionNode n);
  // Marks a node dead; `replaced_by` is the node that took its place or -1.
  void Kill(int id, int replaced_by);
  // Every alive node that reads `from` reads `to` instead.
  void ReplaceUses(int from, int to);

  // Writes the alive nodes back to plan.steps in Kahn order (ready set ordered by position).
  void Commit();

 private:
  ExecutionPlan& plan_;
  ConstantPool* pool_ = nullptr;
  std::vector<FusionNode> nodes_;
  int original_steps_ = 0;
  std::vector<int> producer_;
  std::vector<std::vector<int>> consumers_;
  std::vector<bool> implicit_use_;
  std::vector<bool> graph_output_;
};

}  // namespace onyx::planner::fusion
