// The activation table (kernels/activation_rules.h): every activation's reference kernel against
// float64 formulas written here from the ONNX specs, the fused ops' epilogue against the ai.onnx
// op it replaces (one scalar definition for both), the fused attribute form read back, and
// unknown or non-fusable names refused with an error naming the node.
#include "kernels/activation_rules.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/node_view.h"
#include "kernels/op_registry.h"
#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

using kernels::ActivationKind;
using kernels::ActivationRule;

// The inputs every activation is checked on: both signs, the Softplus overflow point of
// log1p(exp(x)) in float (x = 89) and beyond, and NaN.
const std::vector<float> kInputs = {-100.f, -20.f, -3.f, -0.5f, -1e-3f, 0.f,   1e-3f,
                                    0.5f,   3.f,   20.f, 88.f,  89.f,   100.f, NAN};

// Parameters to set for each attribute of a row (not the defaults, so reading them is tested).
float TestValue(const char* attr) {
  const std::string a = attr;
  if (a == "alpha") return 0.3f;
  if (a == "beta") return 0.4f;
  return 1.2f;  // gamma
}

// act(x) in float64 from the ONNX operator definitions.
double Expected(ActivationKind k, double x, double alpha, double beta, double gamma) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (std::isnan(x)) return k == ActivationKind::kThresholdedRelu ? 0 : nan;  // x > alpha false
  switch (k) {
    case ActivationKind::kRelu:
      return x < 0 ? 0 : x;
    case ActivationKind::kLeakyRelu:
      return x < 0 ? alpha * x : x;
    case ActivationKind::kSigmoid:
      return 1 / (1 + std::exp(-x));
    case ActivationKind::kTanh:
      return std::tanh(x);
    case ActivationKind::kHardSigmoid:
      return std::max(0.0, std::min(1.0, alpha * x + beta));
    case ActivationKind::kHardSwish:
      return x * std::max(0.0, std::min(1.0, x / 6 + 0.5));
    case ActivationKind::kElu:
      return x < 0 ? alpha * (std::exp(x) - 1) : x;
    case ActivationKind::kGelu:
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case ActivationKind::kGeluTanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case ActivationKind::kSoftplus:
      return std::log(1 + std::exp(x));  // exp(100) is finite in double
    case ActivationKind::kMish:
      return x * std::tanh(std::log(1 + std::exp(x)));
    case ActivationKind::kSelu:
      return x > 0 ? gamma * x : gamma * (alpha * std::exp(x) - alpha);
    case ActivationKind::kCelu:
      return std::max(0.0, x) + std::min(0.0, alpha * (std::exp(x / alpha) - 1));
    case ActivationKind::kSoftsign:
      return x / (1 + std::fabs(x));
    case ActivationKind::kThresholdedRelu:
      return x > alpha ? x : 0;
    case ActivationKind::kSwish:
      return x / (1 + std::exp(-alpha * x));
    default:
      return nan;
  }
}

Tensor ExpectedTensor(ActivationKind k, const Shape& shape, double alpha, double beta,
                      double gamma) {
  std::vector<float> e;
  for (float x : kInputs) e.push_back(static_cast<float>(Expected(k, x, alpha, beta, gamma)));
  return FloatTensor(shape, e);
}

// The ai.onnx node of a row with every parameter set to TestValue.
NodeSpec OnnxSpec(const ActivationRule& rule, float* alpha, float* beta, float* gamma) {
  std::vector<ir::Attribute> attrs;
  *alpha = *beta = *gamma = 0;
  for (auto [p, out] : {std::pair{rule.alpha, alpha}, {rule.beta, beta}, {rule.gamma, gamma}}) {
    if (!p.attr) continue;
    *out = TestValue(p.attr);
    attrs.push_back(ir::FloatAttr(p.attr, *out));
  }
  if (rule.kind == ActivationKind::kGeluTanh) attrs.push_back(StringAttr("approximate", "tanh"));
  return NodeSpec(rule.op_type, 24, attrs);
}

TEST(ActivationRules, ReferenceKernelsMatchFloat64Formulas) {
  const Tensor x = FloatTensor({1, static_cast<int64_t>(kInputs.size())}, kInputs);
  int checked = 0;
  for (const ActivationRule& rule : kernels::ActivationRules()) {
    if (rule.kind == ActivationKind::kClip) continue;  // Clip's reference is the elementwise one
    float alpha, beta, gamma;
    const NodeSpec spec = OnnxSpec(rule, &alpha, &beta, &gamma);
    const RunResult r = RunImpl(spec, {x}, "");
    ASSERT_TRUE(r.status.ok()) << rule.op_type << ": " << r.status.message();
    const Tensor e = ExpectedTensor(rule.kind, x.shape(), alpha, beta, gamma);
    EXPECT_EQ(CompareFloats(r.outputs[0], e, 2e-6, 2e-6), "") << rule.op_type;
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(kernels::ActivationRules().size()) - 1);
}

// Softplus is x once exp(x) overflows float (log1p(exp(x)) gave +inf from 89), and exp(x) far
// below 0 (not a clamped 1e-38).
TEST(ActivationRules, SoftplusDoesNotOverflow) {
  const Tensor x = FloatTensor({4}, {89.f, 100.f, 1000.f, -100.f});
  const RunResult r = RunImpl(NodeSpec("Softplus", 1), {x}, "");
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  const float* y = r.outputs[0].data<float>();
  EXPECT_EQ(y[0], 89.f);
  EXPECT_EQ(y[1], 100.f);
  EXPECT_EQ(y[2], 1000.f);
  EXPECT_NEAR(y[3], std::exp(-100.0), 1e-45);
}

// Selu's defaults follow the node's opset (opset 1 documented shorter constants).
TEST(ActivationRules, SeluDefaultsFollowTheOpset) {
  const Tensor x = FloatTensor({2}, {-1.f, 1.f});
  for (auto [opset, alpha, gamma] :
       {std::tuple{1, 1.6732, 1.0507}, {6, 1.6732632423543772, 1.0507009873554805}}) {
    const RunResult r = RunImpl(NodeSpec("Selu", opset), {x}, "");
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    const Tensor e = FloatTensor(
        {2}, {static_cast<float>(gamma * alpha * (std::exp(-1.0) - 1)), static_cast<float>(gamma)});
    EXPECT_EQ(CompareFloats(r.outputs[0], e, 0, 1e-6), "") << "opset " << opset;
  }
}

// The fused ops' epilogue (ChannelAffine with scale 1, shift 0) gives what the ai.onnx op gives:
// both run the table's scalar definition, so the results are equal.
TEST(ActivationRules, FusedEpilogueIsTheOnnxActivation) {
  const int64_t n = static_cast<int64_t>(kInputs.size());
  const Tensor x = FloatTensor({1, 1, n}, kInputs);
  const Tensor scale = FloatTensor({1}, {1.f}), shift = FloatTensor({1}, {0.f});
  int checked = 0;
  for (const ActivationRule& rule : kernels::ActivationRules()) {
    if (!rule.fusable || rule.kind == ActivationKind::kClip) continue;
    float alpha, beta, gamma;
    const RunResult onnx = RunImpl(OnnxSpec(rule, &alpha, &beta, &gamma), {x}, "");
    ASSERT_TRUE(onnx.status.ok()) << rule.op_type << ": " << onnx.status.message();
    const kernels::Activation a{rule.kind, alpha, beta, gamma};
    std::vector<ir::Attribute> attrs = {StringAttr("activation", kernels::ActivationName(a.kind))};
    const std::vector<float> params = kernels::ActivationParams(a);
    if (!params.empty()) attrs.push_back(FloatsAttr("activation_params", params));
    NodeSpec fused("ChannelAffine", 1, attrs);
    fused.domain = "com.onyx";
    const RunResult r = RunImpl(fused, {x, scale, shift}, "");
    ASSERT_TRUE(r.status.ok()) << rule.op_type << ": " << r.status.message();
    EXPECT_EQ(CompareFloats(r.outputs[0], onnx.outputs[0], 0, 0), "") << rule.op_type;
    ++checked;
  }
  EXPECT_GE(checked, 11);
}

// A name the table does not have, or one it has but does not fuse, is an error naming the node
// and the name, at kernel creation and run alike; never NaN outputs.
TEST(ActivationRules, UnknownFusedActivationIsAnError) {
  const Tensor x = FloatTensor({1, 1, 2}, {1.f, -1.f});
  const Tensor one = FloatTensor({1}, {1.f});
  for (const char* name : {"Bogus", "Selu", "relu"}) {
    NodeSpec fused("ChannelAffine", 1, {StringAttr("activation", name)});
    fused.domain = "com.onyx";
    const RunResult r = RunImpl(fused, {x, one, one}, "");
    ASSERT_FALSE(r.status.ok()) << name;
    EXPECT_NE(r.status.message().find(std::string("'") + name + "'"), std::string::npos)
        << r.status.message();
    EXPECT_NE(r.status.message().find("activation"), std::string::npos) << r.status.message();
  }
  // A wrong parameter count.
  ir::Node node;
  node.name = "affine_1";
  node.domain = "com.onyx";
  node.op_type = "ChannelAffine";
  node.attributes.push_back(StringAttr("activation", "HardSigmoid"));
  node.attributes.push_back(FloatsAttr("activation_params", {0.2f}));
  const auto parsed = kernels::ParseFusedActivation(kernels::NodeView(node));
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("affine_1"), std::string::npos)
      << parsed.status().message();
  EXPECT_NE(parsed.status().message().find("takes 2"), std::string::npos)
      << parsed.status().message();
}

// The fused attribute form reads back as the activation it was written from.
TEST(ActivationRules, FusedFormRoundTrips) {
  for (const ActivationRule& rule : kernels::ActivationRules()) {
    if (!rule.fusable) continue;
    const kernels::Activation a{rule.kind, rule.alpha.attr ? 0.25f : 0.f,
                                rule.beta.attr ? 0.75f : 0.f, 0.f};
    ir::Node node;
    node.name = "n";
    node.domain = "com.onyx";
    node.op_type = "FusedConv";
    node.attributes.push_back(StringAttr("activation", kernels::ActivationName(a.kind)));
    const std::vector<float> params = kernels::ActivationParams(a);
    if (!params.empty()) node.attributes.push_back(FloatsAttr("activation_params", params));
    const auto parsed = kernels::ParseFusedActivation(kernels::NodeView(node));
    ASSERT_TRUE(parsed.ok()) << rule.op_type << ": " << parsed.status().message();
    EXPECT_EQ(parsed.value().kind, a.kind) << rule.op_type;
    EXPECT_EQ(parsed.value().alpha, a.alpha) << rule.op_type;
    EXPECT_EQ(parsed.value().beta, a.beta) << rule.op_type;
  }
}

// Every row is registered as an ai.onnx operator whose definition carries the row and the traits
// the planner reads (layout-free; in place as the row says), at every opset from its first.
TEST(ActivationRules, DefinitionsCarryTheRowAndItsTraits) {
  const kernels::OpRegistry& r = kernels::OpRegistry::Global();
  for (const ActivationRule& rule : kernels::ActivationRules()) {
    if (rule.kind == ActivationKind::kGeluTanh) continue;  // Gelu's own row
    const int64_t since = rule.kind == ActivationKind::kClip ? 1 : rule.since;
    for (int64_t opset : {since, int64_t{24}}) {
      const kernels::OpDef* def = r.Find("", rule.op_type, opset);
      ASSERT_NE(def, nullptr) << rule.op_type << " opset " << opset;
      EXPECT_EQ(def->activation, &rule) << rule.op_type;
      EXPECT_EQ(def->layout, kernels::LayoutTrait::kUnaryElementwise) << rule.op_type;
      EXPECT_EQ(def->inplace_input, rule.in_place ? 0 : -1) << rule.op_type;
    }
  }
}

}  // namespace
}  // namespace onyx::testing
