// The activation table (see activation_rules.h) and the parsers that read activations through it.
#include "kernels/activation_rules.h"

#include <limits>

namespace onyx::kernels {
namespace {

using common::UnaryOp;
using K = ActivationKind;

constexpr float kFltMax = std::numeric_limits<float>::max();

// Fusable rows first, in the order of ActivationKind; Gelu's erf row before its tanh row, so a
// look-up of "Gelu" by name finds the erf row. Clip's bounds are attributes before opset 11
// (ParseActivation) and inputs from 11 (the caller); Clip is registered with the elementwise ops
// (every numeric type) and Gelu's tanh row is Gelu's, hence their `since` 0. Selu's defaults are
// opset 6's (ParseActivation gives opset 1's shorter constants).
constexpr float kSeluAlpha = 1.67326319217681884765625f;
constexpr float kSeluGamma = 1.05070102214813232421875f;
// A function-local static: the table may be read during other files' static initialisation.
const std::vector<ActivationRule>& Rules() {
  // clang-format off
  static const std::vector<ActivationRule> kRules = {
  // kind               op                 since chg  alpha              beta              gamma                fusable inplace cheap  hwy    Highway loop
  {K::kRelu,            "Relu",            1,    0,   {},                {},               {},                  true,   true,   true,  true,  UnaryOp::kRelu},
  {K::kLeakyRelu,       "LeakyRelu",       1,    0,   {"alpha", 0.01f},  {},               {},                  true,   true,   true,  true,  UnaryOp::kLeakyRelu},
  {K::kClip,            "Clip",            0,    0,   {"min", -kFltMax}, {"max", kFltMax}, {},                  true,   false,  true,  true,  UnaryOp::kClip},
  {K::kSigmoid,         "Sigmoid",         1,    0,   {},                {},               {},                  true,   true,   false, true,  UnaryOp::kSigmoid},
  {K::kTanh,            "Tanh",            1,    0,   {},                {},               {},                  true,   true,   false, true,  UnaryOp::kTanh},
  {K::kHardSigmoid,     "HardSigmoid",     1,    0,   {"alpha", 0.2f},   {"beta", 0.5f},   {},                  true,   true,   true,  true,  UnaryOp::kHardSigmoid},
  {K::kHardSwish,       "HardSwish",       14,   0,   {},                {},               {},                  true,   true,   true,  true,  UnaryOp::kHardSwish},
  {K::kElu,             "Elu",             1,    0,   {"alpha", 1.0f},   {},               {},                  true,   true,   false, true,  UnaryOp::kElu},
  {K::kGelu,            "Gelu",            20,   0,   {},                {},               {},                  true,   false,  false, true,  UnaryOp::kGelu},
  {K::kGeluTanh,        "Gelu",            0,    0,   {},                {},               {},                  true,   false,  false, true,  UnaryOp::kGeluTanh},
  {K::kSoftplus,        "Softplus",        1,    0,   {},                {},               {},                  true,   true,   false, true,  UnaryOp::kSoftplus},
  {K::kMish,            "Mish",            18,   0,   {},                {},               {},                  true,   false,  false, true,  UnaryOp::kMish},
  {K::kSelu,            "Selu",            1,    6,   {"alpha", kSeluAlpha}, {},           {"gamma", kSeluGamma}, false, true,  false, false, UnaryOp::kRelu},
  {K::kCelu,            "Celu",            12,   0,   {"alpha", 1.0f},   {},               {},                  false,  true,   false, false, UnaryOp::kRelu},
  {K::kSoftsign,        "Softsign",        1,    0,   {},                {},               {},                  false,  true,   false, false, UnaryOp::kRelu},
  {K::kThresholdedRelu, "ThresholdedRelu", 10,   0,   {"alpha", 1.0f},   {},               {},                  false,  false,  true,  false, UnaryOp::kRelu},
  {K::kSwish,           "Swish",           24,   0,   {"alpha", 1.0f},   {},               {},                  false,  false,  false, false, UnaryOp::kRelu},
};
  // clang-format on
  return kRules;
}

// How many activation_params the fused form carries: the row's parameters in order (alpha,
// beta), Gelu one (its form).
int FusedParamCount(const ActivationRule& r) {
  if (r.kind == K::kGelu || r.kind == K::kGeluTanh) return 1;
  return (r.alpha.attr ? 1 : 0) + (r.beta.attr ? 1 : 0);
}

float Read(const NodeView& node, const ActivationParam& p) {
  return p.attr ? node.attr_float(p.attr, p.default_value) : 0.0f;
}

std::string FusableNames(const char* separator) {
  std::string s;
  for (const ActivationRule& r : Rules()) {
    if (!r.fusable || r.kind == K::kGeluTanh) continue;
    if (!s.empty()) s += separator;
    s += r.op_type;
  }
  return s;
}

}  // namespace

const std::vector<ActivationRule>& ActivationRules() {
  return Rules();
}

const ActivationRule* FindActivationRule(ActivationKind kind) {
  for (const ActivationRule& r : Rules())
    if (r.kind == kind) return &r;
  return nullptr;
}

const ActivationRule* FindActivationRule(std::string_view op_type) {
  for (const ActivationRule& r : Rules())
    if (op_type == r.op_type) return &r;
  return nullptr;
}

const std::string& FusableActivationOps() {
  static const std::string ops = FusableNames("|");
  return ops;
}

StatusOr<Activation> ParseActivation(const NodeView& node) {
  const ActivationRule* rule = node.domain().empty() || node.domain() == "ai.onnx"
                                   ? FindActivationRule(node.op_type())
                                   : nullptr;
  if (!rule) return node.Invalid("operator ", node.op_type(), " is not an activation");
  Activation a;
  a.kind = rule->kind;
  a.alpha = Read(node, rule->alpha);
  a.beta = Read(node, rule->beta);
  a.gamma = Read(node, rule->gamma);
  switch (rule->kind) {
    case K::kClip:
      if (node.opset() >= 11) {  // bounds are inputs now; the float range until they are read
        a.alpha = -kFltMax;
        a.beta = kFltMax;
      }
      break;
    case K::kSelu:
      if (node.opset() < 6) {  // opset 1 documented shorter constants
        a.alpha = node.attr_float("alpha", 1.6732f);
        a.gamma = node.attr_float("gamma", 1.0507f);
      }
      break;
    case K::kCelu:
      if (a.alpha == 0) return node.Invalid("attribute alpha must not be 0");
      break;
    case K::kGelu: {
      const std::string approximate = node.attr_string("approximate", "none");
      if (approximate == "tanh") {
        a.kind = K::kGeluTanh;
      } else if (approximate != "none") {
        return node.Invalid("attribute approximate is '", approximate,
                            "'; expected 'none' or 'tanh'");
      }
      break;
    }
    default:
      break;
  }
  return a;
}

StatusOr<Activation> ParseFusedActivation(const NodeView& node) {
  Activation a;
  const std::string name = node.attr_string("activation", "");
  const std::vector<float> params = node.attr_floats("activation_params");
  if (name.empty()) {
    if (!params.empty()) return node.Invalid("attribute 'activation_params' needs an activation");
    return a;
  }
  const ActivationRule* rule = FindActivationRule(name);
  if (!rule || !rule->fusable) {
    return node.Invalid("attribute 'activation' is '", name, "'; expected one of ",
                        FusableNames(", "));
  }
  const int count = FusedParamCount(*rule);
  if (static_cast<int>(params.size()) != count) {
    return node.Invalid("attribute 'activation_params' has ", params.size(),
                        " values; activation '", name, "' takes ", count);
  }
  a.kind = rule->kind;
  if (rule->kind == K::kGelu) {
    if (params[0] != 0 && params[0] != 1)
      return node.Invalid("attribute 'activation_params' of Gelu must be [0] (erf) or [1] (tanh)");
    if (params[0] == 1) a.kind = K::kGeluTanh;
    return a;
  }
  if (count > 0) a.alpha = params[0];
  if (count > 1) a.beta = params[1];
  return a;
}

std::string ActivationName(ActivationKind kind) {
  const ActivationRule* rule = FindActivationRule(kind);
  return rule ? rule->op_type : "";
}

std::vector<float> ActivationParams(const Activation& a) {
  const ActivationRule* rule = FindActivationRule(a.kind);
  if (!rule) return {};
  if (a.kind == K::kGelu) return {0.0f};
  if (a.kind == K::kGeluTanh) return {1.0f};
  std::vector<float> p;
  if (rule->alpha.attr) p.push_back(a.alpha);
  if (rule->beta.attr) p.push_back(a.beta);
  return p;
}

}  // namespace onyx::kernels
