// Operator arity at load time (kernels/op_arity.cc, from the ONNX schemas): a node with fewer
// or more inputs/outputs than its schema allows, or a required input left empty, is refused
// with an error naming the node and the limit; omitted optional and variadic inputs still load
// and compute the values the ONNX spec gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/model_loader.h"
#include "kernels/op_arity.h"
#include "kernels/op_registry.h"
#include "onyx/session.h"
#include "tests/engine/model_builder.h"

namespace onyx {
namespace {

using testing::ModelBuilder;

constexpr int32_t kF32 = onnx::TensorProto::FLOAT;

// Loads `b` and expects kInvalidModel with every one of `parts` in the message.
void ExpectRefused(const ModelBuilder& b, const std::vector<std::string>& parts) {
  auto m = engine::LoadModelFromBytes(b.Bytes(), "m.onnx");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kInvalidModel) << m.status().message();
  for (const auto& p : parts)
    EXPECT_NE(m.status().message().find(p), std::string::npos)
        << "'" << p << "' not in: " << m.status().message();
}

// Runs `b` (no feeds) and returns output `y` as floats.
std::vector<float> RunY(const ModelBuilder& b) {
  auto s = Session::CreateFromBytes(b.Bytes());
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return {};
  NamedValues out;
  Status st = s->Run({}, {}, &out);
  EXPECT_TRUE(st.ok()) << st.message();
  if (!st.ok() || out.empty() || !out[0].second.is_tensor()) return {};
  const Tensor& t = out[0].second.tensor();
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

TEST(loader, ArityMatMulWithoutInputs) {
  ModelBuilder b(17);
  b.Output("y", kF32, {1});
  b.Node("MatMul", {}, {"y"}, "mm");
  ExpectRefused(b, {"m.onnx: ", "MatMul node 'mm' (#0)", "has 0 inputs", "MatMul-13 takes 2 inputs",
                    "input 0 'A' is missing"});
}

TEST(loader, ArityMatMulWithOneInput) {
  ModelBuilder b(17);
  b.FloatInit("a", {1, 1}, {2.f});
  b.Output("y", kF32, {1, 1});
  b.Node("MatMul", {"a"}, {"y"}, "mm");
  ExpectRefused(b, {"MatMul node 'mm' (#0)", "has 1 input;", "takes 2 inputs (A, B)",
                    "input 1 'B' is missing"});
}

TEST(loader, ArityRequiredInputLeftEmpty) {
  ModelBuilder b(17);
  b.FloatInit("x", {1, 1, 2, 2}, {1.f, 2.f, 3.f, 4.f});
  b.Output("y", kF32, {1, 1, 2, 2});
  b.Node("Conv", {"x", ""}, {"y"}, "conv");
  ExpectRefused(b, {"Conv node 'conv' (#0)", "input 1 'W' is missing",
                    "Conv-11 requires it, but its name is empty"});
}

TEST(loader, ArityTooManyInputsAndOutputs) {
  {
    ModelBuilder b(17);
    b.FloatInit("x", {2}, {1.f, -1.f});
    b.Output("y", kF32, {2});
    b.Node("Relu", {"x", "x"}, {"y"}, "r");
    ExpectRefused(b, {"Relu node 'r' (#0)", "has 2 inputs", "Relu-14 takes 1 input (X)"});
  }
  {
    ModelBuilder b(17);
    b.FloatInit("x", {2}, {1.f, -1.f});
    b.Output("y", kF32, {2});
    b.Node("Relu", {"x"}, {"y", "z"}, "r");
    ExpectRefused(b, {"Relu node 'r' (#0)", "has 2 outputs", "Relu-14 produces 1 output"});
  }
}

// The schema in force is the newest one not above the model's opset: Clip-6 took min and max
// as attributes, so 3 inputs are too many there and fine from Clip-11 on.
TEST(loader, ArityFollowsTheModelOpset) {
  ModelBuilder b(6, 3);
  b.FloatInit("x", {2}, {1.f, -1.f});
  b.Output("y", kF32, {2});
  b.Node("Clip", {"x", "x", "x"}, {"y"}, "clip");
  ExpectRefused(b, {"Clip node 'clip' (#0)", "has 3 inputs", "Clip-6 takes 1 input"});
}

TEST(loader, ArityCheckedInSubgraphs) {
  ModelBuilder b(17);
  b.Output("y", kF32, {1});
  auto* cond = b.graph().add_initializer();
  cond->set_name("c");
  cond->set_data_type(onnx::TensorProto::BOOL);
  cond->add_int32_data(1);
  onnx::NodeProto& n = b.Node("If", {"c"}, {"y"}, "if");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* a = n.add_attribute();
    a->set_name(branch);
    a->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* g = a->mutable_g();
    g->set_name(branch);
    auto* mm = g->add_node();
    mm->set_op_type("MatMul");
    mm->set_name("inner");
    mm->add_input("c");
    mm->add_output("t");
    auto* out = g->add_output();
    out->set_name("t");
    out->mutable_type()->mutable_tensor_type()->set_elem_type(kF32);
  }
  ExpectRefused(b,
                {"If node 'if' (#0)", "then_branch", "MatMul node 'inner' (#0)", "has 1 input;"});
}

// Optional inputs omitted (trailing, or in the middle as ""): Clip with X alone is Identity.
TEST(loader, ArityOptionalInputsOmittedStillLoad) {
  {
    ModelBuilder b(17);
    b.FloatInit("x", {3}, {-7.f, 0.5f, 9.f});
    b.Output("y", kF32, {3});
    b.Node("Clip", {"x"}, {"y"}, "clip");
    EXPECT_EQ(RunY(b), (std::vector<float>{-7.f, 0.5f, 9.f}));
  }
  {
    // Nearest, half_pixel, round_prefer_floor, scale 2: source x = (j + 0.5) / 2 - 0.5, i.e.
    // -0.25, 0.25, 0.75, 1.25 -> pixels 0, 0, 1, 1.
    ModelBuilder b(17);
    b.FloatInit("x", {1, 1, 1, 2}, {1.f, 2.f});
    b.FloatInit("scales", {4}, {1.f, 1.f, 1.f, 2.f});
    b.Output("y", kF32, {1, 1, 1, 4});
    b.Node("Resize", {"x", "", "scales"}, {"y"}, "resize");
    EXPECT_EQ(RunY(b), (std::vector<float>{1.f, 1.f, 2.f, 2.f}));
  }
}

TEST(loader, ArityVariadicInputsLoad) {
  {
    ModelBuilder b(17);
    std::vector<std::string> ins;
    for (int i = 0; i < 5; ++i) {
      ins.push_back("c" + std::to_string(i));
      b.FloatInit(ins.back(), {1}, {float(i + 1)});
    }
    b.Output("y", kF32, {5});
    onnx::NodeProto& n = b.Node("Concat", ins, {"y"}, "cat");
    testing::SetIntAttr(n, "axis", 0);
    EXPECT_EQ(RunY(b), (std::vector<float>{1.f, 2.f, 3.f, 4.f, 5.f}));
  }
  {
    ModelBuilder b(17);
    b.FloatInit("a", {2}, {1.5f, -2.f});
    b.Output("y", kF32, {2});
    b.Node("Sum", {"a"}, {"y"}, "sum");
    EXPECT_EQ(RunY(b), (std::vector<float>{1.5f, -2.f}));
  }
  {
    ModelBuilder b(17);
    b.Output("y", kF32, {1});
    b.Node("Sum", {}, {"y"}, "sum");
    ExpectRefused(b, {"Sum node 'sum' (#0)", "has 0 inputs", "Sum-13 takes at least 1 input"});
  }
}

// An attribute its schema version does not define (here SpaceToDepth's 'mode', which opset 28
// added) is refused at load time, naming node, attribute and value, instead of being ignored.
TEST(loader, AttributeTheSchemaDoesNotDefineIsRefused) {
  ModelBuilder b(13);
  b.Input("x", kF32, {1, 1, 2, 2});
  b.Output("y", kF32, {1, 4, 1, 1});
  auto& n = b.Node("SpaceToDepth", {"x"}, {"y"}, "s2d");
  testing::SetIntAttr(n, "blocksize", 2);
  auto* mode = n.add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto::STRING);
  mode->set_s("CRD");
  ExpectRefused(b, {"SpaceToDepth node 's2d' (#0)", "attribute 'mode' = 'CRD'",
                    "is not defined by SpaceToDepth-13", "(its attributes: blocksize)"});
}

// A value of a defined attribute that onyx does not implement fails when the session is made
// (shape inference), naming node, attribute and value.
TEST(loader, AttributeValueNotImplementedFailsAtLoad) {
  ModelBuilder b(28);
  b.Input("x", kF32, {1, 1, 2, 2});
  b.Output("y", kF32, {1, 4, 1, 1});
  auto& n = b.Node("SpaceToDepth", {"x"}, {"y"}, "s2d");
  testing::SetIntAttr(n, "blocksize", 2);
  auto* mode = n.add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto::STRING);
  mode->set_s("RDC");
  auto s = Session::CreateFromBytes(b.Bytes());
  ASSERT_FALSE(s.ok());
  for (const char* part : {"SpaceToDepth node 's2d'", "attribute 'mode' is 'RDC'"})
    EXPECT_NE(s.status().message().find(part), std::string::npos) << s.status().message();
}

// Attributes or inputs that ONNX added inside an opset range onyx registers for one kernel
// (1..latest, say) are ones that kernel was written without: SpaceToDepth-28's 'mode' and
// Attention-25's window sizes were accepted and ignored that way. Every registered range is
// walked against the schemas of the pinned onnx; a change inside one fails here until the
// range is split where the change happened (and the kernel implements it) or the change is
// listed below as handled by the kernel.
TEST(registry, NoSchemaChangeHidesInsideARegisteredRange) {
  // "Op-version": attributes added there that the range's kernel is known to implement.
  const std::vector<std::string> handled = {
      "AveragePool-7",   // count_include_pad: conv_pool.cc reads it for every opset
      "AveragePool-19",  // dilations: read for every opset >= 10
      "MaxPool-8",       // storage_order: read for the indices output
      "Constant-11",     // sparse_value: densified by the loader
      "Constant-12",     // value_float(s) / value_int(s) / value_string(s): ConstantKernel
      "Range-27",        // stash_type: the reference computes in double for every float type
  };
  std::vector<std::string> hidden;
  for (const kernels::OpDef* def : kernels::OpRegistry::Global().All()) {
    for (const kernels::SchemaChange& c :
         kernels::SchemaChangesWithin(def->domain, def->op_type, def->since, def->until)) {
      const std::string key = def->op_type + "-" + std::to_string(c.since_version);
      if (std::find(handled.begin(), handled.end(), key) != handled.end()) continue;
      hidden.push_back(key + " inside " + std::to_string(def->since) + ".." +
                       std::to_string(def->until) + ": adds [" + c.added_attributes +
                       "], inputs [" + c.inputs + "]");
    }
  }
  EXPECT_TRUE(hidden.empty()) << ::testing::PrintToString(hidden);
}

}  // namespace
}  // namespace onyx
