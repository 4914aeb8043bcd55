// Order independence of the fusion pass: shuffling the rule list (24 seeds) gives the identical
// plan, byte for byte, on every light model and every benchmark model that has been built
// (bench/models/make_bench_models.py), and on a small graph where rules compete.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "engine/model_loader.h"
#include "planner/planner.h"
#include "tests/engine/model_builder.h"

namespace onyx::planner {
namespace {

constexpr int kSeeds = 24;

std::map<std::string, TypeInfo> DeclaredInputs(const ir::Graph& g) {
  std::map<std::string, TypeInfo> types;
  for (const auto& in : g.inputs) {
    if (g.initializers.count(in.name)) continue;
    TypeInfo t = in.type;
    for (Dim& d : t.dims)
      if (!d.known()) d = Dim::Known(1);
    types[in.name] = t;
  }
  return types;
}

// Plans `graph` at level all with the canonical rule order and with kSeeds shuffles; every plan
// must print the same JSON. Reference kernels keep it quick (kernel choice is not the question).
void ExpectOrderIndependent(const ir::Graph& graph, const std::string& what) {
  const auto types = DeclaredInputs(graph);
  PlanOptions opts;
  opts.reference_kernels = true;
  auto canonical = BuildPlan(graph, types, {}, opts);
  ASSERT_TRUE(canonical.ok()) << what << ": " << canonical.status().message();
  const std::string want = (*canonical)->ToJson();
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    opts.fusion_rule_seed = seed * 0x9E3779B97F4A7C15ull;
    auto shuffled = BuildPlan(graph, types, {}, opts);
    ASSERT_TRUE(shuffled.ok()) << what << ": " << shuffled.status().message();
    ASSERT_EQ((*shuffled)->ToJson(), want) << what << ": the plan changed with rule seed " << seed;
  }
}

std::vector<std::string> ModelsIn(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() == ".onnx" && name.rfind(prefix, 0) == 0) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(fusion_order, LightModels) {
  const auto models = ModelsIn(std::string(ONYX_TEST_DATA) + "/light", "light_");
  ASSERT_EQ(models.size(), 9u);
  for (const std::string& path : models) {
    auto m = engine::LoadModelFromFile(path);
    ASSERT_TRUE(m.ok()) << m.status().message();
    ExpectOrderIndependent(*m->graph, path);
  }
}

TEST(fusion_order, BenchmarkModels) {
  const auto models = ModelsIn(ONYX_BENCH_MODELS, "");
  if (models.empty()) GTEST_SKIP() << "no models in " << ONYX_BENCH_MODELS;
  for (const std::string& path : models) {
    auto m = engine::LoadModelFromFile(path);
    ASSERT_TRUE(m.ok()) << m.status().message();
    ExpectOrderIndependent(*m->graph, path);
  }
}

// Rules that compete for the same nodes: Conv + BatchNormalization / Mul / Add / activation
// against BatchNormalization → ChannelAffine and Mul+Add → ChannelAffine; MatMul + bias +
// residual + LayerNormalization against SkipLayerNormalization; Transpose chains against
// Transpose → MatMul.
TEST(fusion_order, CompetingRules) {
  using testing::ModelBuilder;
  ModelBuilder b(17);
  b.Input("x", onnx::TensorProto::FLOAT, {1, 3, 6, 6});
  b.Input("a", onnx::TensorProto::FLOAT, {2, 4, 8});
  b.Output("y", onnx::TensorProto::FLOAT, {1, 4, 6, 6});
  b.Output("z", onnx::TensorProto::FLOAT, {2, 4, 8});
  std::vector<float> w(4 * 3 * 9), ones4(4, 1.0f), half4(4, 0.5f), w8(64), b8(8, 0.1f);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(i % 17) - 0.05f;
  for (size_t i = 0; i < w8.size(); ++i) w8[i] = 0.02f * static_cast<float>(i % 11) - 0.1f;
  b.FloatInit("W", {4, 3, 3, 3}, w);
  for (const char* n : {"gamma", "var"}) b.FloatInit(n, {4}, ones4);
  for (const char* n : {"beta", "mean"}) b.FloatInit(n, {4}, half4);
  b.FloatInit("s", {4, 1, 1}, half4);
  b.FloatInit("t", {1, 4, 1, 1}, ones4);
  b.FloatInit("W8", {8, 8}, w8);
  b.FloatInit("b8", {8}, b8);
  b.FloatInit("g8", {8}, std::vector<float>(8, 1.0f));
  auto& conv = b.Node("Conv", {"x", "W"}, {"c"}, "conv");
  testing::SetIntsAttr(conv, "pads", {1, 1, 1, 1});
  b.Node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"bn"}, "bn");
  b.Node("Mul", {"bn", "s"}, {"m"}, "mul");
  b.Node("Add", {"m", "t"}, {"ad"}, "add");
  b.Node("Relu", {"ad"}, {"y"}, "relu");
  auto& t1 = b.Node("Transpose", {"a"}, {"t1"}, "t1");
  testing::SetIntsAttr(t1, "perm", {0, 2, 1});
  auto& t2 = b.Node("Transpose", {"t1"}, {"t2"}, "t2");
  testing::SetIntsAttr(t2, "perm", {0, 2, 1});
  b.Node("MatMul", {"t2", "W8"}, {"mm"}, "mm");
  b.Node("Add", {"mm", "b8"}, {"mb"}, "bias");
  b.Node("Add", {"mb", "a"}, {"res"}, "residual");
  b.Node("LayerNormalization", {"res", "g8", "b8"}, {"z"}, "ln");
  auto m = engine::LoadModelFromBytes(b.Bytes());
  ASSERT_TRUE(m.ok()) << m.status().message();
  ExpectOrderIndependent(*m->graph, "competing rules");
  // And the fixed point is the fully fused one.
  PlanOptions opts;
  opts.reference_kernels = true;
  auto plan = BuildPlan(*m->graph, DeclaredInputs(*m->graph), {}, opts);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ((*plan)->steps.size(), 3u) << (*plan)->Print();
}

}  // namespace
}  // namespace onyx::planner
