// The fusion pass: match every rule, pick non-touching matches by a canonical key, rewrite,
// repeat until nothing matches; then write the steps back in Kahn order.
#include "planner/fusion/fusion_pass.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>

#include "kernels/op_registry.h"
#include "planner/fusion/fusion_graph.h"
#include "planner/fusion/rules.h"
#include "planner/shape_inference.h"

namespace onyx::planner::fusion {
namespace {

// A safety net: every rewrite removes a node or turns one into a more fused op, so the pass
// ends long before this.
constexpr int kMaxRounds = 10000;

struct Candidate {
  const Rule* rule;
  Match match;
  int64_t root_position;
};

// The canonical order of candidates: bigger matches first, then rule priority, the earlier root
// and the rule name. At most one candidate per (rule, root), so the order is total.
bool Before(const Candidate& a, const Candidate& b) {
  const auto key = [](const Candidate& c) {
    return std::make_tuple(-static_cast<int64_t>(c.match.matched.size()), -c.rule->priority,
                           c.root_position);
  };
  if (key(a) != key(b)) return key(a) < key(b);
  return a.rule->name < b.rule->name;
}

// What inference knows about `got` agrees with the slot's type `want`.
bool Compatible(const TypeInfo& got, const TypeInfo& want) {
  if (got.kind != want.kind) return false;
  if (!got.is_tensor()) return true;
  if (got.elem != DType::kUndefined && want.elem != DType::kUndefined && got.elem != want.elem)
    return false;
  if (!got.has_shape || !want.has_shape) return true;
  if (got.dims.size() != want.dims.size()) return false;
  for (size_t i = 0; i < got.dims.size(); ++i)
    if (got.dims[i].known() && want.dims[i].known() && got.dims[i].value != want.dims[i].value)
      return false;
  return true;
}

// The engine's own conditions: no matched intermediate is read outside the match, is a graph
// output or is read by a subgraph; no outside input is produced inside; no control flow.
bool Contained(const Match& m, const FusionGraph& g) {
  if (m.root < 0 || m.matched.empty()) return false;
  const std::set<int> inside(m.matched.begin(), m.matched.end());
  for (int id : m.matched) {
    const FusionNode& n = g.node(id);
    if (!n.alive || !n.implicit.empty()) return false;
    for (int o : n.outputs) {
      if (o < 0 || o == m.root_value) continue;
      if (g.IsGraphOutput(o) || g.HasImplicitUse(o)) return false;
      for (int c : g.Consumers(o))
        if (!inside.count(c)) return false;
    }
  }
  for (int s : m.external) {
    const int p = g.Producer(s);
    if (p >= 0 && inside.count(p)) return false;
  }
  return true;
}

class Pass {
 public:
  Pass(ExecutionPlan& plan, std::vector<const Rule*> rules, ConstantPool* pool)
      : g_(plan, pool),
        rules_(std::move(rules)),
        first_new_slot_(static_cast<int>(plan.slots.size())) {
    for (const Rule* rp : rules_) {
      const Rule& r = *rp;
      for (const std::string& op : r.pattern.RootOps()) by_root_op_[op].push_back(&r);
    }
  }

  int Run() {
    for (int round = 0; round < kMaxRounds; ++round) {
      g_.Reindex();
      std::vector<Candidate> found = Collect();
      if (found.empty()) break;
      std::sort(found.begin(), found.end(), Before);
      std::set<int> blocked;
      for (const Candidate& c : found) {
        bool touches = false;
        for (int id : c.match.matched) touches = touches || blocked.count(id);
        if (touches) continue;
        // Neighbours are computed before the rewrite changes the indices.
        const std::set<int> neighbourhood = Neighbourhood(c.match);
        if (!Apply(*c.rule, c.match)) {
          failed_.insert({c.rule->name, c.match.root});
          continue;
        }
        blocked.insert(neighbourhood.begin(), neighbourhood.end());
      }
    }
    const int before = g_.num_original_steps();
    g_.Commit();
    ExecutionPlan& plan = g_.plan();
    DropUnusedConstants(plan);
    for (Pending& p : records_) {
      int id = p.result;
      while (id >= 0 && !g_.node(id).alive) id = g_.node(id).replaced_by;
      p.record.into = id >= 0 ? g_.node(id).node : nullptr;
      plan.fusions.push_back(std::move(p.record));
    }
    return before - static_cast<int>(plan.steps.size());
  }

 private:
  struct Pending {
    FusionRecord record;
    int result;  // node id of the rewrite's first new node, -1 for a pure removal
  };

  std::vector<Candidate> Collect() const {
    std::vector<Candidate> out;
    const Matcher matcher(g_);
    for (int id = 0; id < g_.size(); ++id) {
      const FusionNode& n = g_.node(id);
      // Every pattern is rooted at an Op, which stands for its node's first output.
      if (!n.alive || n.outputs.empty() || n.outputs[0] < 0) continue;
      std::set<const Rule*> seen;
      for (const std::string& key : {OpKey(*n.node), std::string("*")}) {
        auto it = by_root_op_.find(key);
        if (it == by_root_op_.end()) continue;
        for (const Rule* r : it->second) {
          if (!seen.insert(r).second || failed_.count({r->name, id})) continue;
          Match found;
          const bool ok = matcher.Run(r->pattern, n.outputs[0], [&](const Match& m) {
            if (m.root != id || !Contained(m, g_) || (r->valid && !r->valid(m, g_))) return false;
            found = m;
            return true;
          });
          if (ok) out.push_back({r, std::move(found), n.position});
        }
      }
    }
    return out;
  }

  // The matched nodes, the producers of what they read and the readers of what they write.
  std::set<int> Neighbourhood(const Match& m) const {
    std::set<int> out(m.matched.begin(), m.matched.end());
    for (int id : m.matched) {
      const FusionNode& n = g_.node(id);
      for (const auto* list : {&n.inputs, &n.implicit})
        for (int s : *list)
          if (g_.Producer(s) >= 0) out.insert(g_.Producer(s));
      for (int o : n.outputs)
        for (int c : g_.Consumers(o)) out.insert(c);
    }
    return out;
  }

  // Checks the replacement against the plan (registered op, inferred types equal to the slots'
  // types, no input from inside the match) and applies it. False leaves the graph unchanged
  // except for unused constants.
  bool Apply(const Rule& rule, const Match& m) {
    Rewrite rw = rule.rewrite(m, g_);
    if (rw.nodes.empty() && rw.aliases.empty() && !rw.remove) return false;
    if (rw.remove) {
      for (int id : m.matched)
        for (int o : g_.node(id).outputs)
          if (o >= 0 && (!g_.Consumers(o).empty() || g_.IsGraphOutput(o))) return false;
    }
    std::set<int> inside_outputs, new_outputs;
    for (int id : m.matched)
      for (int o : g_.node(id).outputs)
        if (o >= 0) inside_outputs.insert(o);
    std::vector<const kernels::OpDef*> ops;
    for (NewNode& nn : rw.nodes) {
      const kernels::OpDef* op =
          kernels::OpRegistry::Global().Find(nn.def.domain, nn.def.op_type, nn.def.opset);
      if (!op) return false;
      nn.def.inputs.clear();
      nn.def.outputs.clear();
      std::vector<TypeInfo> in_types;
      std::vector<const Tensor*> in_consts;
      for (int s : nn.inputs) {
        if (s >= 0 && inside_outputs.count(s) && !new_outputs.count(s)) return false;
        nn.def.inputs.push_back(s >= 0 ? g_.Name(s) : "");
        in_types.push_back(s >= 0 ? g_.Type(s) : TypeInfo());
        in_consts.push_back(g_.Constant(s));
      }
      for (int s : nn.outputs) nn.def.outputs.push_back(s >= 0 ? g_.Name(s) : "");
      std::vector<TypeInfo> out_types;
      const SubgraphInferFn no_subgraphs =
          [](const ir::Graph&, const std::vector<TypeInfo>&) -> StatusOr<std::vector<TypeInfo>> {
        return Unsupported("no subgraphs here");
      };
      if (!InferNode(nn.def, *op, in_types, in_consts, no_subgraphs, &out_types).ok()) return false;
      for (size_t k = 0; k < nn.outputs.size(); ++k) {
        const int s = nn.outputs[k];
        if (s < 0) continue;
        if (k >= out_types.size() || !Compatible(out_types[k], g_.Type(s))) return false;
        new_outputs.insert(s);
      }
      ops.push_back(op);
    }
    for (const auto& [from, to] : rw.aliases) {
      if (!inside_outputs.count(from) || g_.IsGraphOutput(from) || g_.HasImplicitUse(from))
        return false;
      if (!Compatible(g_.Type(to), g_.Type(from))) return false;
    }

    int64_t position = INT64_MAX;
    std::vector<const ir::Node*> origin;
    for (int id : m.matched) {
      position = std::min(position, g_.node(id).position);
      const auto& o = g_.node(id).origin;
      origin.insert(origin.end(), o.begin(), o.end());
    }
    std::sort(origin.begin(), origin.end(),
              [](const ir::Node* a, const ir::Node* b) { return a->index < b->index; });
    origin.erase(std::unique(origin.begin(), origin.end()), origin.end());
    int first = -1;
    for (size_t k = 0; k < rw.nodes.size(); ++k) {
      NewNode& nn = rw.nodes[k];
      FusionNode fn;
      fn.node = g_.Synthesize(std::move(nn.def));
      fn.op = ops[k];
      fn.inputs = std::move(nn.inputs);
      fn.outputs = std::move(nn.outputs);
      fn.implicit = std::move(nn.implicit);
      fn.origin = k == 0 ? origin : std::vector<const ir::Node*>{};
      fn.position = position + static_cast<int64_t>(k);
      const int id = g_.AddNode(std::move(fn));
      if (first < 0) first = id;
    }
    for (int id : m.matched) g_.Kill(id, first);
    for (const auto& [from, to] : rw.aliases) g_.ReplaceUses(from, to);
    records_.push_back({FusionRecord{rule.kind, origin, nullptr}, first});
    return true;
  }

  // Constants a rewrite made that a later rewrite replaced again (W folded twice): their
  // buffers are released; the slots stay (slot ids must not move).
  void DropUnusedConstants(ExecutionPlan& plan) const {
    std::set<int> read;
    for (const PlanStep& st : plan.steps)
      for (const auto* list : {&st.inputs, &st.implicit}) read.insert(list->begin(), list->end());
    for (auto it = plan.constants.lower_bound(first_new_slot_); it != plan.constants.end();) {
      if (read.count(it->first)) {
        ++it;
        continue;
      }
      plan.slots[it->first].storage = Storage::kHeap;
      it = plan.constants.erase(it);
    }
  }

  FusionGraph g_;
  std::vector<const Rule*> rules_;
  int first_new_slot_;  // slots from here on were added by rewrites
  std::map<std::string, std::vector<const Rule*>> by_root_op_;
  std::set<std::pair<std::string, int>> failed_;  // (rule, root) whose rewrite was rejected
  std::vector<Pending> records_;
};

}  // namespace

int RunFusionPass(ExecutionPlan& plan, OptLevel level, uint64_t rule_seed, ConstantPool* pool) {
  if (level == OptLevel::kNone) return 0;
  // Built once per process: rebuilding the patterns for each plan dominated planning a model
  // with thousands of small subgraphs. Rules are immutable (their functions are pure).
  static const std::vector<Rule> kAllRules = AllRules();
  std::vector<const Rule*> rules;
  for (const Rule& r : kAllRules)
    if (static_cast<int>(r.level) <= static_cast<int>(level)) rules.push_back(&r);
  if (rule_seed != 0) {
    // Fisher-Yates with an explicit engine: the same seed shuffles alike on every platform.
    std::mt19937_64 gen(rule_seed);
    for (size_t i = rules.size(); i > 1; --i) std::swap(rules[i - 1], rules[gen() % i]);
  }
  Pass pass(plan, std::move(rules), pool);
  return pass.Run();
}

}  // namespace onyx::planner::fusion
