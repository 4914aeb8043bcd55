// Pattern construction and the backtracking matcher (continuation passing: each sub-match calls
// the rest of the match with its extended bindings, so a failure further on retries the
// alternatives and commuted operand orders before it).
#include "planner/fusion/pattern.h"

#include <algorithm>
#include <sstream>

namespace onyx::planner::fusion {

Pattern Pattern::Any(std::string capture) {
  Pattern p;
  p.kind_ = Kind::kAny;
  p.capture_ = std::move(capture);
  return p;
}

Pattern Pattern::Const(std::string capture) {
  Pattern p = Any(std::move(capture));
  p.kind_ = Kind::kConst;
  return p;
}

Pattern Pattern::Op(const std::string& ops, std::vector<Pattern> inputs) {
  Pattern p;
  p.kind_ = Kind::kOp;
  std::stringstream ss(ops);
  std::string op;
  while (std::getline(ss, op, '|'))
    if (!op.empty()) p.ops_.insert(op);
  p.children_ = std::move(inputs);
  return p;
}

Pattern Pattern::Alt(std::vector<Pattern> alternatives) {
  Pattern p;
  p.kind_ = Kind::kAlt;
  p.children_ = std::move(alternatives);
  return p;
}

Pattern Pattern::As(std::string node_capture) const {
  Pattern p = *this;
  p.node_capture_ = std::move(node_capture);
  return p;
}

Pattern Pattern::Value(std::string capture) const {
  Pattern p = *this;
  p.capture_ = std::move(capture);
  return p;
}

Pattern Pattern::Commutative() const {
  Pattern p = *this;
  p.commutative_ = true;
  return p;
}

std::set<std::string> Pattern::RootOps() const {
  if (kind_ == Kind::kOp) return ops_;
  std::set<std::string> out;
  if (kind_ == Kind::kAlt) {
    for (const Pattern& c : children_) {
      const std::set<std::string> s = c.RootOps();
      out.insert(s.begin(), s.end());
    }
  } else {
    out.insert("*");  // a bare value pattern could sit on any producer
  }
  return out;
}

int Match::value(const std::string& name) const {
  auto it = values.find(name);
  return it == values.end() ? -1 : it->second;
}

int Match::node(const std::string& name) const {
  auto it = nodes.find(name);
  return it == nodes.end() ? -1 : it->second;
}

bool Matcher::Run(const Pattern& p, int slot, const Accept& accept) const {
  Match m;
  m.root_value = slot;
  m.root = g_.Producer(slot);
  return Value(p, slot, m, accept);
}

bool Matcher::Value(const Pattern& p, int slot, const Match& m, const Accept& k) const {
  switch (p.kind_) {
    case Pattern::Kind::kAlt:
      for (const Pattern& alt : p.children_)
        if (Value(alt, slot, m, k)) return true;
      return false;
    case Pattern::Kind::kAny:
    case Pattern::Kind::kConst: {
      if (p.kind_ == Pattern::Kind::kConst && !g_.Constant(slot)) return false;
      if (!p.capture_.empty()) {
        auto it = m.values.find(p.capture_);
        if (it != m.values.end()) return it->second == slot && k(m);
      }
      Match next = m;
      if (!p.capture_.empty()) next.values[p.capture_] = slot;
      if (slot >= 0) next.external.insert(slot);
      return k(next);
    }
    case Pattern::Kind::kOp:
      break;
  }
  const int id = g_.Producer(slot);
  if (id < 0) return false;
  const FusionNode& n = g_.node(id);
  if (!n.alive || (!p.ops_.count("*") && !p.ops_.count(OpKey(*n.node)))) return false;
  // An Op pattern stands for the node's first output (Dropout's mask is not its value).
  if (n.outputs.empty() || n.outputs[0] != slot) return false;
  if (p.children_.size() > n.inputs.size()) return false;
  Match next = m;
  if (!p.capture_.empty()) {
    auto it = m.values.find(p.capture_);
    if (it != m.values.end() && it->second != slot) return false;
    next.values[p.capture_] = slot;
  }
  if (!p.node_capture_.empty()) {
    auto it = m.nodes.find(p.node_capture_);
    if (it != m.nodes.end() && it->second != id) return false;
    next.nodes[p.node_capture_] = id;
  }
  if (std::find(next.matched.begin(), next.matched.end(), id) == next.matched.end())
    next.matched.push_back(id);
  std::vector<const Pattern*> pats;
  for (const Pattern& c : p.children_) pats.push_back(&c);
  std::vector<int> slots(n.inputs.begin(), n.inputs.begin() + pats.size());
  if (Sequence(pats, slots, 0, next, k)) return true;
  if (p.commutative_ && pats.size() == 2) {
    std::swap(slots[0], slots[1]);
    return Sequence(pats, slots, 0, next, k);
  }
  return false;
}

bool Matcher::Sequence(const std::vector<const Pattern*>& pats, const std::vector<int>& slots,
                       size_t i, const Match& m, const Accept& k) const {
  if (i == pats.size()) return k(m);
  return Value(*pats[i], slots[i], m,
               [&](const Match& next) { return Sequence(pats, slots, i + 1, next, k); });
}

}  // namespace onyx::planner::fusion
