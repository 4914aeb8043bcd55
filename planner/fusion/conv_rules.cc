// Conv rules (optimization level all), after ONNXSat and ONNX Runtime:
// - a BatchNormalization, or a per-channel constant Mul / Add / Sub, or a ChannelAffine after a
//   Conv folds into the Conv's weights and bias at plan time:
//     W'[m] = W[m] * s[m],  B'[m] = B[m] * s[m] + t[m];
// - a ChannelAffine (no activation) before a Conv without padding folds into it:
//     W'[m, c, k] = W[m, c, k] * s[c],  B'[m] = B[m] + sum_{c, k} W[m, c, k] * t[c]
//   (with padding the zeros around the affine's output would become t instead);
// - an activation after a Conv becomes FusedConv's post-op;
// - an Add (or two-input Sum) of the Conv's output and a same-shaped residual becomes FusedConv's
//   sum post-op Z (before the activation).
#include "kernels/activation_rules.h"
#include "kernels/node_view.h"
#include "planner/fusion/rule_helpers.h"
#include "planner/fusion/rules.h"

namespace onyx::planner::fusion {
namespace {

using P = Pattern;

constexpr const char* kConv = "Conv|com.onyx:FusedConv";

bool IsFusedConv(const ir::Node& n) {
  return n.domain == kernels::kOnyxDomain && n.op_type == "FusedConv";
}

bool HasResidual(const FusionNode& conv) {
  return conv.inputs.size() > 3 && conv.inputs[3] >= 0;
}

// A float Conv (or FusedConv) whose output is exactly Conv(X, W, B): no activation, no residual.
bool PlainConv(const FusionGraph& g, const FusionNode& conv) {
  if (conv.outputs.size() != 1 || conv.inputs.size() < 2 || !IsFloat32(g, conv.inputs[0]) ||
      !IsFloat32(g, conv.outputs[0]))
    return false;
  return !IsFusedConv(*conv.node) || (HasNoActivation(*conv.node) && !HasResidual(conv));
}

// Output channels M when W is a float constant [M, C/group, k...] and B is absent or a float
// constant of M values; -1 otherwise.
int64_t ConstantWeights(const FusionGraph& g, const FusionNode& conv) {
  const Tensor* w = g.Constant(conv.inputs[1]);
  if (!w || w->dtype() != DType::kFloat || w->rank() < 3) return -1;
  const int64_t m = w->dim(0);
  if (conv.inputs.size() > 2 && conv.inputs[2] >= 0) {
    const Tensor* b = g.Constant(conv.inputs[2]);
    if (!b || b->dtype() != DType::kFloat || b->numel() != m) return -1;
  }
  return m;
}

// The Conv (or FusedConv) `conv` with W and B replaced by W * scale and B * scale + shift per
// output channel, writing `output`; `act` becomes its activation (a FusedConv when set).
Rewrite FoldIntoConv(FusionGraph& g, const FusionNode& conv, const std::vector<double>& scale,
                     const std::vector<double>& shift, const kernels::FusedActivation& act,
                     int output) {
  const Tensor& w = *g.Constant(conv.inputs[1]);
  const Tensor* b = conv.inputs.size() > 2 ? g.Constant(conv.inputs[2]) : nullptr;
  const int64_t m = w.dim(0);
  const int64_t per = w.numel() / m;
  Tensor nw = w.Clone();
  std::vector<float> nb(static_cast<size_t>(m));
  for (int64_t c = 0; c < m; ++c) {
    float* row = nw.data<float>() + c * per;
    for (int64_t k = 0; k < per; ++k) row[k] = static_cast<float>(row[k] * scale[c]);
    const double bias = b ? b->data<float>()[c] : 0.0;
    nb[c] = static_cast<float>(bias * scale[c] + shift[c]);
  }
  const std::string base = g.Name(output);
  const int w_id = g.AddConstant(base + "/folded_W", std::move(nw));
  const int b_id = g.AddConstant(base + "/folded_B", FloatTensor({m}, nb));
  ir::Node def = *conv.node;
  std::vector<int> inputs = {conv.inputs[0], w_id, b_id};
  if (act.kind != kernels::ActivationKind::kNone) {
    ir::Node fused = MakeOnyxNode("FusedConv", *conv.node);
    fused.attributes = conv.node->attributes;
    SetActivation(fused, act);
    def = std::move(fused);
  }
  return Single(std::move(def), inputs, {output});
}

// A FusedConv made from `conv` (Conv or FusedConv) with the given residual and activation.
Rewrite ToFusedConv(const FusionNode& conv, int z, const kernels::FusedActivation& act,
                    int output) {
  ir::Node def = MakeOnyxNode("FusedConv", *conv.node);
  def.attributes = conv.node->attributes;
  SetActivation(def, act);
  std::vector<int> inputs = conv.inputs;
  inputs.resize(4, -1);
  if (z >= 0) inputs[3] = z;
  return Single(std::move(def), inputs, {output});
}

// Conv followed by a per-channel affine map y = x * s[c] + t[c] that `affine` reads off the
// match (false: not per-channel).
using AffineFn = std::function<bool(const Match&, const FusionGraph&, int64_t channels,
                                    std::vector<double>* s, std::vector<double>* t)>;

Rule ConvAffineRule(const std::string& name, const std::string& kind, Pattern pattern,
                    AffineFn affine, bool keeps_activation) {
  Rule r;
  r.name = name;
  r.kind = kind;
  r.pattern = std::move(pattern);
  r.valid = [affine](const Match& m, const FusionGraph& g) {
    const FusionNode& conv = Captured(g, m, "conv");
    if (!PlainConv(g, conv) || !IsFloat32(g, m.root_value)) return false;
    const int64_t channels = ConstantWeights(g, conv);
    std::vector<double> s, t;
    return channels > 0 && affine(m, g, channels, &s, &t);
  };
  r.rewrite = [affine, keeps_activation](const Match& m, FusionGraph& g) {
    const FusionNode& conv = Captured(g, m, "conv");
    std::vector<double> s, t;
    affine(m, g, ConstantWeights(g, conv), &s, &t);
    kernels::FusedActivation act;
    if (keeps_activation) act = FusedActivationOf(*Captured(g, m, "affine").node);
    return FoldIntoConv(g, conv, s, t, act, m.root_value);
  };
  return r;
}

// Per-channel values of constant `c` against the Conv output (one per output channel).
bool ChannelConstant(const Match& m, const FusionGraph& g, int64_t channels,
                     std::vector<double>* v) {
  const int conv_out = Captured(g, m, "conv").outputs[0];
  auto values = AxisValues(g, m.value("c"), g.Type(conv_out), 1);
  if (!values || static_cast<int64_t>(values->size()) != channels) return false;
  v->assign(values->begin(), values->end());
  return true;
}

// The Conv pads nothing: auto_pad VALID, or NOTSET with every pad 0.
bool Unpadded(const ir::Node& conv) {
  const kernels::NodeView v(conv);
  const std::string auto_pad = v.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "VALID") return true;
  if (auto_pad != "NOTSET") return false;
  for (int64_t p : v.attr_ints("pads"))
    if (p != 0) return false;
  return true;
}

// ChannelAffine(x) → Conv: the affine's scale and shift per input channel of the Conv.
bool AffineBeforeConv(const Match& m, const FusionGraph& g, std::vector<float>* s,
                      std::vector<float>* t) {
  const FusionNode& conv = Captured(g, m, "conv");
  const FusionNode& affine = Captured(g, m, "affine");
  if (!HasNoActivation(*affine.node) || !Unpadded(*conv.node) || conv.outputs.size() != 1 ||
      !IsFloat32(g, conv.outputs[0]) || ConstantWeights(g, conv) <= 0)
    return false;
  const Tensor* w = g.Constant(conv.inputs[1]);
  const int64_t group = kernels::NodeView(*conv.node).attr_int("group", 1);
  const int64_t channels = w->dim(1) * group;
  const Tensor* sv = g.Constant(m.value("s"));
  const Tensor* tv = g.Constant(m.value("t"));
  if (group < 1 || w->dim(0) % group != 0 || sv->dtype() != DType::kFloat ||
      tv->dtype() != DType::kFloat || sv->numel() != channels || tv->numel() != channels)
    return false;
  s->assign(sv->data<float>(), sv->data<float>() + channels);
  t->assign(tv->data<float>(), tv->data<float>() + channels);
  return true;
}

Rule AffineConvRule() {
  Rule r;
  r.name = "ChannelAffineConv";
  r.kind = "ChannelAffineConv";
  r.pattern =
      P::Op(kConv, {P::Op("com.onyx:ChannelAffine", {P::Any("x"), P::Const("s"), P::Const("t")})
                        .As("affine")})
          .As("conv");
  r.valid = [](const Match& m, const FusionGraph& g) {
    std::vector<float> s, t;
    return AffineBeforeConv(m, g, &s, &t);
  };
  r.rewrite = [](const Match& m, FusionGraph& g) {
    const FusionNode& conv = Captured(g, m, "conv");
    std::vector<float> s, t;
    AffineBeforeConv(m, g, &s, &t);
    const Tensor& w = *g.Constant(conv.inputs[1]);
    const Tensor* b = conv.inputs.size() > 2 ? g.Constant(conv.inputs[2]) : nullptr;
    const int64_t out_channels = w.dim(0), per_group_in = w.dim(1);
    const int64_t group = kernels::NodeView(*conv.node).attr_int("group", 1);
    const int64_t taps = w.numel() / (out_channels * per_group_in);
    Tensor nw = w.Clone();
    std::vector<float> nb(static_cast<size_t>(out_channels));
    for (int64_t o = 0; o < out_channels; ++o) {
      const int64_t first = (o / (out_channels / group)) * per_group_in;  // its group's channels
      double bias = b ? b->data<float>()[o] : 0.0;
      for (int64_t c = 0; c < per_group_in; ++c) {
        float* tap = nw.data<float>() + (o * per_group_in + c) * taps;
        for (int64_t k = 0; k < taps; ++k) {
          bias += static_cast<double>(tap[k]) * t[first + c];
          tap[k] *= s[first + c];
        }
      }
      nb[o] = static_cast<float>(bias);
    }
    const std::string base = g.Name(m.root_value);
    std::vector<int> inputs = conv.inputs;
    inputs[0] = m.value("x");
    inputs.resize(std::max<size_t>(inputs.size(), 3), -1);
    inputs[1] = g.AddConstant(base + "/folded_W", std::move(nw));
    inputs[2] = g.AddConstant(base + "/folded_B", FloatTensor({out_channels}, nb));
    return Single(*conv.node, inputs, {m.root_value});
  };
  return r;
}

}  // namespace

void AddConvRules(std::vector<Rule>& rules) {
  rules.push_back(AffineConvRule());
  const P conv = P::Op(kConv).As("conv");

  rules.push_back(ConvAffineRule(
      "ConvBatchNorm", "ConvBatchNorm", P::Op("BatchNormalization", {conv}).As("affine"),
      [](const Match& m, const FusionGraph& g, int64_t channels, std::vector<double>* s,
         std::vector<double>* t) {
        return BatchNormAffine(g, Captured(g, m, "affine"), channels, s, t);
      },
      false));
  rules.push_back(ConvAffineRule(
      "ConvMul", "ConvMul", P::Op("Mul", {conv, P::Const("c")}).Commutative().As("affine"),
      [](const Match& m, const FusionGraph& g, int64_t channels, std::vector<double>* s,
         std::vector<double>* t) {
        t->assign(static_cast<size_t>(channels), 0.0);
        return ChannelConstant(m, g, channels, s);
      },
      false));
  for (const char* op : {"Add", "Sub"}) {
    const bool sub = std::string(op) == "Sub";
    P pattern = P::Op(op, {conv, P::Const("c")}).As("affine");
    if (!sub) pattern = pattern.Commutative();
    rules.push_back(ConvAffineRule(
        std::string("ConvBias/") + op, "ConvBias", pattern,
        [sub](const Match& m, const FusionGraph& g, int64_t channels, std::vector<double>* s,
              std::vector<double>* t) {
          s->assign(static_cast<size_t>(channels), 1.0);
          if (!ChannelConstant(m, g, channels, t)) return false;
          if (sub)
            for (double& v : *t) v = -v;
          return true;
        },
        false));
  }
  rules.push_back(ConvAffineRule(
      "ConvChannelAffine", "ConvChannelAffine",
      P::Op("com.onyx:ChannelAffine", {conv, P::Const("s"), P::Const("t")}).As("affine"),
      [](const Match& m, const FusionGraph& g, int64_t channels, std::vector<double>* s,
         std::vector<double>* t) {
        const Tensor* sv = g.Constant(m.value("s"));
        const Tensor* tv = g.Constant(m.value("t"));
        if (sv->dtype() != DType::kFloat || tv->dtype() != DType::kFloat ||
            sv->numel() != channels || tv->numel() != channels)
          return false;
        s->assign(sv->data<float>(), sv->data<float>() + channels);
        t->assign(tv->data<float>(), tv->data<float>() + channels);
        return true;
      },
      true));

  Rule act;
  act.name = "ConvActivation";
  act.kind = "ConvActivation";
  act.pattern = P::Op(kernels::FusableActivationOps(), {conv}).As("act");
  act.valid = [](const Match& m, const FusionGraph& g) {
    const FusionNode& c = Captured(g, m, "conv");
    if (c.outputs.size() != 1 || !IsFloat32(g, c.inputs[0]) || !IsFloat32(g, c.outputs[0]))
      return false;
    if (IsFusedConv(*c.node) && !HasNoActivation(*c.node)) return false;
    return ActivationOf(g, Captured(g, m, "act")).has_value();
  };
  act.rewrite = [](const Match& m, FusionGraph& g) {
    const FusionNode& c = Captured(g, m, "conv");
    return ToFusedConv(c, -1, *ActivationOf(g, Captured(g, m, "act")), m.root_value);
  };
  rules.push_back(std::move(act));

  Rule residual;
  residual.name = "ConvResidual";
  residual.kind = "ConvResidual";
  residual.pattern = P::Op("Add|Sum", {conv, P::Any("z")}).Commutative().As("add");
  residual.valid = [](const Match& m, const FusionGraph& g) {
    const FusionNode& c = Captured(g, m, "conv");
    if (!PlainConv(g, c) || Captured(g, m, "add").inputs.size() != 2) return false;
    const int z = m.value("z");
    auto y = StaticShape(g, c.outputs[0]);
    auto zs = StaticShape(g, z);
    auto out = StaticShape(g, m.root_value);
    return IsFloat32(g, z) && y && zs && out && *y == *zs && *y == *out;
  };
  residual.rewrite = [](const Match& m, FusionGraph& g) {
    return ToFusedConv(Captured(g, m, "conv"), m.value("z"), kernels::FusedActivation(),
                       m.root_value);
  };
  rules.push_back(std::move(residual));
}

}  // namespace onyx::planner::fusion
