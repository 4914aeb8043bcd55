// The fusion listing of `onyx plan`.
#include "planner/fusion/fusion_report.h"

#include <map>
#include <sstream>

namespace onyx::planner::fusion {
namespace {

std::string NodeName(const ir::Node* n) {
  return n->name.empty() ? n->Describe() : n->name;
}

// Step index of each node that a step runs.
std::map<const ir::Node*, int> StepOf(const ExecutionPlan& plan) {
  std::map<const ir::Node*, int> out;
  for (size_t i = 0; i < plan.steps.size(); ++i) out[plan.steps[i].node] = static_cast<int>(i);
  return out;
}

std::map<std::string, int> Counts(const ExecutionPlan& plan) {
  std::map<std::string, int> counts;
  for (const FusionRecord& r : plan.fusions) ++counts[r.kind];
  return counts;
}

}  // namespace

std::string FusionsText(const ExecutionPlan& plan) {
  if (plan.fusions.empty()) return "";
  std::ostringstream os;
  os << "fusions (" << plan.fusions.size() << " rewrites):";
  for (const auto& [kind, n] : Counts(plan)) os << " " << kind << " " << n << ";";
  os << "\n";
  const auto step_of = StepOf(plan);
  for (const FusionRecord& r : plan.fusions) {
    os << "  " << r.kind << ":";
    for (size_t i = 0; i < r.nodes.size(); ++i) os << (i ? ", " : " ") << NodeName(r.nodes[i]);
    auto it = r.into ? step_of.find(r.into) : step_of.end();
    if (it != step_of.end())
      os << " -> step " << it->second << " (" << r.into->Describe() << ")";
    else
      os << " -> removed";
    os << "\n";
  }
  return os.str();
}

std::string FusionsJson(const ExecutionPlan& plan, const std::string& indent) {
  std::ostringstream os;
  const auto step_of = StepOf(plan);
  os << indent << "\"fusions\": [";
  for (size_t i = 0; i < plan.fusions.size(); ++i) {
    const FusionRecord& r = plan.fusions[i];
    os << (i ? "," : "") << "\n"
       << indent << "  {\"kind\": \"" << JsonEscape(r.kind) << "\", \"nodes\": [";
    for (size_t k = 0; k < r.nodes.size(); ++k)
      os << (k ? ", " : "") << "\"" << JsonEscape(NodeName(r.nodes[k])) << "\"";
    os << "], \"into\": ";
    auto it = r.into ? step_of.find(r.into) : step_of.end();
    if (it != step_of.end())
      os << it->second << ", \"into_node\": \"" << JsonEscape(NodeName(r.into)) << "\"";
    else
      os << "null";
    os << "}";
  }
  os << (plan.fusions.empty() ? "" : "\n" + indent) << "],\n" << indent << "\"fusion_counts\": {";
  bool first = true;
  for (const auto& [kind, n] : Counts(plan)) {
    os << (first ? "" : ", ") << "\"" << JsonEscape(kind) << "\": " << n;
    first = false;
  }
  os << "}";
  return os.str();
}

}  // namespace onyx::planner::fusion
