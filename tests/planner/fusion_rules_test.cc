// Fusion rules end to end through a Session: a rule fires on a minimal graph and the fused plan
// computes what the unfused one does (within 1e-5 relative, same reference kernels); it does
// not fire on a shared intermediate or a non-constant weight; levels none / basic / all choose
// which rules run; `onyx plan --json` lists the fusions with the model's node names.
// tests/python/test_fusion_*.py cover every rule against ONNX Runtime.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/model_loader.h"
#include "onyx/session.h"
#include "planner/planner.h"
#include "tests/engine/model_builder.h"

namespace onyx {
namespace {

using testing::ModelBuilder;

std::vector<float> Ramp(size_t n, float scale, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 7919) % 23) + offset;
  return v;
}

// Conv (3 -> 4 channels, 3x3, pad 1) on x [1, 3, 5, 5] writing "c"; W is an initializer unless
// `weight_input`.
ModelBuilder ConvModel(bool weight_input) {
  ModelBuilder b(15);
  b.Input("x", onnx::TensorProto::FLOAT, {1, 3, 5, 5});
  if (weight_input) {
    b.Input("W", onnx::TensorProto::FLOAT, {4, 3, 3, 3});
  } else {
    b.FloatInit("W", {4, 3, 3, 3}, Ramp(108, 0.02f, -0.2f));
  }
  b.FloatInit("gamma", {4}, {0.5f, 1.5f, 2.0f, 0.75f});
  b.FloatInit("beta", {4}, {0.1f, -0.2f, 0.3f, 0.0f});
  b.FloatInit("mean", {4}, {0.05f, -0.1f, 0.2f, 0.3f});
  b.FloatInit("var", {4}, {1.0f, 0.5f, 2.0f, 0.25f});
  auto& conv = b.Node("Conv", {"x", "W"}, {"c"}, "conv");
  testing::SetIntsAttr(conv, "pads", {1, 1, 1, 1});
  return b;
}

NamedValues Run(const std::string& bytes, OptimizationLevel level, const NamedValues& feeds,
                std::string* plan_json) {
  SessionOptions o;
  o.optimization = level;
  o.reference_kernels = true;
  o.intra_op_threads = 1;
  Session s = Session::FromBytes(bytes, o);
  if (plan_json) *plan_json = s.DescribePlan({}, /*json=*/true).value();
  return s.Run(feeds);
}

// Runs at none and all; outputs must agree within 1e-5 relative. Returns the plan JSON at all.
std::string ExpectSameOutputs(const ModelBuilder& b, const NamedValues& feeds) {
  std::string json;
  const NamedValues fused = Run(b.Bytes(), OptimizationLevel::kAll, feeds, &json);
  const NamedValues plain = Run(b.Bytes(), OptimizationLevel::kNone, feeds, nullptr);
  EXPECT_EQ(fused.size(), plain.size());
  for (size_t i = 0; i < fused.size() && i < plain.size(); ++i) {
    const Tensor& f = fused[i].second.tensor();
    const Tensor& p = plain[i].second.tensor();
    EXPECT_EQ(f.shape(), p.shape());
    double max_abs = 0, max_diff = 0;
    for (int64_t k = 0; k < p.numel(); ++k) {
      max_abs = std::max(max_abs, std::fabs(double{p.data<float>()[k]}));
      max_diff = std::max(max_diff, std::fabs(double{f.data<float>()[k]} - p.data<float>()[k]));
    }
    EXPECT_LE(max_diff, 1e-5 * max_abs) << fused[i].first;
  }
  return json;
}

NamedValues ConvFeeds() {
  static std::vector<float> x = Ramp(75, 0.1f, -1.0f);
  return {{"x", Tensor::Borrow(DType::kFloat, {1, 3, 5, 5}, x.data())}};
}

TEST(fusion_rules, ConvBatchNormReluFires) {
  ModelBuilder b = ConvModel(false);
  b.Output("y", onnx::TensorProto::FLOAT, {1, 4, 5, 5});
  b.Node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"bn"}, "bn");
  b.Node("Relu", {"bn"}, {"y"}, "relu");
  const std::string json = ExpectSameOutputs(b, ConvFeeds());
  EXPECT_NE(json.find("\"nodes\": 1,"), std::string::npos) << json;
  EXPECT_NE(json.find("{\"kind\": \"ConvBatchNorm\", \"nodes\": [\"conv\", \"bn\"]"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"kind\": \"ConvActivation\", \"nodes\": [\"conv\", \"bn\", \"relu\"], "
                      "\"into\": 0, \"into_node\": \"conv\""),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"fusion_counts\": {\"ConvActivation\": 1, \"ConvBatchNorm\": 1}"),
            std::string::npos)
      << json;
}

TEST(fusion_rules, SharedIntermediateBlocksTheFusion) {
  // bn feeds the Relu and is a graph output: neither the BN nor the Relu may be absorbed.
  ModelBuilder b = ConvModel(false);
  b.Output("y", onnx::TensorProto::FLOAT, {1, 4, 5, 5});
  b.Output("c", onnx::TensorProto::FLOAT, {1, 4, 5, 5});
  b.Node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"bn"}, "bn");
  b.Node("Relu", {"bn"}, {"y"}, "relu");
  const std::string json = ExpectSameOutputs(b, ConvFeeds());
  EXPECT_EQ(json.find("ConvBatchNorm"), std::string::npos) << json;
  // The BN on its own still becomes a ChannelAffine with the Relu as its post-op.
  EXPECT_NE(json.find("\"nodes\": 2,"), std::string::npos) << json;
}

TEST(fusion_rules, NonConstantWeightIsNotFolded) {
  ModelBuilder b = ConvModel(true);
  b.Output("y", onnx::TensorProto::FLOAT, {1, 4, 5, 5});
  b.Node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"y"}, "bn");
  static std::vector<float> w = Ramp(108, 0.03f, -0.3f);
  NamedValues feeds = ConvFeeds();
  feeds.push_back({"W", Tensor::Borrow(DType::kFloat, {4, 3, 3, 3}, w.data())});
  const std::string json = ExpectSameOutputs(b, feeds);
  EXPECT_EQ(json.find("ConvBatchNorm"), std::string::npos) << json;
}

TEST(fusion_rules, LevelsChooseTheRules) {
  // Conv, Identity, Relu: basic removes the Identity only; all also fuses the Relu.
  ModelBuilder b = ConvModel(false);
  b.Output("y", onnx::TensorProto::FLOAT, {1, 4, 5, 5});
  b.Node("Identity", {"c"}, {"i"}, "identity");
  b.Node("Relu", {"i"}, {"y"}, "relu");
  const auto nodes = [&](OptimizationLevel level) {
    SessionOptions o;
    o.optimization = level;
    o.reference_kernels = true;
    const std::string json = Session::FromBytes(b.Bytes(), o).DescribePlan({}, true).value();
    const size_t at = json.find("\"nodes\": ");
    return std::stoi(json.substr(at + 9));
  };
  EXPECT_EQ(nodes(OptimizationLevel::kNone), 3);
  EXPECT_EQ(nodes(OptimizationLevel::kBasic), 2);
  EXPECT_EQ(nodes(OptimizationLevel::kAll), 1);
  ExpectSameOutputs(b, ConvFeeds());
}

TEST(fusion_rules, KnownDimsOfASymbolicShapeFold) {
  // x [N, 8] with N symbolic: Reshape(x, Concat([-1], Unsqueeze(Gather(Shape(x), 1)))) needs no
  // shape arithmetic at run time once dim 1 is known: the chain folds, the Shape goes.
  ModelBuilder b(13);
  b.Input("x", onnx::TensorProto::FLOAT, {-1, 8});
  b.Output("y", onnx::TensorProto::FLOAT, {-1, 8});
  auto& one = *b.graph().add_initializer();
  one.set_name("one");
  one.set_data_type(onnx::TensorProto::INT64);
  one.add_int64_data(1);
  auto& minus_one = *b.graph().add_initializer();
  minus_one.set_name("minus_one");
  minus_one.set_data_type(onnx::TensorProto::INT64);
  minus_one.add_dims(1);
  minus_one.add_int64_data(-1);
  auto& zero = *b.graph().add_initializer();
  zero.set_name("zero");
  zero.set_data_type(onnx::TensorProto::INT64);
  zero.add_dims(1);
  zero.add_int64_data(0);
  b.Node("Shape", {"x"}, {"shape"}, "shape");
  b.Node("Gather", {"shape", "one"}, {"dim1"}, "gather");
  b.Node("Unsqueeze", {"dim1", "zero"}, {"dim1v"}, "unsqueeze");
  auto& concat = b.Node("Concat", {"minus_one", "dim1v"}, {"target"}, "concat");
  testing::SetIntAttr(concat, "axis", 0);
  b.Node("Reshape", {"x", "target"}, {"r"}, "reshape");
  b.Node("Relu", {"r"}, {"y"}, "relu");
  auto m = engine::LoadModelFromBytes(b.Bytes());
  ASSERT_TRUE(m.ok()) << m.status().message();
  const std::map<std::string, TypeInfo> declared = {{"x", m->graph->inputs[0].type}};
  planner::PlanOptions opts;
  opts.reference_kernels = true;
  auto plan = planner::BuildPlan(*m->graph, declared, {}, opts);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const std::string json = (*plan)->ToJson();
  EXPECT_NE(json.find("\"nodes\": 2,"), std::string::npos) << json;  // Reshape, Relu
  // The Gather of the known dim and the Concat made of numbers fold; the Unsqueeze between them
  // is a plain constant fold; the Shape is left unread.
  EXPECT_NE(json.find("\"ShapeFold\": 2"), std::string::npos) << json;
  EXPECT_NE(json.find("\"RemoveDeadNode\": 1"), std::string::npos) << json;
  opts.optimization = planner::OptLevel::kNone;
  auto none = planner::BuildPlan(*m->graph, declared, {}, opts);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ((*none)->steps.size(), 6u);
  // And it still computes: a concrete run at both levels.
  static std::vector<float> x = Ramp(24, 0.5f, -3.0f);
  for (auto level : {OptimizationLevel::kNone, OptimizationLevel::kAll}) {
    SessionOptions o;
    o.optimization = level;
    const NamedValues out = Session::FromBytes(b.Bytes(), o)
                                .Run({{"x", Tensor::Borrow(DType::kFloat, {3, 8}, x.data())}});
    const Tensor& y = out[0].second.tensor();
    ASSERT_EQ(y.shape(), (Shape{3, 8}));
    for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(y.data<float>()[i], std::max(0.0f, x[i]));
  }
}

}  // namespace
}  // namespace onyx
