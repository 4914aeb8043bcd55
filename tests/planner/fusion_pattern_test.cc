// The fusion pattern matcher on a small plan: op alternatives, commutative operands, captures
// that must agree, backtracking through alternatives, and the FusionGraph indices it reads.
#include <gtest/gtest.h>

#include "engine/model_loader.h"
#include "planner/fusion/fusion_graph.h"
#include "planner/fusion/pattern.h"
#include "planner/planner.h"
#include "tests/engine/model_builder.h"

namespace onyx::planner::fusion {
namespace {

using P = Pattern;

// x ─Relu─ r ─┬─ Add(c, r) ─ s ─Mul(s, s)─ y
//             └──────────── Sigmoid ─ q
class fusion_pattern : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::ModelBuilder b(17);
    b.Input("x", onnx::TensorProto::FLOAT, {4});
    b.Output("y", onnx::TensorProto::FLOAT, {4});
    b.Output("q", onnx::TensorProto::FLOAT, {4});
    b.FloatInit("c", {4}, {1, 2, 3, 4});
    b.Node("Relu", {"x"}, {"r"}, "relu");
    b.Node("Add", {"c", "r"}, {"s"}, "add");
    b.Node("Mul", {"s", "s"}, {"y"}, "mul");
    b.Node("Sigmoid", {"r"}, {"q"}, "sigmoid");
    auto m = engine::LoadModelFromBytes(b.Bytes());
    ASSERT_TRUE(m.ok()) << m.status().message();
    model_ = std::move(*m);
    PlanOptions opts;
    opts.optimization = OptLevel::kNone;  // keep every node as a step
    opts.reference_kernels = true;
    auto plan = BuildPlan(*model_.graph, {{"x", model_.graph->inputs[0].type}}, {}, opts);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    plan_ = std::move(*plan);
    graph_ = std::make_unique<FusionGraph>(*plan_);
  }

  int Slot(const std::string& name) { return plan_->slot_of.at(name); }

  // The first match of `p` on value `name`, or nullopt.
  std::optional<Match> First(const P& p, const std::string& name) {
    std::optional<Match> out;
    Matcher(*graph_).Run(p, Slot(name), [&](const Match& m) {
      out = m;
      return true;
    });
    return out;
  }

  ir::Model model_;
  std::unique_ptr<ExecutionPlan> plan_;
  std::unique_ptr<FusionGraph> graph_;
};

TEST_F(fusion_pattern, GraphIndices) {
  EXPECT_EQ(graph_->Producer(Slot("x")), -1);
  EXPECT_EQ(graph_->Consumers(Slot("r")).size(), 2u);
  EXPECT_EQ(graph_->Consumers(Slot("s")).size(), 2u);  // both operands of the Mul
  EXPECT_TRUE(graph_->IsGraphOutput(Slot("y")));
  EXPECT_NE(graph_->Constant(Slot("c")), nullptr);
  EXPECT_EQ(graph_->Constant(Slot("r")), nullptr);
}

TEST_F(fusion_pattern, OpsCapturesAndCommutativeOperands) {
  // Add's constant comes first in the model; the commutative pattern lists it second.
  const P add = P::Op("Add", {P::Op("Relu", {P::Any("x")}).As("relu"), P::Const("c")});
  EXPECT_FALSE(First(add, "s").has_value());
  auto m = First(add.Commutative().As("add"), "s");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->value("x"), Slot("x"));
  EXPECT_EQ(m->value("c"), Slot("c"));
  EXPECT_EQ(m->matched.size(), 2u);
  EXPECT_EQ(m->root, m->node("add"));
  EXPECT_EQ(m->external, (std::set<int>{Slot("x"), Slot("c")}));
}

TEST_F(fusion_pattern, RepeatedCaptureMustBeTheSameValue) {
  EXPECT_TRUE(First(P::Op("Mul", {P::Any("a"), P::Any("a")}), "y").has_value());
  EXPECT_FALSE(First(P::Op("Add", {P::Any("a"), P::Any("a")}), "s").has_value());
}

TEST_F(fusion_pattern, AlternativesBacktrack) {
  // The first alternative matches the Mul's first operand but binds v = r, so the Mul's second
  // operand (s) fails the capture check; the matcher must come back and try the second one.
  const P first = P::Op("Add", {P::Const("k"), P::Any("v")});
  const P second = P::Op("Add", {P::Any(), P::Op("Relu").As("relu")});
  auto m = First(P::Op("Mul", {P::Alt({first, second}), P::Any("v")}), "y");
  ASSERT_TRUE(m.has_value());
  EXPECT_GE(m->node("relu"), 0);
  EXPECT_EQ(m->value("v"), Slot("s"));
  EXPECT_EQ(m->value("k"), -1);
}

TEST_F(fusion_pattern, AcceptCanRejectAndMatchingContinues) {
  // Two ways to read Add(c, r) commutatively: reject the first, take the second.
  const P add = P::Op("Add", {P::Any("p"), P::Any("q")}).Commutative();
  std::vector<int> firsts;
  Matcher(*graph_).Run(add, Slot("s"), [&](const Match& m) {
    firsts.push_back(m.value("p"));
    return firsts.size() == 2;
  });
  EXPECT_EQ(firsts, (std::vector<int>{Slot("c"), Slot("r")}));
}

TEST_F(fusion_pattern, RootOpsIndexTheRules) {
  EXPECT_EQ(P::Op("Relu|com.onyx:FusedConv").RootOps(),
            (std::set<std::string>{"Relu", "com.onyx:FusedConv"}));
  EXPECT_EQ(P::Alt({P::Op("Add"), P::Any()}).RootOps(), (std::set<std::string>{"Add", "*"}));
}

}  // namespace
}  // namespace onyx::planner::fusion
