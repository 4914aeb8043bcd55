// Shape inference with symbolic dims, and constant folding of shape subgraphs.
#include <gtest/gtest.h>

#include "engine/model_loader.h"
#include "planner/planner.h"
#include "tests/engine/model_builder.h"

namespace onyx::planner {
namespace {

using onyx::testing::ModelBuilder;

StatusOr<std::unique_ptr<ExecutionPlan>> PlanDeclared(const std::string& bytes, ir::Model* keep) {
  auto m = engine::LoadModelFromBytes(bytes);
  if (!m.ok()) return m.status();
  *keep = std::move(m).value();
  std::map<std::string, TypeInfo> types;
  for (const auto& in : keep->graph->inputs) types[in.name] = in.type;
  return BuildPlan(*keep->graph, types, {}, PlanOptions{});
}

TEST(shape_inference, SymbolicDimsFlowThroughBroadcast) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {-1, 1, 5});  // [N,1,5]
  b.Input("y", onnx::TensorProto::FLOAT, {4, 1});
  b.Output("z", onnx::TensorProto::FLOAT, {});
  b.Node("Add", {"x", "y"}, {"s"});
  b.Node("Relu", {"s"}, {"z"});
  b.model()
      .mutable_graph()
      ->mutable_output(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->clear_shape();
  ir::Model m;
  auto plan = PlanDeclared(b.Bytes(), &m);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const auto& s = (*plan)->slots[(*plan)->slot_of.at("s")];
  EXPECT_EQ(s.type.ToString(), "float[N,4,5]");
  EXPECT_EQ(s.storage, Storage::kHeap);  // symbolic: sized at run time
}

TEST(shape_inference, IncompatibleBroadcastIsAnErrorNamingTheNode) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2, 3});
  b.Input("y", onnx::TensorProto::FLOAT, {4});
  b.Output("z", onnx::TensorProto::FLOAT, {2, 3});
  b.Node("Add", {"x", "y"}, {"z"}, "bad_add");
  ir::Model m;
  auto plan = PlanDeclared(b.Bytes(), &m);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("bad_add"), std::string::npos) << plan.status().message();
}

TEST(shape_inference, ShapeSubgraphFoldsToConstants) {
  // Reshape(x, Concat(Shape(x)[0:1], [-1])) on a static x folds to a constant target shape, so the
  // reshaped value gets a static shape and an arena slot.
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2, 3, 4});
  b.Output("y", onnx::TensorProto::FLOAT, {2, 12});
  auto& sh = b.Node("Shape", {"x"}, {"shape"});
  testing::SetIntAttr(sh, "end", 1);
  auto* minus1 = b.graph().add_initializer();
  minus1->set_name("minus1");
  minus1->set_data_type(onnx::TensorProto::INT64);
  minus1->add_dims(1);
  minus1->add_int64_data(-1);
  auto& cat = b.Node("Concat", {"shape", "minus1"}, {"target"});
  testing::SetIntAttr(cat, "axis", 0);
  b.Node("Reshape", {"x", "target"}, {"r"});
  b.Node("Relu", {"r"}, {"y"});
  ir::Model m;
  auto plan = PlanDeclared(b.Bytes(), &m);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ((*plan)->folded_nodes, 2);  // Shape and Concat
  const auto& r = (*plan)->slots[(*plan)->slot_of.at("r")];
  EXPECT_EQ(r.type.ToString(), "float[2,12]");
  EXPECT_EQ(r.storage, Storage::kArena);
  EXPECT_EQ((*plan)->steps.size(), 2u);  // Reshape and Relu remain
}

}  // namespace
}  // namespace onyx::planner
