// FusionGraph: indices over the alive nodes, plan-owned constants and nodes, and the Kahn
// write-back of the rewritten steps.
#include "planner/fusion/fusion_graph.h"

#include <queue>
#include <utility>

namespace onyx::planner::fusion {

// Original step i gets position i * kPositionStride; a rewrite that emits several nodes gives
// them consecutive positions after the smallest one it replaces.
constexpr int64_t kPositionStride = 64;

std::string OpKey(const ir::Node& n) {
  return n.domain.empty() ? n.op_type : n.domain + ":" + n.op_type;
}

FusionGraph::FusionGraph(ExecutionPlan& plan, ConstantPool* pool) : plan_(plan), pool_(pool) {
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    PlanStep& st = plan.steps[i];
    FusionNode n;
    n.node = st.node;
    n.op = st.op;
    n.inputs = st.inputs;
    n.outputs = st.outputs;
    n.implicit = st.implicit;
    n.origin = st.fused.empty() ? std::vector<const ir::Node*>{st.node} : st.fused;
    n.position = static_cast<int64_t>(i) * kPositionStride;
    nodes_.push_back(std::move(n));
  }
  original_steps_ = static_cast<int>(nodes_.size());
  Reindex();
}

void FusionGraph::Reindex() {
  const size_t n = plan_.slots.size();
  producer_.assign(n, -1);
  consumers_.assign(n, {});
  implicit_use_.assign(n, false);
  graph_output_.assign(n, false);
  for (int o : plan_.output_slots)
    if (o >= 0) graph_output_[o] = true;
  for (int id = 0; id < size(); ++id) {
    const FusionNode& fn = nodes_[id];
    if (!fn.alive) continue;
    for (int o : fn.outputs)
      if (o >= 0) producer_[o] = id;
    for (int s : fn.inputs)
      if (s >= 0) consumers_[s].push_back(id);
    for (int s : fn.implicit) {
      if (s < 0) continue;
      consumers_[s].push_back(id);
      implicit_use_[s] = true;
    }
  }
}

int FusionGraph::Producer(int slot) const {
  return slot >= 0 && slot < static_cast<int>(producer_.size()) ? producer_[slot] : -1;
}

const std::vector<int>& FusionGraph::Consumers(int slot) const {
  static const std::vector<int> kNone;
  return slot >= 0 && slot < static_cast<int>(consumers_.size()) ? consumers_[slot] : kNone;
}

bool FusionGraph::HasImplicitUse(int slot) const {
  return slot >= 0 && slot < static_cast<int>(implicit_use_.size()) && implicit_use_[slot];
}

bool FusionGraph::IsGraphOutput(int slot) const {
  return slot >= 0 && slot < static_cast<int>(graph_output_.size()) && graph_output_[slot];
}

const Tensor* FusionGraph::Constant(int slot) const {
  if (slot < 0) return nullptr;
  auto it = plan_.constants.find(slot);
  if (it == plan_.constants.end() || !it->second.is_tensor()) return nullptr;
  return &it->second.tensor();
}

int FusionGraph::AddConstant(const std::string& base, Tensor t) {
  std::string name = base;
  for (int k = 2; plan_.slot_of.count(name); ++k) name = base + "_" + std::to_string(k);
  const int id = static_cast<int>(plan_.slots.size());
  ValueSlot s;
  s.name = name;
  s.type = TypeInfo::TensorWithShape(t.dtype(), t.shape());
  s.storage = Storage::kConstant;
  plan_.slots.push_back(s);
  plan_.slot_of[name] = id;
  plan_.constants[id] = Value(pool_ ? pool_->Intern(name, std::move(t)) : std::move(t));
  return id;
}

const ir::Node* FusionGraph::Synthesize(ir::Node n) {
  plan_.synthesized_nodes.push_back(std::move(n));
  return &plan_.synthesized_nodes.back();
}

int FusionGraph::AddNode(FusionNode n) {
  nodes_.push_back(std::move(n));
  return size() - 1;
}

void FusionGraph::Kill(int id, int replaced_by) {
  nodes_[id].alive = false;
  nodes_[id].replaced_by = replaced_by;
}

void FusionGraph::ReplaceUses(int from, int to) {
  for (FusionNode& fn : nodes_) {
    if (!fn.alive) continue;
    for (int& s : fn.inputs)
      if (s == from) s = to;
  }
}

void FusionGraph::Commit() {
  Reindex();
  std::vector<int> pending(nodes_.size(), 0);
  std::vector<std::vector<int>> successors(nodes_.size());
  for (int id = 0; id < size(); ++id) {
    const FusionNode& fn = nodes_[id];
    if (!fn.alive) continue;
    for (const auto* list : {&fn.inputs, &fn.implicit}) {
      for (int s : *list) {
        const int p = Producer(s);
        if (p < 0 || p == id) continue;
        successors[p].push_back(id);
        ++pending[id];
      }
    }
  }
  using Ready = std::pair<int64_t, int>;  // (position, node id)
  std::priority_queue<Ready, std::vector<Ready>, std::greater<Ready>> ready;
  for (int id = 0; id < size(); ++id)
    if (nodes_[id].alive && pending[id] == 0) ready.push({nodes_[id].position, id});
  int alive = 0;
  for (const FusionNode& fn : nodes_) alive += fn.alive ? 1 : 0;
  plan_.steps.clear();
  while (!ready.empty()) {
    const int id = ready.top().second;
    ready.pop();
    const FusionNode& fn = nodes_[id];
    PlanStep st;
    st.node = fn.node;
    st.op = fn.op;
    st.inputs = fn.inputs;
    st.outputs = fn.outputs;
    st.implicit = fn.implicit;
    // A step whose node is one of the model's keeps an empty list; a fused one lists its origin.
    if (!(fn.origin.size() == 1 && fn.origin[0] == fn.node)) st.fused = fn.origin;
    plan_.steps.push_back(std::move(st));
    for (int s : successors[id])
      if (--pending[s] == 0) ready.push({nodes_[s].position, s});
  }
  // Rewrites only ever replace a connected set by one node reading its outside inputs, so the
  // graph stays acyclic and every node is scheduled.
  ONYX_CHECK(static_cast<int>(plan_.steps.size()) == alive);
}

}  // namespace onyx::planner::fusion
