// Common subexpression elimination (planner/common_subexpressions.h): repeated shape arithmetic
// of the kind exporters write is computed once, equal small constants count as the same input,
// and random operators, graph outputs and differing attributes are left alone. Outputs are
// checked against values computed here by hand.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "engine/model_loader.h"
#include "onyx/session.h"
#include "planner/planner.h"
#include "tests/engine/model_builder.h"
#include "tests/planner/step_counts.h"

namespace onyx::planner {
namespace {

using testing::ModelBuilder;
using testing::StepCounts;
constexpr auto kF = onnx::TensorProto::FLOAT;

// y1 = Reshape(x, [x.shape[0], -1]) and y2 = Reshape(-x, [x.shape[0], -1]), each target shape
// computed from its own Shape node and its own index constant, as TorchScript exports write it;
// and y3 = x * 2 written twice, once as a graph output of its own.
ModelBuilder RepeatedShapeModel() {
  ModelBuilder b;
  b.Input("x", kF, {-1, 2, 3}).Output("y1", kF, {}).Output("y2", kF, {}).Output("y3", kF, {});
  b.Output("y4", kF, {});
  b.Int64Init("zero_a", {}, {0});
  b.Int64Init("zero_b", {}, {0});
  b.Int64Init("axes", {1}, {0});
  b.Int64Init("minus_one", {1}, {-1});
  b.FloatInit("two", {}, {2.f});
  for (const std::string k : {"a", "b"}) {
    b.Node("Shape", {"x"}, {"shape_" + k});
    b.Node("Gather", {"shape_" + k, "zero_" + k}, {"n_" + k});
    b.Node("Unsqueeze", {"n_" + k, "axes"}, {"n1_" + k});
    b.Node("Concat", {"n1_" + k, "minus_one"}, {"target_" + k});
    auto& c = b.graph().mutable_node()->at(b.graph().node_size() - 1);
    testing::SetIntAttr(c, "axis", 0);
  }
  b.Node("Reshape", {"x", "target_a"}, {"y1"});
  b.Node("Neg", {"x"}, {"neg"});
  b.Node("Reshape", {"neg", "target_b"}, {"y2"});
  b.Node("Mul", {"x", "two"}, {"y3"});
  b.Node("Mul", {"x", "two"}, {"y4"});  // a graph output: keeps its own step
  return b;
}

TEST(CommonSubexpressions, RepeatedShapeArithmeticRunsOnce) {
  ModelBuilder b = RepeatedShapeModel();
  auto model = engine::LoadModelFromBytes(b.Bytes(), "cse");
  ASSERT_TRUE(model.ok()) << model.status().message();
  const ir::Graph& g = *model->graph;
  std::map<std::string, TypeInfo> types = {{"x", g.inputs[0].type}};  // [N, 2, 3], N symbolic
  PlanOptions opts;
  opts.optimization = OptLevel::kBasic;
  auto plan = BuildPlan(g, types, {}, opts);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  auto counts = StepCounts(**plan);
  // The two chains merged into one (zero_a and zero_b hold the same value); the shape folding
  // after it then gives y1's Reshape the constant target [0, -1] and computes y2's target, x's
  // dim 0 and -1, in one DimsOf step.
  for (const char* op : {"Shape", "Gather", "Unsqueeze", "Concat"}) EXPECT_EQ(counts[op], 0) << op;
  EXPECT_EQ(counts["DimsOf"], 1);
  EXPECT_EQ(counts["Reshape"], 2);  // different data
  EXPECT_EQ(counts["Mul"], 2);      // both products are graph outputs
  int merged = 0;
  for (const FusionRecord& r : (*plan)->fusions) merged += r.kind == "CommonSubexpression";
  EXPECT_EQ(merged, 4);

  // Without optimization nothing is merged.
  opts.optimization = OptLevel::kNone;
  auto plain = BuildPlan(g, types, {}, opts);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(StepCounts(**plain).at("Shape"), 2);
}

TEST(CommonSubexpressions, MergedPlanComputesTheSameValues) {
  ModelBuilder b = RepeatedShapeModel();
  SessionOptions o;
  o.intra_op_threads = 1;
  Session s = Session::FromBytes(b.Bytes(), o);
  std::vector<float> x(3 * 2 * 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 4.f;
  NamedValues out = s.Run({{"x", Tensor::Borrow(DType::kFloat, {3, 2, 3}, x.data())}});
  ASSERT_EQ(out.size(), 4u);
  const Tensor& y1 = out[0].second.tensor();
  const Tensor& y2 = out[1].second.tensor();
  ASSERT_EQ(y1.shape(), (Shape{3, 6}));
  ASSERT_EQ(y2.shape(), (Shape{3, 6}));
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(y1.data<float>()[i], x[i]);
    EXPECT_EQ(y2.data<float>()[i], -x[i]);
    EXPECT_EQ(out[2].second.tensor().data<float>()[i], 2 * x[i]);
    EXPECT_EQ(out[3].second.tensor().data<float>()[i], 2 * x[i]);
  }
}

TEST(CommonSubexpressions, RandomOperatorsAndOtherAttributesStaySeparate) {
  ModelBuilder b;
  b.Input("x", kF, {4}).Output("r1", kF, {}).Output("r2", kF, {}).Output("s", kF, {});
  b.Node("RandomUniformLike", {"x"}, {"u1"});
  b.Node("RandomUniformLike", {"x"}, {"u2"});
  b.Node("Neg", {"u1"}, {"r1"});
  b.Node("Neg", {"u2"}, {"r2"});
  // The same operator and input with a different attribute value computes something else.
  auto& a = b.Node("LeakyRelu", {"x"}, {"s0"});
  auto& c = b.Node("LeakyRelu", {"x"}, {"s1"});
  for (auto [node, alpha] : {std::pair{&a, 0.1f}, std::pair{&c, 0.2f}}) {
    auto* attr = node->add_attribute();
    attr->set_name("alpha");
    attr->set_type(onnx::AttributeProto::FLOAT);
    attr->set_f(alpha);
  }
  b.Node("Add", {"s0", "s1"}, {"s"});
  auto model = engine::LoadModelFromBytes(b.Bytes(), "cse_random");
  ASSERT_TRUE(model.ok()) << model.status().message();
  const ir::Graph& g = *model->graph;
  auto plan = BuildPlan(g, {{"x", g.inputs[0].type}}, {}, PlanOptions());
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const auto counts = StepCounts(**plan);
  EXPECT_EQ(counts.at("RandomUniformLike"), 2);
  EXPECT_EQ(counts.at("Neg"), 2);
  EXPECT_EQ(counts.at("LeakyRelu"), 2);
}

}  // namespace
}  // namespace onyx::planner
