// Per-channel affine chains (optimization level all), as in DenseNet's pre-activation blocks
// (BatchNormalization, then Mul and Add by unsqueezed per-channel constants, then Relu):
// an inference BatchNormalization, or a Mul+Add pair by per-channel constants, becomes one
// com.onyx ChannelAffine; further per-channel Mul / Add / Sub and ChannelAffines merge into it,
// and a following activation becomes its post-op. (A ChannelAffine right after a Conv folds into
// the Conv's weights instead: conv_rules.cc.)
#include "kernels/activation_rules.h"
#include "kernels/node_view.h"
#include "planner/fusion/rule_helpers.h"
#include "planner/fusion/rules.h"

namespace onyx::planner::fusion {
namespace {

using P = Pattern;
using kernels::FusedActivation;

constexpr const char* kAffine = "com.onyx:ChannelAffine";

// The number of channels (axis 1) of a float value of rank >= 2, or -1.
int64_t Channels(const FusionGraph& g, int slot) {
  if (!IsFloat32(g, slot)) return -1;
  const TypeInfo& t = g.Type(slot);
  if (!t.has_shape || t.dims.size() < 2 || !t.dims[1].known()) return -1;
  return t.dims[1].value;
}

// Scale and shift of an existing ChannelAffine node.
void ReadAffine(const FusionGraph& g, const FusionNode& a, std::vector<float>* s,
                std::vector<float>* t) {
  const Tensor* sv = g.Constant(a.inputs[1]);
  const Tensor* tv = g.Constant(a.inputs[2]);
  s->assign(sv->data<float>(), sv->data<float>() + sv->numel());
  t->assign(tv->data<float>(), tv->data<float>() + tv->numel());
}

// A ChannelAffine with constant scale and shift and no activation yet.
bool OpenAffine(const FusionGraph& g, const FusionNode& a) {
  if (a.inputs.size() != 3 || !HasNoActivation(*a.node)) return false;
  const Tensor* s = g.Constant(a.inputs[1]);
  const Tensor* t = g.Constant(a.inputs[2]);
  return s && t && s->dtype() == DType::kFloat && t->dtype() == DType::kFloat &&
         s->numel() == t->numel();
}

Rewrite BuildAffine(FusionGraph& g, const ir::Node& anchor, int x, const std::vector<float>& s,
                    const std::vector<float>& t, const FusedActivation& act, int output) {
  const int64_t c = static_cast<int64_t>(s.size());
  const std::string base = g.Name(output);
  const int s_id = g.AddConstant(base + "/scale", FloatTensor({c}, s));
  const int t_id = g.AddConstant(base + "/shift", FloatTensor({c}, t));
  ir::Node def = MakeOnyxNode("ChannelAffine", anchor);
  SetActivation(def, act);
  return Single(std::move(def), {x, s_id, t_id}, {output});
}

Rule BatchNormRule() {
  Rule r;
  r.name = "BatchNormToAffine";
  r.kind = "BatchNormToAffine";
  r.pattern = P::Op("BatchNormalization", {P::Any("x")}).As("bn");
  r.valid = [](const Match& m, const FusionGraph& g) {
    const int64_t c = Channels(g, m.value("x"));
    std::vector<double> s, t;
    return c > 0 && BatchNormAffine(g, Captured(g, m, "bn"), c, &s, &t);
  };
  r.rewrite = [](const Match& m, FusionGraph& g) {
    const int x = m.value("x");
    std::vector<double> s, t;
    BatchNormAffine(g, Captured(g, m, "bn"), Channels(g, x), &s, &t);
    return BuildAffine(g, *Captured(g, m, "bn").node, x, std::vector<float>(s.begin(), s.end()),
                       std::vector<float>(t.begin(), t.end()), FusedActivation(), m.root_value);
  };
  return r;
}

// x * s + t (or - t) with per-channel constants.
Rule MulAddRule(const char* op) {
  const bool sub = std::string(op) == "Sub";
  Rule r;
  r.name = std::string("MulAddToAffine/") + op;
  r.kind = "MulAddToAffine";
  const P mul = P::Op("Mul", {P::Any("x"), P::Const("s")}).Commutative().As("mul");
  const P add = P::Op(op, {mul, P::Const("t")}).As("add");
  r.pattern = sub ? add : add.Commutative();
  r.valid = [](const Match& m, const FusionGraph& g) {
    const int x = m.value("x");
    if (Channels(g, x) <= 0 || !IsFloat32(g, m.root_value)) return false;
    const int mul_out = Captured(g, m, "mul").outputs[0];
    return AxisValues(g, m.value("s"), g.Type(x), 1) &&
           AxisValues(g, m.value("t"), g.Type(mul_out), 1);
  };
  r.rewrite = [sub](const Match& m, FusionGraph& g) {
    const int x = m.value("x");
    const int mul_out = Captured(g, m, "mul").outputs[0];
    std::vector<float> s = *AxisValues(g, m.value("s"), g.Type(x), 1);
    std::vector<float> t = *AxisValues(g, m.value("t"), g.Type(mul_out), 1);
    if (sub)
      for (float& v : t) v = -v;
    return BuildAffine(g, *Captured(g, m, "mul").node, x, s, t, FusedActivation(), m.root_value);
  };
  return r;
}

// ChannelAffine followed by a per-channel Mul (scale and shift both scale), Add or Sub (shift).
Rule ExtendRule(const char* op) {
  const std::string o = op;
  Rule r;
  r.name = "ChannelAffine" + o;
  r.kind = "ChannelAffineChain";
  const P p = P::Op(op, {P::Op(kAffine).As("a"), P::Const("c")}).As("op");
  r.pattern = o == "Sub" ? p : p.Commutative();
  r.valid = [](const Match& m, const FusionGraph& g) {
    const FusionNode& a = Captured(g, m, "a");
    return OpenAffine(g, a) && IsFloat32(g, m.root_value) &&
           AxisValues(g, m.value("c"), g.Type(a.outputs[0]), 1);
  };
  r.rewrite = [o](const Match& m, FusionGraph& g) {
    const FusionNode& a = Captured(g, m, "a");
    std::vector<float> s, t;
    ReadAffine(g, a, &s, &t);
    const std::vector<float> c = *AxisValues(g, m.value("c"), g.Type(a.outputs[0]), 1);
    for (size_t i = 0; i < s.size(); ++i) {
      if (o == "Mul") {
        s[i] *= c[i];
        t[i] *= c[i];
      } else {
        t[i] += o == "Add" ? c[i] : -c[i];
      }
    }
    return BuildAffine(g, *a.node, a.inputs[0], s, t, FusedActivation(), m.root_value);
  };
  return r;
}

// Two ChannelAffines in a row: s = s1 * s2, t = t1 * s2 + t2, the second one's activation.
Rule MergeRule() {
  Rule r;
  r.name = "ChannelAffineMerge";
  r.kind = "ChannelAffineChain";
  r.pattern = P::Op(kAffine, {P::Op(kAffine).As("a1"), P::Const(), P::Const()}).As("a2");
  r.valid = [](const Match& m, const FusionGraph& g) {
    const FusionNode& a1 = Captured(g, m, "a1");
    const FusionNode& a2 = Captured(g, m, "a2");
    if (!OpenAffine(g, a1) || a2.inputs.size() != 3) return false;
    const Tensor* s2 = g.Constant(a2.inputs[1]);
    const Tensor* t2 = g.Constant(a2.inputs[2]);
    const int64_t c = g.Constant(a1.inputs[1])->numel();
    return s2->dtype() == DType::kFloat && t2->dtype() == DType::kFloat && s2->numel() == c &&
           t2->numel() == c;
  };
  r.rewrite = [](const Match& m, FusionGraph& g) {
    const FusionNode& a1 = Captured(g, m, "a1");
    const FusionNode& a2 = Captured(g, m, "a2");
    std::vector<float> s1, t1, s2, t2;
    ReadAffine(g, a1, &s1, &t1);
    ReadAffine(g, a2, &s2, &t2);
    for (size_t i = 0; i < s1.size(); ++i) {
      t1[i] = t1[i] * s2[i] + t2[i];
      s1[i] *= s2[i];
    }
    return BuildAffine(g, *a1.node, a1.inputs[0], s1, t1, FusedActivationOf(*a2.node),
                       m.root_value);
  };
  return r;
}

Rule ActivationRule() {
  Rule r;
  r.name = "ChannelAffineActivation";
  r.kind = "ChannelAffineActivation";
  r.pattern = P::Op(kernels::FusableActivationOps(), {P::Op(kAffine).As("a")}).As("act");
  r.valid = [](const Match& m, const FusionGraph& g) {
    return OpenAffine(g, Captured(g, m, "a")) && ActivationOf(g, Captured(g, m, "act")).has_value();
  };
  r.rewrite = [](const Match& m, FusionGraph& g) {
    const FusionNode& a = Captured(g, m, "a");
    ir::Node def = *a.node;
    SetActivation(def, *ActivationOf(g, Captured(g, m, "act")));
    return Single(std::move(def), a.inputs, {m.root_value});
  };
  return r;
}

}  // namespace

void AddAffineRules(std::vector<Rule>& rules) {
  rules.push_back(BatchNormRule());
  rules.push_back(MulAddRule("Add"));
  rules.push_back(MulAddRule("Sub"));
  for (const char* op : {"Mul", "Add", "Sub"}) rules.push_back(ExtendRule(op));
  rules.push_back(MergeRule());
  rules.push_back(ActivationRule());
}

}  // namespace onyx::planner::fusion
