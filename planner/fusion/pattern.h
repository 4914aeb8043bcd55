// The pattern language of the fusion rules: a tree over values, read from the value a rule
// replaces back towards its inputs.
//
//   Op("Relu", {Op("Conv|com.onyx:FusedConv").As("conv")}).As("act")
//
// Op matches a value that is output 0 of a node of one of the listed op types ('|'-separated,
// "*" for any) and matches the node's first inputs against the sub-patterns, in order, or in
// either order when Commutative(). Any and Const match any value (a constant tensor for Const) and
// may capture it; a capture seen twice must be the same value. Alt tries alternatives in order.
// Matching backtracks fully, so `accept` sees every structural match until it takes one.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "planner/fusion/fusion_graph.h"

namespace onyx::planner::fusion {

class Pattern {
 public:
  enum class Kind { kAny, kConst, kOp, kAlt };

  static Pattern Any(std::string capture = "");
  static Pattern Const(std::string capture = "");
  static Pattern Op(const std::string& ops, std::vector<Pattern> inputs = {});
  static Pattern Alt(std::vector<Pattern> alternatives);

  Pattern As(std::string node_capture) const;  // captures the node (Op)
  Pattern Value(std::string capture) const;    // captures the value (Op)
  Pattern Commutative() const;                 // two inputs, either order (Op)

  Kind kind() const { return kind_; }
  // Op keys the matched value's producer may have at the root ("*" = any); for the rule index.
  std::set<std::string> RootOps() const;

 private:
  friend class Matcher;
  Kind kind_ = Kind::kAny;
  std::string capture_;       // value capture
  std::string node_capture_;  // node capture (Op)
  std::set<std::string> ops_;
  std::vector<Pattern> children_;  // Op: inputs; Alt: alternatives
  bool commutative_ = false;
};

struct Match {
  std::map<std::string, int> values;  // value captures → slot
  std::map<std::string, int> nodes;   // node captures → node id
  std::vector<int> matched;           // distinct node ids, in discovery order
  std::set<int> external;             // slots matched by Any/Const: read from outside the match
  int root = -1;                      // node producing the matched value
  int root_value = -1;                // the matched value (the one the rewrite keeps)

  int value(const std::string& name) const;  // -1 when not captured
  int node(const std::string& name) const;   // -1 when not captured
};

class Matcher {
 public:
  using Accept = std::function<bool(const Match&)>;
  explicit Matcher(const FusionGraph& g) : g_(g) {}
  // Matches `p` against `slot`; calls accept on each structural match until it returns true.
  bool Run(const Pattern& p, int slot, const Accept& accept) const;

 private:
  bool Value(const Pattern& p, int slot, const Match& m, const Accept& k) const;
  bool Sequence(const std::vector<const Pattern*>& pats, const std::vector<int>& slots, size_t i,
                const Match& m, const Accept& k) const;
  const FusionGraph& g_;
};

}  // namespace onyx::planner::fusion
