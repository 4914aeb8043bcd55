// onyx check (onyx/check.h): fused steps compared with the nodes they replaced, the stated bound
// of a Conv+BatchNormalization+Relu step, and planted fast kernels (wrong, and within bound).
// Its own executable: the planted kernels go into the process-wide registry.
#include "onyx/check.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/check/check_bounds.h"
#include "kernels/op_registry.h"
#include "tests/engine/model_builder.h"

namespace onyx {
namespace {

using testing::ModelBuilder;
using testing::SetIntsAttr;

std::vector<float> Values(size_t n, uint32_t seed, float scale = 1.f) {
  std::vector<float> v(n);
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = scale * (static_cast<float>(seed >> 8) / 16777216.f * 2.f - 1.f);
  }
  return v;
}

Tensor Input(const Shape& shape, uint32_t seed) {
  Tensor t = Tensor::Allocate(DType::kFloat, shape);
  const auto v = Values(t.numel(), seed);
  std::memcpy(t.raw_data(), v.data(), v.size() * sizeof(float));
  return t;
}

// x -> Conv c1 -> BatchNormalization bn1 -> Relu r1 -> Conv c2 -> Relu r2 -> Flatten -> MatMul mm
// -> Add ad -> y; and z -> Mul (named `mul_name`, z*z) -> w -> Mul after (w*w) -> v.
std::string Model(const std::string& mul_name) {
  ModelBuilder b(17);
  b.Input("x", onnx::TensorProto::FLOAT, {1, 8, 10, 10});
  b.Input("z", onnx::TensorProto::FLOAT, {4, 16});
  b.Output("y", onnx::TensorProto::FLOAT, {1, 10});
  b.Output("w", onnx::TensorProto::FLOAT, {4, 16});
  b.Output("v", onnx::TensorProto::FLOAT, {4, 16});
  b.FloatInit("W1", {16, 8, 3, 3}, Values(16 * 8 * 9, 1, 0.3f));
  b.FloatInit("B1", {16}, Values(16, 2));
  b.FloatInit("scale", {16}, Values(16, 3));
  b.FloatInit("shift", {16}, Values(16, 4));
  b.FloatInit("mean", {16}, Values(16, 5));
  std::vector<float> var = Values(16, 6);
  for (auto& v : var) v = 0.5f + std::abs(v);
  b.FloatInit("var", {16}, var);
  b.FloatInit("W2", {16, 16, 3, 3}, Values(16 * 16 * 9, 7, 0.2f));
  b.FloatInit("M", {1600, 10}, Values(1600 * 10, 8, 0.05f));
  b.FloatInit("bias", {10}, Values(10, 9));
  SetIntsAttr(b.Node("Conv", {"x", "W1", "B1"}, {"c1"}, "c1"), "pads", {1, 1, 1, 1});
  b.Node("BatchNormalization", {"c1", "scale", "shift", "mean", "var"}, {"bn1"}, "bn1");
  b.Node("Relu", {"bn1"}, {"r1"}, "r1");
  SetIntsAttr(b.Node("Conv", {"r1", "W2"}, {"c2"}, "c2"), "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c2"}, {"r2"}, "r2");
  b.Node("Flatten", {"r2"}, {"f"}, "flatten");
  b.Node("MatMul", {"f", "M"}, {"mm"}, "mm");
  b.Node("Add", {"mm", "bias"}, {"y"}, "ad");
  b.Node("Mul", {"z", "z"}, {"w"}, mul_name);
  b.Node("Mul", {"w", "w"}, {"v"}, "after");
  return b.Bytes();
}

NamedValues Feeds() {
  return {{"x", Input({1, 8, 10, 10}, 11)}, {"z", Input({4, 16}, 12)}};
}

const StepCheck* StepWith(const CheckReport& r, const std::string& node) {
  for (const auto& c : r.checks)
    if (std::find(c.nodes.begin(), c.nodes.end(), node) != c.nodes.end()) return &c;
  return nullptr;
}

// z*z with every element multiplied by (1 + rel), or (rel = 0) one ulp up: a fast Mul kernel that
// is wrong by `rel`, or by the last bit.
class ScaledSquare : public kernels::Kernel {
 public:
  explicit ScaledSquare(float rel) : rel_(rel) {}
  Status Run(kernels::KernelContext& ctx) const override {
    const Tensor& a = ctx.input(0);
    Tensor y = ctx.Output(0, DType::kFloat, a.shape());
    for (int64_t i = 0; i < a.numel(); ++i) {
      const float v = a.data<float>()[i] * a.data<float>()[i];
      y.data<float>()[i] = rel_ == 0 ? std::nextafter(v, 2 * v) : v * (1.f + rel_);
    }
    return Status::Ok();
  }

 private:
  float rel_;
};

// Puts a Mul kernel that takes only the node named `node` in front of the others.
void Plant(const std::string& impl, const std::string& node, float rel) {
  kernels::KernelImpl k;
  k.name = impl;
  k.supports = [node](const kernels::NodeView& n, const std::vector<TypeInfo>&) {
    return n.name() == node ? Status::Ok() : Unsupported("not the planted node");
  };
  k.create = [rel](const kernels::NodeView&,
                   const std::vector<TypeInfo>&) -> StatusOr<std::unique_ptr<kernels::Kernel>> {
    return std::unique_ptr<kernels::Kernel>(new ScaledSquare(rel));
  };
  // Global() is const for the engine; the registry object itself is not (op_registry.cc).
  auto& registry = const_cast<kernels::OpRegistry&>(kernels::OpRegistry::Global());
  ASSERT_GT(registry.PrependImpl("", "Mul", k), 0);
}

TEST(check, FusedStepsAreComparedWithTheNodesTheyReplaced) {
  auto r = CheckModelBytes(Model("mul"), Feeds(), {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->flagged, 0) << r->ToText();
  EXPECT_EQ(r->compared, r->steps) << r->ToText();
  const StepCheck* conv = StepWith(*r, "Conv 'c1'");
  ASSERT_NE(conv, nullptr) << r->ToText();
  EXPECT_EQ(conv->nodes,
            (std::vector<std::string>{"Conv 'c1'", "BatchNormalization 'bn1'", "Relu 'r1'"}));
  EXPECT_EQ(conv->values, std::vector<std::string>{"r1"});
  EXPECT_EQ(conv->bound_kind, "magnitude");
  // K = 8*3*3 products + the bias, plus one rounding per node of the three.
  EXPECT_EQ(conv->bound, "|d| <= 2*K*u*S, K=76");
  EXPECT_EQ(conv->elements, 16 * 10 * 10);
  const StepCheck* mm = StepWith(*r, "MatMul 'mm'");
  ASSERT_NE(mm, nullptr);
  EXPECT_NE(std::find(mm->nodes.begin(), mm->nodes.end(), "Add 'ad'"), mm->nodes.end())
      << "MatMul and Add compared as one fused step";
  EXPECT_EQ(mm->bound, "|d| <= 2*K*u*S, K=1602");
  const StepCheck* flat = StepWith(*r, "Flatten 'flatten'");
  ASSERT_NE(flat, nullptr);
  if (flat->nodes.size() == 1) EXPECT_EQ(flat->bound_kind, "exact");
  const std::string json = r->ToJson();
  EXPECT_NE(json.find("\"flagged\": 0"), std::string::npos);
}

// Only the planted step is flagged: the Mul after it is compared on the planted step's (wrong)
// output, so its error does not pass on.
TEST(check, PlantedWrongFastKernelIsFlaggedAndOnlyIt) {
  Plant("Mul_f32_planted_wrong", "planted", 0x1p-12f);  // 2^-12 relative: far above 4u
  auto r = CheckModelBytes(Model("planted"), Feeds(), {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->flagged, 1) << r->ToText();
  const StepCheck* after = StepWith(*r, "Mul 'after'");
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(after->nodes.size(), 1u) << r->ToText();
  for (const auto& c : r->checks) {
    const bool planted = c.nodes == std::vector<std::string>{"Mul 'planted'"};
    EXPECT_EQ(c.flagged, planted) << c.name;
    if (planted) {
      EXPECT_EQ(c.impl, "Mul_f32_planted_wrong");
      EXPECT_GT(c.ratio, 100);
      EXPECT_GT(c.max_ulp, 1000);
    }
    if (c.nodes == std::vector<std::string>{"Mul 'after'"}) EXPECT_EQ(c.max_abs, 0) << c.impl;
  }
}

TEST(check, PlantedKernelOneUlpOffStaysWithinTheBound) {
  // Mul's bound is 2*K*u*S with K = 1 product + 1 node: a relative error of u (about 1 ulp)
  // passes, so the bound is not a bitwise comparison.
  Plant("Mul_f32_planted_ulp", "planted_ulp", 0);
  auto r = CheckModelBytes(Model("planted_ulp"), Feeds(), {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->flagged, 0) << r->ToText();
  const StepCheck* mul = StepWith(*r, "Mul 'planted_ulp'");
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->impl, "Mul_f32_planted_ulp");
  EXPECT_GT(mul->max_abs, 0);
  EXPECT_EQ(mul->max_ulp, 1);
  EXPECT_LE(mul->ratio, 1);
}

// QuantizeLinear to uint8 with every result `delta` above the correctly rounded one.
class OffQuantize : public kernels::Kernel {
 public:
  explicit OffQuantize(int delta) : delta_(delta) {}
  Status Run(kernels::KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const float scale = ctx.input(1).data<float>()[0];
    const int zero = ctx.input(2).data<uint8_t>()[0];
    Tensor y = ctx.Output(0, DType::kUInt8, x.shape());
    for (int64_t i = 0; i < x.numel(); ++i) {
      const float q = std::nearbyint(x.data<float>()[i] / scale) + zero + delta_;
      y.data<uint8_t>()[i] = static_cast<uint8_t>(std::clamp(q, 0.f, 255.f));
    }
    return Status::Ok();
  }

 private:
  int delta_;
};

// z -> QuantizeLinear (scale 0.01, zero point 128, named `name`) -> q: values 28..228.
std::string QuantizeModel(const std::string& name) {
  ModelBuilder b(17);
  b.Input("z", onnx::TensorProto::FLOAT, {4, 16});
  b.Output("q", onnx::TensorProto::UINT8, {4, 16});
  b.FloatInit("s", {}, {0.01f});
  onnx::TensorProto& zp = *b.graph().add_initializer();
  zp.set_name("zp");
  zp.set_data_type(onnx::TensorProto::UINT8);
  zp.add_int32_data(128);
  b.Node("QuantizeLinear", {"z", "s", "zp"}, {"q"}, name);
  return b.Bytes();
}

TEST(check, QuantizingStepsMayDifferByOneQuantum) {
  for (const auto& [name, delta] : {std::pair<std::string, int>{"q_one", 1}, {"q_two", 2}}) {
    kernels::KernelImpl k;
    k.name = "QuantizeLinear_planted_" + name;
    k.supports = [name = name](const kernels::NodeView& n, const std::vector<TypeInfo>&) {
      return n.name() == name ? Status::Ok() : Unsupported("not the planted node");
    };
    k.create = [delta = delta](
                   const kernels::NodeView&,
                   const std::vector<TypeInfo>&) -> StatusOr<std::unique_ptr<kernels::Kernel>> {
      return std::unique_ptr<kernels::Kernel>(new OffQuantize(delta));
    };
    ASSERT_GT(const_cast<kernels::OpRegistry&>(kernels::OpRegistry::Global())
                  .PrependImpl("", "QuantizeLinear", k),
              0);
    auto r = CheckModelBytes(QuantizeModel(name), {{"z", Input({4, 16}, 5)}}, {});
    ASSERT_TRUE(r.ok()) << r.status().message();
    const StepCheck* q = StepWith(*r, "QuantizeLinear '" + name + "'");
    ASSERT_NE(q, nullptr) << r->ToText();
    EXPECT_EQ(q->impl, k.name);
    EXPECT_EQ(q->max_abs, delta);
    EXPECT_EQ(q->flagged, delta > 1) << r->ToText();
    EXPECT_NE(q->bound.find("integers |d| <= 1"), std::string::npos) << q->bound;
  }
}

TEST(check, BoundFormsAndSumLengths) {
  std::map<std::string, TypeInfo> types = {
      {"a", TypeInfo::TensorWithShape(DType::kFloat, {40, 7})},
      {"b", TypeInfo::TensorWithShape(DType::kFloat, {40, 5})},
      {"x", TypeInfo::TensorWithShape(DType::kFloat, {2, 3, 50})}};
  ir::Node gemm;
  gemm.op_type = "Gemm";
  gemm.inputs = {"a", "b", "c"};
  gemm.attributes = {ir::IntAttr("transA", 1)};
  // transA: the sum runs over a's 40 rows; + 1 for C, + 1 node.
  EXPECT_EQ(check::BoundFor({&gemm}, types, false).text, "|d| <= 2*K*u*S, K=42");
  ir::Node softmax;
  softmax.op_type = "Softmax";
  softmax.opset = 11;  // before 13: flattened from axis 1, so 3*50 terms
  softmax.inputs = {"x"};
  const check::Bound sm = check::BoundFor({&softmax}, types, false);
  EXPECT_EQ(sm.kind, check::BoundKind::kNormwise);
  EXPECT_EQ(sm.k, 151);
  softmax.opset = 13;  // the last axis alone
  EXPECT_EQ(check::BoundFor({&softmax}, types, false).k, 51);
  ir::Node reshape;
  reshape.op_type = "Reshape";
  ir::Node relu;
  relu.op_type = "Relu";
  EXPECT_EQ(check::BoundFor({&reshape, &relu}, types, false).kind, check::BoundKind::kExact);
  // One element's allowance: c*K*u*S.
  const check::Bound g = check::BoundFor({&gemm}, types, false);
  EXPECT_DOUBLE_EQ(g.Element(2.0, 0.5, 0), 2 * 42 * 0x1p-24 * 2.0);
}

// If(c) with then: Mul 'in_branch' (z*z), else: Add (z+z), both reading the outer z.
std::string IfModel() {
  ModelBuilder b(17);
  b.Input("c", onnx::TensorProto::BOOL, {});
  b.Input("z", onnx::TensorProto::FLOAT, {4, 16});
  b.Output("y", onnx::TensorProto::FLOAT, {4, 16});
  onnx::NodeProto& n = b.Node("If", {"c"}, {"y"}, "branch");
  for (const auto& [attr, op] :
       {std::pair<std::string, std::string>{"then_branch", "Mul"}, {"else_branch", "Add"}}) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(attr);
    a->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* g = a->mutable_g();
    g->set_name(attr);
    onnx::NodeProto* k = g->add_node();
    k->set_op_type(op);
    k->set_name(op == "Mul" ? "in_branch" : "other_branch");
    k->add_input("z");
    k->add_input("z");
    k->add_output(attr + "_out");
    onnx::ValueInfoProto* out = g->add_output();
    out->set_name(attr + "_out");
    out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  return b.Bytes();
}

// Control flow is compared whole: the If node's fast run (fast kernels in its branch) against its
// reference run. A wrong kernel inside the branch taken flags the If.
TEST(check, ControlFlowNodesAreComparedWhole) {
  Tensor c = Tensor::Allocate(DType::kBool, {});
  *c.data<bool>() = true;
  auto ok = CheckModelBytes(IfModel(), {{"c", c}, {"z", Input({4, 16}, 3)}}, {});
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  const StepCheck* step = StepWith(*ok, "If 'branch'");
  ASSERT_NE(step, nullptr) << ok->ToText();
  EXPECT_TRUE(step->compared) << step->note;
  EXPECT_FALSE(step->flagged);
  EXPECT_EQ(step->bound_kind, "normwise");
  EXPECT_EQ(step->elements, 64);

  Plant("Mul_f32_planted_in_branch", "in_branch", 0x1p-12f);
  auto bad = CheckModelBytes(IfModel(), {{"c", c}, {"z", Input({4, 16}, 3)}}, {});
  ASSERT_TRUE(bad.ok()) << bad.status().message();
  EXPECT_EQ(bad->flagged, 1) << bad->ToText();
  step = StepWith(*bad, "If 'branch'");
  ASSERT_NE(step, nullptr);
  EXPECT_TRUE(step->flagged);
  // The else branch does not run the planted kernel.
  *c.data<bool>() = false;
  auto other = CheckModelBytes(IfModel(), {{"c", c}, {"z", Input({4, 16}, 3)}}, {});
  ASSERT_TRUE(other.ok()) << other.status().message();
  EXPECT_EQ(other->flagged, 0) << other->ToText();
}

TEST(check, UnknownAndMissingFeedsAreErrorsNamingTheInput) {
  auto r = CheckModelBytes(Model("mul"), {{"nope", Input({1}, 1)}}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'nope'"), std::string::npos) << r.status().message();
  r = CheckModelBytes(Model("mul"), {{"x", Input({1, 8, 10, 10}, 1)}}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("input 'z'"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace onyx
