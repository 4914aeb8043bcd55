// Shape computations and dead code (optimization level basic). The planner already folds a Shape
// of a fully static value and everything computed from constants while it infers; these rules
// finish the job where only part of a shape is known (a symbolic batch):
// - shape arithmetic (Shape, Gather, Unsqueeze, Concat, ...) is traced to numbers and dims of
//   tensors (planner/fusion/shape_values.h): a value made of known numbers becomes a constant, a
//   Reshape whose target is made of numbers and its input's own dims gets a constant target (0
//   copies a dim), and other values made of dims become one DimsOf step;
// - a node whose inputs all became constants is folded;
// - a node nothing reads any more (a Shape whose Gathers were all folded) is removed.
#include <algorithm>

#include "kernels/node_view.h"
#include "planner/constant_folding.h"
#include "planner/fusion/rule_helpers.h"
#include "planner/fusion/rules.h"
#include "planner/fusion/shape_values.h"

namespace onyx::planner::fusion {
namespace {

using P = Pattern;

bool Replaceable(const FusionGraph& g, int slot) {
  return !g.IsGraphOutput(slot) && !g.HasImplicitUse(slot);
}

// The constant that can stand for Reshape(x, t)'s target t when t's elements are numbers or dims
// of x in their own places (exporters' `x.view(x.size(0), x.size(1), heads, d)`): those dims
// become 0 (copy the input's dim, allowzero 0), so the arithmetic that computed t goes dead. One
// other element may become -1 when every other element is a positive number. nullopt when t is
// a constant already or all of it is known (the folding rules take that).
std::optional<Tensor> OwnDimsTarget(const Match& m, const FusionGraph& g) {
  const int x = m.value("x"), t = m.value("t");
  if (g.Constant(t)) return std::nullopt;
  if (kernels::NodeView(*Captured(g, m, "r").node).attr_int("allowzero", 0) != 0)
    return std::nullopt;
  auto v = TraceShapeValue(g, t);
  if (!v || v->scalar) return std::nullopt;
  std::vector<int64_t> target;
  int64_t other = -1;
  bool symbolic = false;
  for (size_t i = 0; i < v->atoms.size(); ++i) {
    const DimAtom& a = v->atoms[i];
    if (a.known()) {
      target.push_back(a.value);
      continue;
    }
    symbolic = true;
    if (a.slot == x && a.value == static_cast<int64_t>(i)) {
      target.push_back(0);
    } else if (other < 0) {
      other = static_cast<int64_t>(i);
      target.push_back(-1);
    } else {
      return std::nullopt;
    }
  }
  if (!symbolic) return std::nullopt;
  // -1 is inferred as the rest of x's elements only when the others cannot be 0 or -1.
  if (other >= 0)
    for (size_t i = 0; i < target.size(); ++i)
      if (static_cast<int64_t>(i) != other && target[i] <= 0) return std::nullopt;
  return Int64Tensor(target);
}

Rule ReshapeToOwnDimsRule() {
  Rule r;
  r.name = "ReshapeToOwnDims";
  r.kind = "ShapeFold";
  r.level = OptLevel::kBasic;
  r.pattern = P::Op("Reshape", {P::Any("x"), P::Any("t")}).As("r");
  r.valid = [](const Match& m, const FusionGraph& g) { return OwnDimsTarget(m, g).has_value(); };
  r.rewrite = [](const Match& m, FusionGraph& g) {
    const ir::Node& reshape = *Captured(g, m, "r").node;
    const int c = g.AddConstant(g.Name(m.value("t")) + "/dims", *OwnDimsTarget(m, g));
    ir::Node def = MakeNode("", "Reshape", reshape.opset, reshape);
    def.attributes = reshape.attributes;
    return Single(std::move(def), {m.value("x"), c}, {m.root_value});
  };
  return r;
}

// A value of shape arithmetic whose elements are all numbers or dims of tensors, read by
// something other than more shape arithmetic (a Reshape, Expand, Range, ...): one com.onyx DimsOf
// step computes it from the tensors' shapes, and the chain of Shape, Gather, Unsqueeze and
// Concat steps behind it goes dead (GPT-2's decoder step: 253 -> 142 steps). All numbers: a
// constant.
bool ReadOutsideShapeArithmetic(const FusionGraph& g, int slot) {
  for (int c : g.Consumers(slot)) {
    const FusionNode& n = g.node(c);
    if (!IsShapeValueOp(n) || n.outputs.empty() || !TraceShapeValue(g, n.outputs[0])) return true;
  }
  return false;
}

Rule DimsOfRule() {
  Rule r;
  r.name = "DimsOf";
  r.kind = "ShapeFold";
  r.level = OptLevel::kBasic;
  r.pattern = P::Op("Gather|Unsqueeze|Squeeze|Concat|Slice").As("n");
  r.valid = [](const Match& m, const FusionGraph& g) {
    if (!Replaceable(g, m.root_value) || g.Consumers(m.root_value).empty()) return false;
    auto v = TraceShapeValue(g, m.root_value);
    if (!v) return false;
    bool known = true;
    for (const DimAtom& a : v->atoms) known = known && a.known();
    return known || ReadOutsideShapeArithmetic(g, m.root_value);
  };
  r.rewrite = [](const Match& m, FusionGraph& g) {
    const ShapeValue v = *TraceShapeValue(g, m.root_value);
    std::vector<int> inputs;
    std::vector<int64_t> sources, values, numbers;
    for (const DimAtom& a : v.atoms) {
      numbers.push_back(a.value);
      if (a.known()) {
        sources.push_back(-1);
        values.push_back(a.value);
        continue;
      }
      auto it = std::find(inputs.begin(), inputs.end(), a.slot);
      sources.push_back(it - inputs.begin());
      if (it == inputs.end()) inputs.push_back(a.slot);
      values.push_back(a.value);
    }
    Rewrite rw;
    if (inputs.empty()) {
      Tensor t = Int64Tensor(numbers);
      if (v.scalar) t = t.Reshaped({});
      rw.aliases.push_back({m.root_value, g.AddConstant(g.Name(m.root_value) + "/folded", t)});
      return rw;
    }
    ir::Node def = MakeOnyxNode("DimsOf", *Captured(g, m, "n").node);
    def.attributes.push_back(IntsAttr("sources", sources));
    def.attributes.push_back(IntsAttr("values", values));
    if (v.scalar) def.attributes.push_back(IntAttr("scalar", 1));
    return Single(std::move(def), std::move(inputs), {m.root_value});
  };
  return r;
}

// Every present input is a constant tensor; deterministic, no subgraphs; only output 0 is used.
bool Foldable(const FusionGraph& g, const FusionNode& n) {
  if (!n.op || !n.implicit.empty() || n.outputs.empty() || n.inputs.empty()) return false;
  std::vector<const Value*> values;
  for (int s : n.inputs) {
    if (s >= 0 && !g.Constant(s)) return false;
    values.push_back(s >= 0 ? &g.plan().constants.at(s) : nullptr);
  }
  for (size_t k = 1; k < n.outputs.size(); ++k)
    if (n.outputs[k] >= 0 && (!g.Consumers(n.outputs[k]).empty() || g.IsGraphOutput(n.outputs[k])))
      return false;
  return CanFold(*n.node, *n.op, values) && Replaceable(g, n.outputs[0]);
}

Rule ConstantFoldRule() {
  Rule r;
  r.name = "ConstantFold";
  r.kind = "ConstantFold";
  r.level = OptLevel::kBasic;
  r.pattern = P::Op("*").As("n");
  r.valid = [](const Match& m, const FusionGraph& g) { return Foldable(g, Captured(g, m, "n")); };
  r.rewrite = [](const Match& m, FusionGraph& g) {
    const FusionNode& n = Captured(g, m, "n");
    std::vector<const Value*> values;
    std::vector<TypeInfo> types;
    for (int s : n.inputs) {
      values.push_back(s >= 0 ? &g.plan().constants.at(s) : nullptr);
      types.push_back(s >= 0 ? g.Type(s) : TypeInfo());
    }
    auto outs = FoldNode(*n.node, *n.op, values, types);
    if (!outs.ok() || outs->empty() || !(*outs)[0].is_tensor()) return Rewrite();  // run time
    Rewrite rw;
    const int c = g.AddConstant(g.Name(m.root_value) + "/folded", (*outs)[0].tensor());
    rw.aliases.push_back({m.root_value, c});
    return rw;
  };
  return r;
}

Rule DeadNodeRule() {
  Rule r;
  r.name = "RemoveDeadNode";
  r.kind = "RemoveDeadNode";
  r.level = OptLevel::kBasic;
  r.pattern = P::Op("*").As("n");
  r.valid = [](const Match& m, const FusionGraph& g) {
    const FusionNode& n = Captured(g, m, "n");
    if (!n.op || !n.op->deterministic || !n.implicit.empty()) return false;
    for (const auto& a : n.node->attributes)
      if (a.g || !a.graphs.empty()) return false;
    for (int o : n.outputs)
      if (o >= 0 && (!g.Consumers(o).empty() || g.IsGraphOutput(o))) return false;
    return true;
  };
  r.rewrite = [](const Match&, FusionGraph&) {
    Rewrite rw;
    rw.remove = true;
    return rw;
  };
  return r;
}

}  // namespace

void AddShapeRules(std::vector<Rule>& rules) {
  rules.push_back(ReshapeToOwnDimsRule());
  rules.push_back(DimsOfRule());
  rules.push_back(ConstantFoldRule());
  rules.push_back(DeadNodeRule());
}

}  // namespace onyx::planner::fusion
