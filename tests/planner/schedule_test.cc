// Schedule and plan determinism: Kahn's ready set follows file position, and 100 loads of a real
// model give the same schedule, offsets and kernel choices.
#include "planner/schedule.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/model_loader.h"
#include "onyx/session.h"
#include "planner/planner.h"
#include "tests/engine/model_builder.h"

namespace onyx::planner {
namespace {

using onyx::testing::ModelBuilder;

TEST(schedule, ReadyNodesRunInFilePosition) {
  // Nodes listed out of dependency order: c depends on a and b; d is independent.
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2});
  b.Output("y", onnx::TensorProto::FLOAT, {2});
  b.Output("z", onnx::TensorProto::FLOAT, {2});
  b.Node("Add", {"a", "b"}, {"y"}, "c");  // #0
  b.Node("Relu", {"x"}, {"a"}, "a");      // #1
  b.Node("Abs", {"x"}, {"z"}, "d");       // #2
  b.Node("Neg", {"x"}, {"b"}, "b");       // #3
  auto m = engine::LoadModelFromBytes(b.Bytes());
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto order = KahnSchedule(*m->graph);
  ASSERT_TRUE(order.ok());
  // Ready at start: #1, #2, #3 → #1 first; then #2, #3; #0 becomes ready after #3.
  EXPECT_EQ(*order, (std::vector<int>{1, 2, 3, 0}));
}

TEST(schedule, HundredLoadsGiveTheSamePlan) {
  const std::string path = std::string(ONYX_TEST_DATA) + "/light/light_inception_v1.onnx";
  std::string first;
  for (int i = 0; i < 100; ++i) {
    auto s = Session::Create(path);
    ASSERT_TRUE(s.ok()) << s.status().message();
    auto plan = s->DescribePlan({}, /*json=*/true);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    if (i == 0)
      first = *plan;
    else
      ASSERT_EQ(*plan, first) << "plan differs on load " << i;
  }
  EXPECT_NE(first.find("\"schedule\""), std::string::npos);
}

TEST(schedule, ArenaNearMaxLiveOnResnet50) {
  auto s = Session::Create(std::string(ONYX_TEST_DATA) + "/light/light_resnet50.onnx");
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto m = engine::LoadModelFromFile(std::string(ONYX_TEST_DATA) + "/light/light_resnet50.onnx");
  ASSERT_TRUE(m.ok());
  std::map<std::string, TypeInfo> types;
  for (const auto& in : m->graph->inputs)
    if (!m->graph->initializers.count(in.name)) {
      TypeInfo t = in.type;
      for (Dim& d : t.dims)
        if (!d.known()) d = Dim::Known(1);
      types[in.name] = t;
    }
  auto plan = BuildPlan(*m->graph, types, {}, PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const auto& p = **plan;
  EXPECT_GE(p.arena_bytes, p.arena_bytes_max_live);
  EXPECT_LE(p.arena_bytes, p.arena_bytes_no_reuse);
  EXPECT_LE(static_cast<double>(p.arena_bytes), 1.10 * static_cast<double>(p.arena_bytes_max_live));
  // Graph outputs and inputs are never in the arena.
  for (int id : p.output_slots) EXPECT_NE(p.slots[id].storage, Storage::kArena);
  for (int id : p.input_slots) EXPECT_NE(p.slots[id].storage, Storage::kArena);
}

TEST(schedule, OutputWithoutConsumersIsStillAllocated) {
  // Split-like: Relu produces 'dead', which nobody reads and which is not a graph output.
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {4});
  b.Output("y", onnx::TensorProto::FLOAT, {4});
  b.Node("Relu", {"x"}, {"dead"}, "r");
  b.Node("Abs", {"x"}, {"y"}, "a");
  auto m = engine::LoadModelFromBytes(b.Bytes());
  ASSERT_TRUE(m.ok());
  std::map<std::string, TypeInfo> types{{"x", TypeInfo::TensorWithShape(DType::kFloat, {4})}};
  auto plan = BuildPlan(*m->graph, types, {}, PlanOptions{OptLevel::kNone, true, false});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const ValueSlot& dead = (*plan)->slots[(*plan)->slot_of.at("dead")];
  EXPECT_EQ(dead.storage, Storage::kArena);
  EXPECT_GE(dead.bytes, 16u);
  EXPECT_EQ(dead.def_step, dead.last_step);
}

}  // namespace
}  // namespace onyx::planner

namespace onyx::planner {
namespace {

TEST(schedule, ElementwiseChainRunsInPlace) {
  // x → Relu → a → Neg → b → Sigmoid → c → Abs → y: a dies at Neg and b at Sigmoid, so a, b
  // and c share one buffer; y (a graph output) is on the heap.
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {256});
  b.Output("y", onnx::TensorProto::FLOAT, {256});
  b.Node("Relu", {"x"}, {"a"}, "r");
  b.Node("Neg", {"a"}, {"b"}, "n");
  b.Node("Sigmoid", {"b"}, {"c"}, "s");
  b.Node("Abs", {"c"}, {"y"}, "abs");
  auto m = engine::LoadModelFromBytes(b.Bytes());
  ASSERT_TRUE(m.ok());
  std::map<std::string, TypeInfo> types{{"x", TypeInfo::TensorWithShape(DType::kFloat, {256})}};
  auto plan = BuildPlan(*m->graph, types, {}, PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const auto& p = **plan;
  const ValueSlot& a = p.slots[p.slot_of.at("a")];
  const ValueSlot& bb = p.slots[p.slot_of.at("b")];
  const ValueSlot& c = p.slots[p.slot_of.at("c")];
  EXPECT_EQ(a.in_place_of, -1);  // x is a graph input: never overwritten
  EXPECT_EQ(bb.in_place_of, p.slot_of.at("a"));
  EXPECT_EQ(c.in_place_of, p.slot_of.at("b"));
  EXPECT_EQ(a.offset, bb.offset);
  EXPECT_EQ(bb.offset, c.offset);
  EXPECT_EQ(p.arena_bytes, 1024u);

  // And the values are right: y = |sigmoid(-relu(x))|.
  Session s = Session::FromBytes(b.Bytes());
  Tensor x = Tensor::Allocate(DType::kFloat, {256});
  for (int i = 0; i < 256; ++i) x.data<float>()[i] = static_cast<float>(i - 128) / 16.f;
  auto out = s.Run({{"x", Value(x)}});
  for (int i = 0; i < 256; ++i) {
    const double r = std::max(0.0, (i - 128) / 16.0);
    EXPECT_NEAR(out[0].second.tensor().data<float>()[i], 1.0 / (1.0 + std::exp(r)), 1e-6);
  }
}

}  // namespace
}  // namespace onyx::planner
