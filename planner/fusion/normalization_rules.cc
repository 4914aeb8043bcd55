// Transformer normalization and activation patterns as exporters write them (optimization
// level all):
// - LayerNormalization decomposed into ReduceMean, Sub, Pow 2 (or Mul d d), ReduceMean, Add eps,
//   Sqrt, Div (or Mul by Reciprocal), Mul gamma, Add beta → one ai.onnx LayerNormalization
//   (opset 17) over the reduced trailing axes;
// - Add(X, Skip) (+ a constant bias) feeding a last-axis LayerNormalization → com.onyx
//   SkipLayerNormalization;
// - GELU written with Erf, 0.5 * x * (1 + erf(x / sqrt 2)), or with Tanh,
//   0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) → ai.onnx Gelu (opset 20);
// - Where(IsNaN(x), c, x) with a scalar constant c → com.onyx ReplaceNaN.
#include <algorithm>
#include <cmath>

#include "kernels/node_view.h"
#include "planner/fusion/rule_helpers.h"
#include "planner/fusion/rules.h"

namespace onyx::planner::fusion {
namespace {

using P = Pattern;

// ---- LayerNormalization ----

// The axes a ReduceMean reduces, normalised to [0, rank) and sorted, when it keeps dims;
// nullopt when they are not known at plan time.
std::optional<std::vector<int64_t>> MeanAxes(const FusionGraph& g, const FusionNode& n,
                                             int64_t rank) {
  const kernels::NodeView v(*n.node);
  if (v.attr_int("keepdims", 1) != 1) return std::nullopt;
  std::vector<int64_t> axes;
  if (n.node->opset < 18) {
    if (!v.has_attr("axes")) return std::nullopt;
    axes = v.attr_ints("axes");
  } else {
    const Tensor* t = n.inputs.size() > 1 ? g.Constant(n.inputs[1]) : nullptr;
    if (!t || t->dtype() != DType::kInt64) return std::nullopt;
    axes.assign(t->data<int64_t>(), t->data<int64_t>() + t->numel());
  }
  if (axes.empty()) return std::nullopt;
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

// The first normalized axis when `axes` are the trailing axes [first, rank), else -1.
int64_t TrailingAxis(const std::vector<int64_t>& axes, int64_t rank) {
  const int64_t first = rank - static_cast<int64_t>(axes.size());
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != first + static_cast<int64_t>(i)) return -1;
  return first;
}

// `p` broadcasts onto the normalized dims x[axis:] without growing the result.
bool BroadcastsOntoNormalized(const FusionGraph& g, int p, const TypeInfo& x, int64_t axis) {
  const TypeInfo& t = g.Type(p);
  if (!IsFloat32(g, p) || !t.has_shape) return false;
  const int64_t k = x.rank() - axis;
  if (t.rank() > k) return false;
  for (int64_t d = 0; d < t.rank(); ++d) {
    const Dim& want = x.dims[x.rank() - t.rank() + d];
    if (!t.dims[d].known() || !want.known()) return false;
    if (t.dims[d].value != 1 && t.dims[d].value != want.value) return false;
  }
  return true;
}

// The first normalized axis of a matched decomposition, or -1 when it is not a LayerNorm.
int64_t LayerNormAxis(const Match& m, const FusionGraph& g) {
  const int x = m.value("x");
  if (!IsFloat32(g, x) || !g.Type(x).has_shape) return -1;
  const int64_t rank = g.Type(x).rank();
  auto a1 = MeanAxes(g, Captured(g, m, "mean"), rank);
  auto a2 = MeanAxes(g, Captured(g, m, "var"), rank);
  if (!a1 || !a2 || *a1 != *a2) return -1;
  const int64_t axis = TrailingAxis(*a1, rank);
  if (axis < 0) return -1;
  if (m.value("two") >= 0) {
    auto two = ScalarConstant(g, m.value("two"));
    if (!two || *two != 2.0f) return -1;
  }
  auto eps = ScalarConstant(g, m.value("eps"));
  if (!eps || !(*eps >= 0)) return -1;
  for (const char* p : {"gamma", "beta"})
    if (m.value(p) >= 0 && !BroadcastsOntoNormalized(g, m.value(p), g.Type(x), axis)) return -1;
  // Without gamma, a ones constant of the normalized shape stands in: it must be static.
  if (m.value("gamma") < 0) {
    for (int64_t d = axis; d < rank; ++d)
      if (!g.Type(x).dims[d].known()) return -1;
  }
  return axis;
}

void AddLayerNormRules(std::vector<Rule>& rules) {
  const P x = P::Any("x");
  const P mean = P::Op("ReduceMean", {x}).As("mean");
  const P d = P::Op("Sub", {x, mean}).As("sub").Value("d");
  const P square = P::Alt({P::Op("Pow", {P::Any("d"), P::Const("two")}).As("square"),
                           P::Op("Mul", {P::Any("d"), P::Any("d")}).As("square")});
  const P var = P::Op("ReduceMean", {square}).As("var");
  const P std_dev =
      P::Op("Sqrt", {P::Op("Add", {var, P::Const("eps")}).Commutative().As("add_eps")}).As("sqrt");
  const P norm = P::Alt(
      {P::Op("Div", {d, std_dev}).As("div"),
       P::Op("Mul", {d, P::Op("Reciprocal", {std_dev}).As("recip")}).Commutative().As("div")});
  const P scaled = P::Op("Mul", {norm, P::Any("gamma")}).Commutative().As("scale");
  const P shifted = P::Op("Add", {scaled, P::Any("beta")}).Commutative().As("shift");

  const std::pair<const char*, P> forms[] = {
      {"LayerNorm/scale-shift", shifted}, {"LayerNorm/scale", scaled}, {"LayerNorm/plain", norm}};
  for (const auto& [name, pattern] : forms) {
    Rule r;
    r.name = name;
    r.kind = "LayerNormalization";
    r.pattern = pattern;
    r.valid = [](const Match& m, const FusionGraph& g) { return LayerNormAxis(m, g) >= 0; };
    r.rewrite = [](const Match& m, FusionGraph& g) {
      const int x = m.value("x");
      const int64_t axis = LayerNormAxis(m, g);
      int gamma = m.value("gamma");
      if (gamma < 0) {
        const TypeInfo& t = g.Type(x);
        Shape shape;
        for (int64_t a = axis; a < t.rank(); ++a) shape.push_back(t.dims[a].value);
        gamma = g.AddConstant(
            g.Name(m.root_value) + "/ones",
            FloatTensor(shape,
                        std::vector<float>(static_cast<size_t>(ShapeElementCount(shape)), 1.0f)));
      }
      ir::Node def = MakeNode("", "LayerNormalization", 17, *Captured(g, m, "mean").node);
      def.attributes.push_back(IntAttr("axis", axis));
      def.attributes.push_back(FloatAttr("epsilon", *ScalarConstant(g, m.value("eps"))));
      std::vector<int> inputs = {x, gamma};
      if (m.value("beta") >= 0) inputs.push_back(m.value("beta"));
      return Single(std::move(def), inputs, {m.root_value});
    };
    rules.push_back(std::move(r));
  }
}

// ---- SkipLayerNormalization ----

// The LayerNorm is over the last axis with float32 parameters of N values, no statistics
// outputs, and its input is the sum of two same-shaped values a and b.
bool SkipLayerNormValid(const Match& m, const FusionGraph& g) {
  const FusionNode& ln = Captured(g, m, "ln");
  const ir::Node& n = *ln.node;
  if (!n.domain.empty() || ln.inputs.size() < 2) return false;
  for (size_t k = 1; k < ln.outputs.size(); ++k)
    if (ln.outputs[k] >= 0) return false;
  auto xs = StaticShape(g, m.value("a"));
  auto ss = StaticShape(g, m.value("b"));
  auto sum = StaticShape(g, Captured(g, m, "add").outputs[0]);
  if (!xs || !ss || !sum || *xs != *ss || *xs != *sum || xs->empty()) return false;
  if (!IsFloat32(g, m.value("a")) || !IsFloat32(g, m.value("b")) || !IsFloat32(g, m.root_value))
    return false;
  const kernels::NodeView v(n);
  const int64_t rank = static_cast<int64_t>(xs->size());
  const int64_t axis = v.attr_int("axis", -1);
  if (axis != -1 && axis != rank - 1) return false;
  if (v.attr_int("stash_type", 1) != 1) return false;
  const int64_t cols = xs->back();
  for (size_t i = 1; i < ln.inputs.size() && i < 3; ++i) {
    if (ln.inputs[i] < 0) continue;
    auto p = StaticShape(g, ln.inputs[i]);
    if (!IsFloat32(g, ln.inputs[i]) || !p || ShapeElementCount(*p) != cols) return false;
  }
  if (m.value("bias") >= 0) {
    auto bias = AxisValues(g, m.value("bias"), g.Type(m.value("a")), rank - 1);
    if (!bias) return false;
  }
  return ln.inputs[1] >= 0;
}

void AddSkipLayerNormRules(std::vector<Rule>& rules) {
  const P plain = P::Op("Add", {P::Any("a"), P::Any("b")}).Commutative().As("add");
  const P biased =
      P::Op("Add", {P::Op("Add", {P::Any("a"), P::Const("bias")}).Commutative().As("add_bias"),
                    P::Any("b")})
          .Commutative()
          .As("add");
  const std::pair<const char*, P> forms[] = {{"SkipLayerNorm/bias", biased},
                                             {"SkipLayerNorm", plain}};
  for (const auto& [name, add] : forms) {
    Rule r;
    r.name = name;
    r.kind = "SkipLayerNormalization";
    // Preferred over a MatMul residual of equal size: the skip Add lives next to the norm.
    r.priority = 1;
    r.pattern = P::Op("LayerNormalization", {add}).As("ln");
    r.valid = SkipLayerNormValid;
    r.rewrite = [](const Match& m, FusionGraph& g) {
      const FusionNode& ln = Captured(g, m, "ln");
      ir::Node def = MakeOnyxNode("SkipLayerNormalization", *ln.node);
      def.attributes.push_back(
          FloatAttr("epsilon", kernels::NodeView(*ln.node).attr_float("epsilon", 1e-5f)));
      const int beta = ln.inputs.size() > 2 ? ln.inputs[2] : -1;
      std::vector<int> inputs = {m.value("a"), m.value("b"), ln.inputs[1], beta};
      if (m.value("bias") >= 0) {
        const int a = m.value("a");
        const std::vector<float> bias =
            *AxisValues(g, m.value("bias"), g.Type(a), g.Type(a).rank() - 1);
        inputs.push_back(g.AddConstant(g.Name(m.root_value) + "/bias",
                                       FloatTensor({static_cast<int64_t>(bias.size())}, bias)));
      }
      while (inputs.size() > 3 && inputs.back() < 0) inputs.pop_back();
      return Single(std::move(def), inputs, {m.root_value});
    };
    rules.push_back(std::move(r));
  }
}

// ---- GELU ----

// 0.5 * x * inner, in the three ways exporters associate the product.
std::vector<std::pair<std::string, P>> HalfTimesX(const P& inner) {
  const P x = P::Any("x");
  const P half = P::Const("half");
  return {
      {"x-inner-half", P::Op("Mul", {P::Op("Mul", {x, inner}).Commutative().As("mul1"), half})
                           .Commutative()
                           .As("mul2")},
      {"x-half-inner", P::Op("Mul", {P::Op("Mul", {x, half}).Commutative().As("mul1"), inner})
                           .Commutative()
                           .As("mul2")},
      {"x-inner.half", P::Op("Mul", {x, P::Op("Mul", {inner, half}).Commutative().As("mul1")})
                           .Commutative()
                           .As("mul2")},
  };
}

bool GeluConstants(const Match& m, const FusionGraph& g, bool tanh_form) {
  if (!IsFloat32(g, m.value("x")) || !IsFloat32(g, m.root_value)) return false;
  const auto is = [&](const char* capture, double want) {
    auto v = ScalarConstant(g, m.value(capture));
    return v && Near(*v, want);
  };
  if (!is("half", 0.5) || !is("one", 1.0)) return false;
  // The scalars must not grow the value's rank.
  for (const char* c : {"half", "one", "k", "k3", "three"})
    if (m.value(c) >= 0 && g.Constant(m.value(c))->rank() > g.Type(m.value("x")).rank())
      return false;
  if (tanh_form) {
    if (!is("k", 0.7978845608028654) || !is("k3", 0.044715)) return false;
    return m.value("three") < 0 || is("three", 3.0);
  }
  return m.value("k") >= 0 &&
         (m.node("div") >= 0 ? is("k", 1.4142135623730951) : is("k", 0.7071067811865476));
}

void AddGeluRules(std::vector<Rule>& rules) {
  const P x = P::Any("x");
  // erf(x / sqrt 2) or erf(x * 1 / sqrt 2).
  const P erf_arg = P::Alt({P::Op("Div", {x, P::Const("k")}).As("div"),
                            P::Op("Mul", {x, P::Const("k")}).Commutative().As("scale_in")});
  const P erf_one =
      P::Op("Add", {P::Op("Erf", {erf_arg}).As("erf"), P::Const("one")}).Commutative().As("add1");
  // x^3 as Pow(x, 3), x * (x * x) or (x * x) * x.
  const P cube =
      P::Alt({P::Op("Pow", {x, P::Const("three")}).As("cube"),
              P::Op("Mul", {x, P::Op("Mul", {x, x}).As("square")}).Commutative().As("cube")});
  // 0.044715 x^3 as (x^3) * k3, or x * (x * (k3 * x)) as jax2tf writes it (Magika).
  const P k3_cube = P::Alt(
      {P::Op("Mul", {cube, P::Const("k3")}).Commutative().As("mul_k3"),
       P::Op("Mul",
             {x, P::Op("Mul", {x, P::Op("Mul", {x, P::Const("k3")}).Commutative().As("k3_x")})
                     .Commutative()
                     .As("k3_x2")})
           .Commutative()
           .As("mul_k3")});
  const P poly = P::Op("Add", {x, k3_cube}).Commutative().As("add_poly");
  const P tanh_one =
      P::Op("Add", {P::Op("Tanh", {P::Op("Mul", {poly, P::Const("k")}).Commutative().As("mul_k")})
                        .As("tanh"),
                    P::Const("one")})
          .Commutative()
          .As("add1");
  for (bool tanh_form : {false, true}) {
    for (auto& [form, pattern] : HalfTimesX(tanh_form ? tanh_one : erf_one)) {
      Rule r;
      r.name = std::string(tanh_form ? "Gelu/tanh/" : "Gelu/erf/") + form;
      r.kind = "Gelu";
      r.pattern = pattern;
      r.valid = [tanh_form](const Match& m, const FusionGraph& g) {
        return GeluConstants(m, g, tanh_form);
      };
      r.rewrite = [tanh_form](const Match& m, FusionGraph& g) {
        ir::Node def = MakeNode("", "Gelu", 20, *Captured(g, m, tanh_form ? "tanh" : "erf").node);
        if (tanh_form) def.attributes.push_back(StringAttr("approximate", "tanh"));
        return Single(std::move(def), {m.value("x")}, {m.root_value});
      };
      rules.push_back(std::move(r));
    }
  }
}

}  // namespace

// Where(IsNaN(x), c, x) with a constant scalar c: transformers' SDPA exports zero the rows of a
// softmax that were masked entirely (all NaN) after every attention; one pass instead of a bool
// tensor and a broadcasting Where (BERT at length 256: 126 -> about 20 us per layer).
void AddReplaceNaNRule(std::vector<Rule>& rules) {
  Rule r;
  r.name = "ReplaceNaN";
  r.kind = "ReplaceNaN";
  r.pattern =
      P::Op("Where", {P::Op("IsNaN", {P::Any("x")}).As("isnan"), P::Const("c"), P::Any("x")})
          .As("where");
  r.valid = [](const Match& m, const FusionGraph& g) {
    return IsFloat32(g, m.value("x")) && ScalarConstant(g, m.value("c")).has_value();
  };
  r.rewrite = [](const Match& m, FusionGraph& g) {
    ir::Node def = MakeOnyxNode("ReplaceNaN", *Captured(g, m, "where").node);
    def.attributes.push_back(FloatAttr("value", *ScalarConstant(g, m.value("c"))));
    return Single(std::move(def), {m.value("x")}, {m.root_value});
  };
  rules.push_back(std::move(r));
}

void AddNormalizationRules(std::vector<Rule>& rules) {
  AddLayerNormRules(rules);
  AddSkipLayerNormRules(rules);
  AddGeluRules(rules);
  AddReplaceNaNRule(rules);
}

}  // namespace onyx::planner::fusion
