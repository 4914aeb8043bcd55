// Exact removals (optimization level basic): Identity, inference Dropout and no-op Cast/CastLike
// disappear; chains of Transposes and of Reshape-like ops (Reshape, Flatten, Squeeze, Unsqueeze)
// collapse into one op, or into nothing when they do not change the value.
#include "kernels/node_view.h"
#include "planner/fusion/rule_helpers.h"
#include "planner/fusion/rules.h"

namespace onyx::planner::fusion {
namespace {

using P = Pattern;

constexpr const char* kReshapeLike = "Reshape|Flatten|Squeeze|Unsqueeze";

// Identity, a Dropout that runs in inference mode, or a Cast to the type it already has.
bool IsNoOp(const FusionGraph& g, const FusionNode& n) {
  const ir::Node& node = *n.node;
  if (!node.domain.empty() || n.inputs.empty() || n.inputs[0] < 0 || n.outputs.empty())
    return false;
  const TypeInfo& in = g.Type(n.inputs[0]);
  if (node.op_type == "Identity") return true;
  if (node.op_type == "Dropout") {
    // Opsets 1-11 always run in inference mode in onyx; from 12, training_mode must be a
    // constant false (or absent).
    if (node.opset < 12 || n.inputs.size() < 3 || n.inputs[2] < 0) return true;
    const Tensor* t = g.Constant(n.inputs[2]);
    return t && t->dtype() == DType::kBool && t->numel() == 1 && !t->data<bool>()[0];
  }
  if (!in.is_tensor() || in.elem == DType::kUndefined) return false;
  if (node.op_type == "Cast") {
    const int64_t to = kernels::NodeView(node).attr_int("to", -1);
    return static_cast<int64_t>(in.elem) == to;
  }
  if (node.op_type == "CastLike") {
    if (n.inputs.size() < 2 || n.inputs[1] < 0) return false;
    const TypeInfo& like = g.Type(n.inputs[1]);
    return like.is_tensor() && like.elem == in.elem;
  }
  return false;
}

bool IsIdentityPerm(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

Rewrite Alias(int from, int to) {
  Rewrite r;
  r.aliases.push_back({from, to});
  return r;
}

void AddNoOpRules(std::vector<Rule>& rules) {
  for (const char* op : {"Identity", "Dropout", "Cast", "CastLike"}) {
    const std::string kind = std::string("Remove") + (std::string(op) == "CastLike" ? "Cast" : op);
    Rule alias;
    alias.name = kind + "/" + op;
    alias.kind = kind;
    alias.level = OptLevel::kBasic;
    alias.pattern = P::Op(op, {P::Any("x")}).As("n");
    alias.valid = [](const Match& m, const FusionGraph& g) {
      return !g.IsGraphOutput(m.root_value) && !g.HasImplicitUse(m.root_value) &&
             IsNoOp(g, Captured(g, m, "n"));
    };
    alias.rewrite = [](const Match& m, FusionGraph&) { return Alias(m.root_value, m.value("x")); };
    rules.push_back(std::move(alias));

    // A no-op whose output is a graph output keeps that name: its producer writes it directly.
    Rule into;
    into.name = kind + "/" + op + "/into-producer";
    into.kind = kind;
    into.level = OptLevel::kBasic;
    into.pattern = P::Op(op, {P::Op("*").As("p").Value("x")}).As("n");
    into.valid = [](const Match& m, const FusionGraph& g) {
      return g.IsGraphOutput(m.root_value) && IsNoOp(g, Captured(g, m, "n")) &&
             Captured(g, m, "p").implicit.empty();
    };
    into.rewrite = [](const Match& m, FusionGraph& g) {
      const FusionNode& p = Captured(g, m, "p");
      NewNode n;
      n.def = *p.node;
      n.inputs = p.inputs;
      n.outputs = p.outputs;
      for (int& o : n.outputs)
        if (o == m.value("x")) o = m.root_value;
      Rewrite rw;
      rw.nodes.push_back(std::move(n));
      return rw;
    };
    rules.push_back(std::move(into));
  }
}

void AddTransposeRules(std::vector<Rule>& rules) {
  Rule chain;
  chain.name = "CollapseTranspose";
  chain.kind = "CollapseTranspose";
  chain.level = OptLevel::kBasic;
  chain.pattern = P::Op("Transpose", {P::Op("Transpose", {P::Any("x")}).As("t1")}).As("t2");
  chain.valid = [](const Match& m, const FusionGraph& g) {
    auto p1 = TransposePerm(g, Captured(g, m, "t1"));
    auto p2 = TransposePerm(g, Captured(g, m, "t2"));
    return p1 && p2 && p1->size() == p2->size();
  };
  chain.rewrite = [](const Match& m, FusionGraph& g) {
    const std::vector<int64_t> p1 = *TransposePerm(g, Captured(g, m, "t1"));
    const std::vector<int64_t> p2 = *TransposePerm(g, Captured(g, m, "t2"));
    // y = T2(T1(x)): output axis i is T1's axis p2[i], which is x's axis p1[p2[i]].
    std::vector<int64_t> perm(p2.size());
    for (size_t i = 0; i < p2.size(); ++i) {
      if (p2[i] < 0 || p2[i] >= static_cast<int64_t>(p1.size())) return Rewrite();
      perm[i] = p1[p2[i]];
    }
    if (IsIdentityPerm(perm) && !g.IsGraphOutput(m.root_value) && !g.HasImplicitUse(m.root_value))
      return Alias(m.root_value, m.value("x"));
    const ir::Node& t2 = *Captured(g, m, "t2").node;
    ir::Node def = MakeNode("", "Transpose", t2.opset, t2);
    def.attributes.push_back(IntsAttr("perm", perm));
    return Single(std::move(def), {m.value("x")}, {m.root_value});
  };
  rules.push_back(std::move(chain));

  Rule identity;
  identity.name = "RemoveTranspose";
  identity.kind = "RemoveTranspose";
  identity.level = OptLevel::kBasic;
  identity.pattern = P::Op("Transpose", {P::Any("x")}).As("t");
  identity.valid = [](const Match& m, const FusionGraph& g) {
    auto perm = TransposePerm(g, Captured(g, m, "t"));
    return perm && IsIdentityPerm(*perm) && !g.IsGraphOutput(m.root_value) &&
           !g.HasImplicitUse(m.root_value);
  };
  identity.rewrite = [](const Match& m, FusionGraph&) { return Alias(m.root_value, m.value("x")); };
  rules.push_back(std::move(identity));
}

void AddReshapeRules(std::vector<Rule>& rules) {
  // Two reshapes in a row are one Reshape to the final (static) shape.
  Rule chain;
  chain.name = "CollapseReshape";
  chain.kind = "CollapseReshape";
  chain.level = OptLevel::kBasic;
  chain.pattern = P::Op(kReshapeLike, {P::Op(kReshapeLike, {P::Any("x")}).As("r1")}).As("r2");
  chain.valid = [](const Match& m, const FusionGraph& g) {
    auto in = StaticShape(g, m.value("x"));
    auto out = StaticShape(g, m.root_value);
    return in && out && ShapeElementCount(*in) == ShapeElementCount(*out);
  };
  chain.rewrite = [](const Match& m, FusionGraph& g) {
    const Shape in = *StaticShape(g, m.value("x"));
    const Shape out = *StaticShape(g, m.root_value);
    if (in == out && !g.IsGraphOutput(m.root_value) && !g.HasImplicitUse(m.root_value))
      return Alias(m.root_value, m.value("x"));
    const ir::Node& r2 = *Captured(g, m, "r2").node;
    const int shape = g.AddConstant(g.Name(m.root_value) + "/shape", Int64Tensor(out));
    // Opset 14: allowzero = 1 makes a 0 in the static target a real zero-sized dim.
    ir::Node def = MakeNode("", "Reshape", 14, r2);
    def.attributes.push_back(IntAttr("allowzero", 1));
    return Single(std::move(def), {m.value("x"), shape}, {m.root_value});
  };
  rules.push_back(std::move(chain));

  Rule noop;
  noop.name = "RemoveReshape";
  noop.kind = "RemoveReshape";
  noop.level = OptLevel::kBasic;
  noop.pattern = P::Op(kReshapeLike, {P::Any("x")}).As("r");
  noop.valid = [](const Match& m, const FusionGraph& g) {
    auto in = StaticShape(g, m.value("x"));
    auto out = StaticShape(g, m.root_value);
    return in && out && *in == *out && !g.IsGraphOutput(m.root_value) &&
           !g.HasImplicitUse(m.root_value);
  };
  noop.rewrite = [](const Match& m, FusionGraph&) { return Alias(m.root_value, m.value("x")); };
  rules.push_back(std::move(noop));
}

}  // namespace

void AddCleanupRules(std::vector<Rule>& rules) {
  AddNoOpRules(rules);
  AddTransposeRules(rules);
  AddReshapeRules(rules);
}

}  // namespace onyx::planner::fusion
