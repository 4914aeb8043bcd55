// A fusion rule: a pattern over the plan, the conditions under which replacing it is exact, and
// the replacement. Rules are data; fusion_pass.cc applies them to a fixed point.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "planner/fusion/fusion_graph.h"
#include "planner/fusion/pattern.h"
#include "planner/planner.h"

namespace onyx::planner::fusion {

// A node the replacement adds. The engine fills def.inputs / def.outputs with the slot names.
struct NewNode {
  ir::Node def;             // domain, op_type, opset, name, index, attributes
  std::vector<int> inputs;  // slot ids (-1: omitted)
  std::vector<int> outputs;
  std::vector<int> implicit;  // slots read by subgraphs (only when re-emitting a node as is)
};

struct Rewrite {
  std::vector<NewNode> nodes;  // replace the matched nodes (often exactly one)
  // (from, to): every reader of `from` reads `to` instead (removals such as Identity).
  std::vector<std::pair<int, int>> aliases;
  // Nothing reads the matched nodes' outputs: they simply go (with no nodes and no aliases).
  bool remove = false;
};

struct Rule {
  std::string name;                 // unique; the tie-break between equally good matches
  std::string kind;                 // what `onyx plan` reports (several rules may share one)
  OptLevel level = OptLevel::kAll;  // the lowest optimization level that runs it
  // Among overlapping matches of equal size, the higher priority wins (then the earlier root).
  int priority = 0;
  Pattern pattern;
  // Extra conditions beyond the engine's own (no matched intermediate is read outside the match
  // or is a graph output; no outside input comes from inside). Pure: it must not change `g`.
  std::function<bool(const Match&, const FusionGraph&)> valid;
  // The replacement. Called only for matches that passed `valid`; may add constants to `g`.
  std::function<Rewrite(const Match&, FusionGraph&)> rewrite;
};

}  // namespace onyx::planner::fusion
