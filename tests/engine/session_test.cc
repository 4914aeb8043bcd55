// Session tests: feed validation before any kernel runs, concurrent run(), the plan cache for
// new input shapes, optimization levels, and the per-value observer behind --dump-dir.
#include "onyx/session.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "kernels/op_registry.h"
#include "tests/engine/model_builder.h"

namespace onyx {
namespace {

using testing::ModelBuilder;

// y = Relu(x + b), x: float[N,3], b: [3] initializer. Hand-computable.
std::string AddReluModel() {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {-1, 3});
  b.Output("y", onnx::TensorProto::FLOAT, {-1, 3});
  b.FloatInit("b", {3}, {1.f, -1.f, 0.5f});
  b.Node("Add", {"x", "b"}, {"s"}, "add");
  b.Node("Relu", {"s"}, {"y"}, "relu");
  return b.Bytes();
}

Tensor Ramp(int64_t rows) {
  Tensor x = Tensor::Allocate(DType::kFloat, {rows, 3});
  for (int64_t i = 0; i < rows * 3; ++i) x.data<float>()[i] = static_cast<float>(i) - 2.f;
  return x;
}

float Expected(int64_t i) {
  const float bias[3] = {1.f, -1.f, 0.5f};
  return std::max(0.f, static_cast<float>(i) - 2.f + bias[i % 3]);
}

TEST(session, InputsAndOutputsDescribeTheModel) {
  Session s = Session::FromBytes(AddReluModel());
  ASSERT_EQ(s.inputs().size(), 1u);
  EXPECT_EQ(s.inputs()[0].name, "x");
  EXPECT_EQ(s.inputs()[0].type.ToString(), "float[N,3]");
  ASSERT_EQ(s.outputs().size(), 1u);
  EXPECT_EQ(s.outputs()[0].name, "y");
}

TEST(session, RunsWithNewShapesThroughThePlanCache) {
  Session s = Session::FromBytes(AddReluModel());
  for (int64_t rows : {1, 4, 2, 4}) {
    auto out = s.Run({{"x", Value(Ramp(rows))}});
    ASSERT_EQ(out[0].second.tensor().shape(), (Shape{rows, 3}));
    for (int64_t i = 0; i < rows * 3; ++i)
      EXPECT_EQ(out[0].second.tensor().data<float>()[i], Expected(i)) << rows << " " << i;
  }
}

// A kernel_shape that differs from W's spatial dims is refused when the session is made, on the
// fast kernels too (they take the size from W and used to ignore the attribute).
TEST(session, ConvKernelShapeMustMatchTheWeightsOnEveryKernel) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {1, 3, 5, 5});
  b.Output("y", onnx::TensorProto::FLOAT, {1, 4, 3, 3});
  b.FloatInit("w", {4, 3, 3, 3}, std::vector<float>(4 * 3 * 3 * 3, 0.5f));
  testing::SetIntsAttr(b.Node("Conv", {"x", "w"}, {"y"}, "conv"), "kernel_shape", {2, 2});
  for (bool reference : {false, true}) {
    SessionOptions options;
    options.reference_kernels = reference;
    try {
      Session::FromBytes(b.Bytes(), options);
      ADD_FAILURE() << "a wrong kernel_shape was accepted, reference_kernels=" << reference;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
      EXPECT_NE(std::string(e.what()).find(
                    "Conv node 'conv' (#0): attribute 'kernel_shape' does not match input 1 'w'"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(session, WrongFeedsFailBeforeAnyKernelRuns) {
  Session s = Session::FromBytes(AddReluModel());
  auto expect_error = [&](const NamedValues& feeds, const std::string& needle) {
    NamedValues out;
    Status st = s.Run(feeds, {}, &out);
    ASSERT_FALSE(st.ok()) << needle;
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << st.message();
    EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
  };
  expect_error({}, "missing input 'x'");
  expect_error({{"x", Value(Ramp(1))}, {"z", Value(Ramp(1))}}, "unknown input 'z'");
  expect_error({{"x", Value(Tensor::Allocate(DType::kInt64, {1, 3}))}},
               "element type float, got int64");
  expect_error({{"x", Value(Tensor::Allocate(DType::kFloat, {3}))}}, "expects rank 2");
  expect_error({{"x", Value(Tensor::Allocate(DType::kFloat, {2, 4}))}}, "expects dim 1 = 3");
  EXPECT_THROW(s.Run({}), Error);
}

TEST(session, RunIsSafeFromSeveralThreads) {
  Session s = Session::FromBytes(AddReluModel(), SessionOptions{2, OptimizationLevel::kAll});
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int iter = 0; iter < 50; ++iter) {
        const int64_t rows = 1 + (iter + t) % 5;
        auto out = s.Run({{"x", Value(Ramp(rows))}});
        for (int64_t i = 0; i < rows * 3; ++i)
          if (out[0].second.tensor().data<float>()[i] != Expected(i)) ++failures[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

// Conv (3x3, 32 channels) + Relu + MatMul: the oneDNN kernels with their weights packed once
// and per-thread scratchpads, run from four threads at once with different inputs. The oracle is
// a session on the reference kernels.
std::string ConvMatMulModel() {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {1, 32, 24, 24});
  b.Output("y", onnx::TensorProto::FLOAT, {1, 32, 24, 16});
  std::vector<float> w(32 * 32 * 9), m(24 * 16);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 37) % 17) / 17.f - 0.5f;
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<float>((i * 11) % 13) / 13.f - 0.5f;
  b.FloatInit("w", {32, 32, 3, 3}, w);
  b.FloatInit("m", {24, 16}, m);
  auto& conv = b.Node("Conv", {"x", "w"}, {"c"}, "conv");
  testing::SetIntsAttr(conv, "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c"}, {"r"}, "relu");
  b.Node("MatMul", {"r", "m"}, {"y"}, "matmul");
  return b.Bytes();
}

TEST(session, FastKernelsAreSafeFromSeveralThreads) {
  SessionOptions fast{2, OptimizationLevel::kAll};
  SessionOptions reference = fast;
  reference.reference_kernels = true;
  Session s = Session::FromBytes(ConvMatMulModel(), fast);
  Session ref = Session::FromBytes(ConvMatMulModel(), reference);
  auto input = [](int seed) {
    Tensor x = Tensor::Allocate(DType::kFloat, {1, 32, 24, 24});
    for (int64_t i = 0; i < x.numel(); ++i)
      x.data<float>()[i] = static_cast<float>((i * (seed + 3)) % 29) / 29.f - 0.4f;
    return x;
  };
  std::vector<Tensor> expected;
  for (int seed = 0; seed < 4; ++seed)
    expected.push_back(ref.Run({{"x", Value(input(seed))}})[0].second.tensor());
  std::vector<std::thread> threads;
  std::vector<double> worst(4, 0.0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int iter = 0; iter < 20; ++iter) {
        const int seed = (t + iter) % 4;
        auto out = s.Run({{"x", Value(input(seed))}});
        const float* got = out[0].second.tensor().data<float>();
        const float* want = expected[seed].data<float>();
        for (int64_t i = 0; i < expected[seed].numel(); ++i)
          worst[t] = std::max(worst[t], static_cast<double>(std::abs(got[i] - want[i])));
      }
    });
  }
  for (auto& th : threads) th.join();
  for (double w : worst) EXPECT_LT(w, 1e-3);
}

// A model planned once (static inputs) keeps packed weights only in its kernels; a weight that
// another op also reads keeps its values; dynamic inputs keep everything. Results stay those of
// the reference kernels.
TEST(session, PackedWeightsAreReleasedOnlyWhenPlannedOnce) {
  SessionOptions fast{1, OptimizationLevel::kAll};
  SessionOptions reference = fast;
  reference.reference_kernels = true;
  Tensor x = Tensor::Allocate(DType::kFloat, {1, 32, 24, 24});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = static_cast<float>((i * 7) % 31) / 31.f - 0.5f;
  auto check = [&](const std::string& model, size_t released) {
    Session s = Session::FromBytes(model, fast);
    EXPECT_EQ(s.released_weight_bytes(), released);
    const Tensor want =
        Session::FromBytes(model, reference).Run({{"x", Value(x)}})[0].second.tensor();
    for (int run = 0; run < 2; ++run) {
      const Tensor got = s.Run({{"x", Value(x)}})[0].second.tensor();
      ASSERT_EQ(got.shape(), want.shape());
      for (int64_t i = 0; i < got.numel(); ++i)
        ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-3) << i;
    }
  };
  // Only oneDNN's and XNNPACK's kernels pack weights (x86's convolutions on Conv, XNNPACK's on
  // NhwcConv): without them nothing may be released.
  auto packs = [](const std::string& domain, const std::string& op) {
    const kernels::OpDef* def =
        kernels::OpRegistry::Global().Find(domain, op, domain.empty() ? 11 : 1);
    return def &&
           std::any_of(def->impls.begin(), def->impls.end(), [](const kernels::KernelImpl& i) {
             return i.name.find("_onednn") != std::string::npos ||
                    i.name.find("_xnnpack") != std::string::npos;
           });
  };
  if (!packs("", "Conv") && !packs("com.onyx", "NhwcConv")) {
    EXPECT_EQ(Session::FromBytes(ConvMatMulModel(), fast).released_weight_bytes(), 0u);
    GTEST_SKIP() << "no kernel packs weights on this machine";
  }
  check(ConvMatMulModel(), (32 * 32 * 9 + 24 * 16) * sizeof(float));

  onnx::ModelProto shared;
  ASSERT_TRUE(shared.ParseFromString(ConvMatMulModel()));
  // m is also added to the output: only w can go.
  shared.mutable_graph()->mutable_node(2)->set_output(0, "mm");
  auto* add = shared.mutable_graph()->add_node();
  add->set_op_type("Add");
  add->add_input("mm");
  add->add_input("m");
  add->add_output("y");
  check(shared.SerializeAsString(), 32 * 32 * 9 * sizeof(float));

  onnx::ModelProto dynamic;
  ASSERT_TRUE(dynamic.ParseFromString(ConvMatMulModel()));
  auto* dim = dynamic.mutable_graph()
                  ->mutable_input(0)
                  ->mutable_type()
                  ->mutable_tensor_type()
                  ->mutable_shape()
                  ->mutable_dim(0);
  dim->set_dim_param("batch");
  check(dynamic.SerializeAsString(), 0);
}

TEST(session, ObserverSeesEveryIntermediate) {
  Session s = Session::FromBytes(AddReluModel());
  std::vector<std::string> seen;
  RunOptions ro;
  ro.observer = [&](const std::string& name, const Value& v) {
    seen.push_back(name);
    if (name == "s") {
      EXPECT_EQ(v.tensor().data<float>()[0], -1.f);  // -2 + 1
    }
  };
  s.Run({{"x", Value(Ramp(1))}}, ro);
  EXPECT_EQ(seen, (std::vector<std::string>{"s", "y"}));
}

TEST(session, OptimizationLevelsGiveTheSameResults) {
  // Shape → ConstantOfShape-free path: y = Reshape(x, Shape(x)) folds the shape at basic/all.
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2, 3});
  b.Output("y", onnx::TensorProto::FLOAT, {2, 3});
  b.Node("Shape", {"x"}, {"shape"}, "shape");
  b.Node("Reshape", {"x", "shape"}, {"r"}, "reshape");
  b.Node("Relu", {"r"}, {"y"}, "relu");
  for (auto level :
       {OptimizationLevel::kNone, OptimizationLevel::kBasic, OptimizationLevel::kAll}) {
    Session s = Session::FromBytes(b.Bytes(), SessionOptions{1, level});
    auto out = s.Run({{"x", Value(Ramp(2))}});
    for (int64_t i = 0; i < 6; ++i)
      EXPECT_EQ(out[0].second.tensor().data<float>()[i],
                std::max(0.f, static_cast<float>(i) - 2.f));
  }
}

}  // namespace
}  // namespace onyx
