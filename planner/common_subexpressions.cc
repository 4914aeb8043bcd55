// Common subexpression elimination over the scheduled steps, before fusion.
#include "planner/common_subexpressions.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace onyx::planner {
namespace {

// The step's operator, attributes (sorted by name) and present outputs, or "" when the step may
// not be merged with another.
std::string OperatorKey(const PlanStep& st) {
  const ir::Node& n = *st.node;
  if (!st.op || !st.op->deterministic || n.outputs.empty()) return "";
  std::vector<const ir::Attribute*> attrs;
  for (const auto& a : n.attributes) {
    switch (a.type) {
      case ir::AttrType::kFloat:
      case ir::AttrType::kInt:
      case ir::AttrType::kString:
      case ir::AttrType::kFloats:
      case ir::AttrType::kInts:
      case ir::AttrType::kStrings:
        attrs.push_back(&a);
        break;
      default:
        return "";  // tensors, graphs, types: not worth comparing
    }
    if (!a.ref_attr_name.empty()) return "";
  }
  std::sort(attrs.begin(), attrs.end(),
            [](const ir::Attribute* x, const ir::Attribute* y) { return x->name < y->name; });
  std::ostringstream os;
  os.precision(9);
  os << n.domain << '|' << n.op_type << '|' << n.opset << '|';
  for (const ir::Attribute* a : attrs) {
    os << a->name << '=' << static_cast<int>(a->type) << ':';
    // Floats by their bits would be exact; 9 significant digits tell every float apart.
    os << a->f << ',' << a->i << ',' << a->s.size() << ':' << a->s << ';';
    for (float f : a->floats) os << f << ',';
    os << ';';
    for (int64_t i : a->ints) os << i << ',';
    os << ';';
    for (const auto& s : a->strings) os << s.size() << ':' << s << ',';
    os << '|';
  }
  os << "outs";
  for (int o : st.outputs) os << (o >= 0 ? '1' : '0');
  return os.str();
}

// An input by its slot, or a small constant by its value: each exporter-written index constant
// is a slot of its own, and the Gathers that read equal ones are still the same computation.
std::string InputKey(const ExecutionPlan& plan, int slot) {
  constexpr size_t kMaxKeyedBytes = 256;
  auto c = slot >= 0 ? plan.constants.find(slot) : plan.constants.end();
  if (c == plan.constants.end() || !c->second.is_tensor()) return std::to_string(slot);
  const Tensor& t = c->second.tensor();
  if (t.dtype() == DType::kString || t.nbytes() > kMaxKeyedBytes || !t.raw_data())
    return std::to_string(slot);
  std::string key = "c" + std::to_string(static_cast<int>(t.dtype())) + ShapeToString(t.shape());
  key.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  return key;
}

}  // namespace

int EliminateCommonSubexpressions(ExecutionPlan& plan) {
  // Values that must keep their own producer: graph outputs, and values subgraphs read by name.
  std::set<int> pinned(plan.output_slots.begin(), plan.output_slots.end());
  for (const PlanStep& st : plan.steps) pinned.insert(st.implicit.begin(), st.implicit.end());

  std::map<int, int> redirect;         // dropped output slot -> the equal earlier one
  std::map<std::string, size_t> seen;  // key -> index in `kept`
  std::vector<PlanStep> kept;
  kept.reserve(plan.steps.size());
  int removed = 0;
  for (PlanStep& st : plan.steps) {
    for (int& in : st.inputs) {
      auto r = in >= 0 ? redirect.find(in) : redirect.end();
      if (r != redirect.end()) in = r->second;
    }
    std::string key = OperatorKey(st);
    bool may_drop = !key.empty() && st.implicit.empty();
    for (int o : st.outputs) may_drop = may_drop && !pinned.count(o);
    if (!key.empty()) {
      key += '|';
      for (int in : st.inputs) key += InputKey(plan, in) + ',';
    }
    auto found = may_drop ? seen.find(key) : seen.end();
    if (found != seen.end()) {
      const PlanStep& same = kept[found->second];
      for (size_t k = 0; k < st.outputs.size(); ++k)
        if (st.outputs[k] >= 0) redirect[st.outputs[k]] = same.outputs[k];
      FusionRecord r;
      r.kind = "CommonSubexpression";
      r.nodes = {st.node};
      r.into = same.node;
      plan.fusions.push_back(std::move(r));
      ++removed;
      continue;
    }
    if (!key.empty()) seen.emplace(std::move(key), kept.size());
    kept.push_back(std::move(st));
  }
  plan.steps = std::move(kept);
  return removed;
}

}  // namespace onyx::planner
