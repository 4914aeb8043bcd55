// The kernels/common impls through the whole engine: one-node models planned with the default
// kernels and with --kernels reference give the same outputs, the plan names the fast impl, a
// chain the planner runs in place stays correct, and the light models pick the fast impls.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "onyx/session.h"
#include "tests/engine/model_builder.h"
#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

constexpr int32_t kF32 = onnx::TensorProto::FLOAT;

void SetFloatAttr(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

// Runs `bytes` on the fast kernels and on the reference kernels (threads as given) and compares
// every output; returns the fast session's plan text.
std::string ExpectSameAsReferenceSession(const std::string& bytes, const NamedValues& feeds,
                                         double atol, double rtol, int threads = 1) {
  SessionOptions fast_opts;
  fast_opts.intra_op_threads = threads;
  SessionOptions ref_opts = fast_opts;
  ref_opts.reference_kernels = true;
  Session fast = Session::FromBytes(bytes, fast_opts);
  Session ref = Session::FromBytes(bytes, ref_opts);
  const NamedValues a = fast.Run(feeds);
  const NamedValues e = ref.Run(feeds);
  EXPECT_EQ(a.size(), e.size());
  for (size_t i = 0; i < a.size() && i < e.size(); ++i)
    EXPECT_EQ(CompareFloats(a[i].second.tensor(), e[i].second.tensor(), atol, rtol), "")
        << a[i].first;
  std::map<std::string, Shape> shapes;
  for (const auto& [name, v] : feeds) shapes[name] = v.tensor().shape();
  auto plan = fast.DescribePlan(shapes, false);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? *plan : "";
}

TEST(SessionKernels, OneNodeModelsPickTheFastImplAndMatchTheReference) {
  struct Case {
    std::string op;
    std::string impl;
    std::vector<int64_t> b_shape;  // second input's shape, empty for unary ops
  };
  const Case cases[] = {
      {"Add", "Add_f32_hwy", {1, 16, 1, 1}}, {"Mul", "Mul_f32_hwy", {9}},
      {"Div", "Div_f32_hwy", {2, 16, 5, 9}}, {"Relu", "Relu_f32_hwy", {}},
      {"Sigmoid", "Sigmoid_f32_hwy", {}},    {"Tanh", "Tanh_f32_hwy", {}},
      {"Softmax", "Softmax_f32_hwy", {}},    {"Erf", "Erf_f32_hwy", {}},
  };
  std::mt19937 rng(81);
  const Shape x_shape = {2, 16, 5, 9};
  for (const Case& c : cases) {
    ModelBuilder b(17);
    b.Input("x", kF32, x_shape);
    std::vector<std::string> inputs = {"x"};
    if (!c.b_shape.empty()) {
      b.Input("b", kF32, c.b_shape);
      inputs.push_back("b");
    }
    b.Output("y", kF32, x_shape);
    b.Node(c.op, inputs, {"y"}, "node");
    NamedValues feeds = {{"x", Value(RandomFloats(x_shape, rng))}};
    if (!c.b_shape.empty()) feeds.push_back({"b", Value(RandomFloats(c.b_shape, rng, 0.5f, 2.f))});
    for (int threads : {1, 2}) {
      const std::string plan = ExpectSameAsReferenceSession(b.Bytes(), feeds, 1e-6, 2e-6, threads);
      ExpectPlanPicks(plan, c.impl);
    }
  }
}

TEST(SessionKernels, InPlaceChainMatchesTheReference) {
  // x -> Mul(x, s) -> Add(., bias) -> Relu -> Sigmoid -> y: the planner gives each elementwise
  // op its dying input's buffer.
  ModelBuilder b(17);
  b.Input("x", kF32, {4, 1023});
  b.Output("y", kF32, {4, 1023});
  b.FloatInit("s", {1}, {1.5f});
  std::vector<float> bias(1023);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<float>(i % 7) - 3.f;
  b.FloatInit("bias", {1023}, bias);
  b.Node("Mul", {"x", "s"}, {"t1"}, "mul");
  b.Node("Add", {"t1", "bias"}, {"t2"}, "add");
  b.Node("Relu", {"t2"}, {"t3"}, "relu");
  auto& leaky = b.Node("LeakyRelu", {"t3"}, {"t4"}, "leaky");
  SetFloatAttr(leaky, "alpha", 0.2f);
  b.Node("Sigmoid", {"t4"}, {"y"}, "sigmoid");
  std::mt19937 rng(83);
  const std::string plan = ExpectSameAsReferenceSession(
      b.Bytes(), {{"x", Value(RandomFloats({4, 1023}, rng))}}, 1e-7, 1e-6);
  EXPECT_NE(plan.find("in place of"), std::string::npos) << plan;
}

TEST(SessionKernels, LightModelsUseTheFastImpls) {
  // Without fusion, so the plain elementwise ops stay visible (fusion folds them into Conv).
  const std::string dir = std::string(ONYX_TEST_DATA) + "/light/";
  SessionOptions opts;
  opts.optimization = OptimizationLevel::kNone;
  struct Want {
    const char* model;
    std::vector<std::string> impls;
  };
  const Want wants[] = {
      {"light_densenet121.onnx",
       {"Relu_f32_hwy", "Concat_any_memcpy", "Mul_f32_hwy", "Add_f32_hwy",
        "BatchNormalization_f32_hwy"}},
      {"light_resnet50.onnx", {"Relu_f32_hwy", "Sum_f32_hwy", "Softmax_f32_hwy"}},
      {"light_shufflenet.onnx", {"Transpose_any_tiled", "Concat_any_memcpy"}},
  };
  for (const Want& w : wants) {
    Session s(dir + w.model, opts);
    auto plan = s.DescribePlan({}, false);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    for (const std::string& impl : w.impls) ExpectPlanPicks(*plan, impl, w.model);
  }
}

}  // namespace
}  // namespace onyx::testing
