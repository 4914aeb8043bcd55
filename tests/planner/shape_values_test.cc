// Shape arithmetic on symbolic dims (planner/fusion/shape_values.h and the ShapeFold rules): a
// Reshape whose target is made of its input's own dims gets a constant target, other values made
// of dims become one com.onyx DimsOf step, and the plan computes, at every shape fed, the values
// written out by hand here.
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
constexpr auto kI64 = onnx::TensorProto::INT64;

// x [B, S, 8] as exporters write attention's head split and a Conv1D's restore:
//   heads = Reshape(x, Concat(B, S, [2, 4]))            (x's own dims: a constant target)
//   y     = Reshape(Relu(Reshape(x, [-1, 8])), Concat(B, S, [8]))  (x's dims, another tensor)
//   pos   = Range(0, S, 1)                              (a scalar dim)
// with B = Gather(Shape(x), 0) and S = Gather(Shape(x), 1).
ModelBuilder ExporterShapeModel() {
  ModelBuilder b(13);
  b.Input("x", kF, {-1, -1, 8});
  auto* dims = b.graph().mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->mutable_dim(0)->set_dim_param("B");
  dims->mutable_dim(1)->set_dim_param("S");
  b.Output("heads", kF, {}).Output("y", kF, {}).Output("pos", kI64, {});
  b.Int64Init("i0", {}, {0});
  b.Int64Init("i1", {}, {1});
  b.Int64Init("axes", {1}, {0});
  b.Int64Init("heads_dims", {2}, {2, 4});
  b.Int64Init("width", {1}, {8});
  b.Int64Init("flat", {2}, {-1, 8});
  b.Node("Shape", {"x"}, {"shape"}, "shape");
  b.Node("Gather", {"shape", "i0"}, {"b"}, "gather_b");
  b.Node("Gather", {"shape", "i1"}, {"s"}, "gather_s");
  b.Node("Unsqueeze", {"b", "axes"}, {"bu"}, "unsqueeze_b");
  b.Node("Unsqueeze", {"s", "axes"}, {"su"}, "unsqueeze_s");
  testing::SetIntAttr(b.Node("Concat", {"bu", "su", "heads_dims"}, {"split"}, "split"), "axis", 0);
  testing::SetIntAttr(b.Node("Concat", {"bu", "su", "width"}, {"merge"}, "merge"), "axis", 0);
  b.Node("Reshape", {"x", "split"}, {"heads"}, "reshape_heads");
  b.Node("Reshape", {"x", "flat"}, {"rows"}, "reshape_rows");
  b.Node("Relu", {"rows"}, {"relu"}, "relu");
  b.Node("Reshape", {"relu", "merge"}, {"y"}, "reshape_back");
  b.Node("Range", {"i0", "s", "i1"}, {"pos"}, "range");
  return b;
}

TEST(ShapeValues, ExporterShapeArithmeticLeavesNoShapeSteps) {
  ModelBuilder b = ExporterShapeModel();
  auto model = engine::LoadModelFromBytes(b.Bytes(), "shapes");
  ASSERT_TRUE(model.ok()) << model.status().message();
  const ir::Graph& g = *model->graph;
  const std::map<std::string, TypeInfo> types = {{"x", g.inputs[0].type}};
  PlanOptions opts;
  opts.optimization = OptLevel::kBasic;
  auto plan = BuildPlan(g, types, {}, opts);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  auto counts = StepCounts(**plan);
  for (const char* op : {"Shape", "Gather", "Unsqueeze", "Concat"}) EXPECT_EQ(counts[op], 0) << op;
  EXPECT_EQ(counts["DimsOf"], 2);  // y's target and Range's limit
  EXPECT_EQ(counts["Reshape"], 3);
  for (const PlanStep& st : (*plan)->steps) {
    if (st.node->name != "reshape_heads") continue;
    const auto target = (*plan)->constants.find(st.inputs[1]);
    ASSERT_NE(target, (*plan)->constants.end()) << "the head split's target is not a constant";
    const Tensor& t = target->second.tensor();
    ASSERT_EQ(t.numel(), 4);
    EXPECT_EQ((std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + 4)),
              (std::vector<int64_t>{0, 0, 2, 4}));
  }
  // Without optimization every step stays.
  opts.optimization = OptLevel::kNone;
  auto plain = BuildPlan(g, types, {}, opts);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(StepCounts(**plain)["Shape"], 1);
  EXPECT_EQ(StepCounts(**plain)["Concat"], 2);
}

TEST(ShapeValues, EveryShapeComputesTheSameValues) {
  ModelBuilder b = ExporterShapeModel();
  for (auto level : {OptimizationLevel::kNone, OptimizationLevel::kAll}) {
    SessionOptions o;
    o.optimization = level;
    o.intra_op_threads = 1;
    Session s = Session::FromBytes(b.Bytes(), o);
    for (const auto& [batch, seq] :
         std::vector<std::pair<int64_t, int64_t>>{{2, 3}, {1, 5}, {3, 1}, {2, 3}}) {
      SCOPED_TRACE("level " + std::to_string(static_cast<int>(level)) + " shape " +
                   std::to_string(batch) + "x" + std::to_string(seq));
      std::vector<float> x(static_cast<size_t>(batch * seq * 8));
      for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 3.f;
      const NamedValues out =
          s.Run({{"x", Tensor::Borrow(DType::kFloat, {batch, seq, 8}, x.data())}});
      ASSERT_EQ(out.size(), 3u);
      const Tensor& heads = out[0].second.tensor();
      const Tensor& y = out[1].second.tensor();
      const Tensor& pos = out[2].second.tensor();
      EXPECT_EQ(heads.shape(), (Shape{batch, seq, 2, 4}));
      EXPECT_EQ(y.shape(), (Shape{batch, seq, 8}));
      ASSERT_EQ(pos.shape(), (Shape{seq}));
      for (size_t i = 0; i < x.size(); ++i) {
        EXPECT_EQ(heads.data<float>()[i], x[i]);
        EXPECT_EQ(y.data<float>()[i], x[i] > 0 ? x[i] : 0.f);
      }
      for (int64_t i = 0; i < seq; ++i) EXPECT_EQ(pos.data<int64_t>()[i], i);
    }
  }
}

TEST(ShapeValues, DimsOfWithBadAttributesIsAnErrorNamingTheNode) {
  ModelBuilder b(13);
  auto* onyx_opset = b.model().add_opset_import();
  onyx_opset->set_domain("com.onyx");
  onyx_opset->set_version(1);
  b.Input("x", kF, {-1, 4});
  b.Output("d", kI64, {});
  auto& n = b.Node("DimsOf", {"x"}, {"d"}, "dims");
  n.set_domain("com.onyx");
  testing::SetIntsAttr(n, "sources", {0, 1});  // input 1 does not exist
  testing::SetIntsAttr(n, "values", {0, 0});
  auto s = Session::CreateFromBytes(b.Bytes());
  ASSERT_FALSE(s.ok()) << "a DimsOf reading a missing input was accepted";
  EXPECT_NE(s.status().message().find("DimsOf node 'dims'"), std::string::npos)
      << s.status().message();
  EXPECT_NE(s.status().message().find("sources[1] is 1 but the node has 1 inputs"),
            std::string::npos)
      << s.status().message();
  // A dim past the input's rank, known at plan time.
  n.clear_attribute();
  testing::SetIntsAttr(n, "sources", {0});
  testing::SetIntsAttr(n, "values", {2});
  s = Session::CreateFromBytes(b.Bytes());
  ASSERT_FALSE(s.ok()) << "a DimsOf reading dim 2 of a rank-2 input was accepted";
  EXPECT_NE(s.status().message().find("dim 2 is read"), std::string::npos) << s.status().message();
}

}  // namespace
}  // namespace onyx::planner
