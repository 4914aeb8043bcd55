// sparse_initializer stays COO through loading; the planner densifies only what a plan reads and
// hands the COO form to kernel creation (KernelCreateInfo::sparse_constants).
#include <gtest/gtest.h>

#include "engine/model_loader.h"
#include "kernels/op_registry.h"
#include "onyx/session.h"
#include "planner/planner.h"
#include "tests/engine/model_builder.h"

namespace onyx::planner {
namespace {

using onyx::testing::ModelBuilder;

// A [2, 3] float sparse initializer with 5 at (0, 1) and -1 at (1, 2), indices as [nnz, rank].
void AddSparse(ModelBuilder& b, const std::string& name) {
  auto* sp = b.graph().add_sparse_initializer();
  sp->add_dims(2);
  sp->add_dims(3);
  auto* v = sp->mutable_values();
  v->set_name(name);
  v->set_data_type(onnx::TensorProto::FLOAT);
  v->add_dims(2);
  v->add_float_data(5.f);
  v->add_float_data(-1.f);
  auto* ix = sp->mutable_indices();
  ix->set_data_type(onnx::TensorProto::INT64);
  ix->add_dims(2);
  ix->add_dims(2);
  for (int64_t i : {0, 1, 1, 2}) ix->add_int64_data(i);
}

ModelBuilder MulBySparse() {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2, 3});
  b.Output("y", onnx::TensorProto::FLOAT, {2, 3});
  AddSparse(b, "w");
  AddSparse(b, "unused");
  b.Node("Mul", {"x", "w"}, {"y"}, "sparse_probe");
  return b;
}

PlanOptions NoFusion() {
  PlanOptions o;
  o.optimization = OptLevel::kNone;
  return o;
}

std::map<std::string, TypeInfo> XTypes() {
  return {{"x", TypeInfo::TensorWithShape(DType::kFloat, {2, 3})}};
}

TEST(sparse_constant, LoaderKeepsCooWithFlatIndices) {
  auto m = engine::LoadModelFromBytes(MulBySparse().Bytes());
  ASSERT_TRUE(m.ok()) << m.status().message();
  const ir::Graph& g = *m->graph;
  EXPECT_TRUE(g.initializers.empty());
  const ir::SparseConstant* sp = g.FindSparseInitializer("w");
  ASSERT_NE(sp, nullptr);
  EXPECT_EQ(sp->dims, (Shape{2, 3}));
  ASSERT_EQ(sp->nnz(), 2);
  EXPECT_EQ(sp->indices.data<int64_t>()[0], 1);  // (0, 1) row-major
  EXPECT_EQ(sp->indices.data<int64_t>()[1], 5);  // (1, 2)
  EXPECT_EQ(sp->values.data<float>()[1], -1.f);
  EXPECT_TRUE(g.RequiredInputs() == std::vector<std::string>{"x"});
}

TEST(sparse_constant, PlanDensifiesOnlyWhatItReads) {
  auto m = engine::LoadModelFromBytes(MulBySparse().Bytes());
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto plan = BuildPlan(*m->graph, XTypes(), {}, NoFusion());
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ((*plan)->slot_of.count("unused"), 0u);
  const int w = (*plan)->slot_of.at("w");
  const Tensor& dense = (*plan)->constants.at(w).tensor();
  ASSERT_EQ(dense.shape(), (Shape{2, 3}));
  const float want[6] = {0, 5, 0, 0, 0, -1};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(dense.data<float>()[i], want[i]) << i;
}

// A probe in front of Mul's kernels that reads sparse constants: it takes only nodes named
// sparse_probe, records what creation saw, and declines, so the usual kernel runs the node.
std::vector<const ir::SparseConstant*> seen;
std::vector<int64_t> seen_indices;

void RegisterProbe() {
  static bool registered = false;
  if (registered) return;
  kernels::KernelImpl probe;
  probe.name = "Mul_sparse_probe";
  probe.reads_sparse_constants = true;
  probe.supports = [](const kernels::NodeView& n, const std::vector<TypeInfo>&) {
    return n.node().name == "sparse_probe" ? Status::Ok() : Unsupported("not the probe");
  };
  probe.create_with_info =
      [](const kernels::NodeView&, const std::vector<TypeInfo>&,
         const kernels::KernelCreateInfo& info) -> StatusOr<std::unique_ptr<kernels::Kernel>> {
    seen = info.sparse_constants;
    seen_indices.clear();
    if (seen.size() > 1 && seen[1] != nullptr)
      seen_indices.assign(seen[1]->indices.data<int64_t>(),
                          seen[1]->indices.data<int64_t>() + seen[1]->nnz());
    return Unsupported("probe only");
  };
  ASSERT_GT(
      const_cast<kernels::OpRegistry&>(kernels::OpRegistry::Global()).PrependImpl("", "Mul", probe),
      0);
  registered = true;
}

TEST(sparse_constant, KernelCreationSeesTheCooForm) {
  RegisterProbe();
  auto m = engine::LoadModelFromBytes(MulBySparse().Bytes());
  ASSERT_TRUE(m.ok()) << m.status().message();
  seen.clear();
  auto plan = BuildPlan(*m->graph, XTypes(), {}, NoFusion());
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], nullptr);  // x: not a constant
  EXPECT_EQ(seen[1], m->graph->FindSparseInitializer("w"));
}

TEST(sparse_constant, SessionKeepsCooForReadersThatTakeIt) {
  RegisterProbe();
  seen.clear();
  SessionOptions o;
  o.optimization = OptimizationLevel::kNone;
  auto s = Session::CreateFromBytes(MulBySparse().Bytes(), o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen_indices, (std::vector<int64_t>{1, 5}));
  // The usual Mul kernel ran the node on the densified weight.
  float x[6] = {1, 2, 3, 4, 5, 6};
  auto out = s->Run({{"x", Tensor::Borrow(DType::kFloat, {2, 3}, x)}});
  const float want[6] = {0, 10, 0, 0, 0, -6};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[0].second.tensor().data<float>()[i], want[i]) << i;
}

TEST(sparse_constant, DensifiedOnceWhereNoReaderTakesCoo) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2, 3});
  b.Output("y", onnx::TensorProto::FLOAT, {2, 3});
  AddSparse(b, "w");
  AddSparse(b, "unused");
  b.Node("Add", {"x", "w"}, {"y"}, "add");
  auto m = engine::LoadModelFromBytes(b.Bytes());
  ASSERT_TRUE(m.ok()) << m.status().message();
  DensifySparseInitializers(*m->graph);
  const ir::Graph& g = *m->graph;
  EXPECT_EQ(g.FindSparseInitializer("w"), nullptr);
  EXPECT_NE(g.FindSparseInitializer("unused"), nullptr);  // read by nothing: never densified
  EXPECT_EQ(g.initializers.count("unused"), 0u);
  ASSERT_EQ(g.initializers.count("w"), 1u);
  const float want[6] = {0, 5, 0, 0, 0, -1};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(g.initializers.at("w").data<float>()[i], want[i]) << i;
}

TEST(sparse_constant, ReadersThatTakeCooKeepIt) {
  RegisterProbe();
  auto m = engine::LoadModelFromBytes(MulBySparse().Bytes());
  ASSERT_TRUE(m.ok()) << m.status().message();
  DensifySparseInitializers(*m->graph);
  EXPECT_NE(m->graph->FindSparseInitializer("w"), nullptr);
  EXPECT_EQ(m->graph->initializers.count("w"), 0u);
}

}  // namespace
}  // namespace onyx::planner
