// Shape specialisations (DESIGN contract 3, issue 14): one plan per input-shape signature in a
// bounded least-recently-used cache, weights packed once for all of them, a new shape built
// without stopping runs on cached shapes, concurrent first calls at one shape building it once,
// and symbolic dims as ONNX means them ("?", "" and negative values are each their own unknown).
// Expected values are computed here by hand-written loops, never by onyx.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "onyx/session.h"
#include "tests/engine/model_builder.h"

namespace onyx {
namespace {

using testing::ModelBuilder;
constexpr auto kF = onnx::TensorProto::FLOAT;
constexpr int kIn = 16, kOut = 24;

// y = relu(x @ W) for x of shape [N, 16]: MatMul with a constant W takes the packed-weight path.
ModelBuilder DenseModel(std::vector<float>* w) {
  ModelBuilder b;
  b.Input("x", kF, {-1, kIn}).Output("y", kF, {-1, kOut});
  w->resize(kIn * kOut);
  for (size_t i = 0; i < w->size(); ++i) (*w)[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
  b.FloatInit("W", {kIn, kOut}, *w);
  b.Node("MatMul", {"x", "W"}, {"h"});
  b.Node("Relu", {"h"}, {"y"});
  return b;
}

std::vector<float> Input(int64_t n, float seed) {
  std::vector<float> x(static_cast<size_t>(n * kIn));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 13) % 11) * 0.1f - seed;
  return x;
}

// Runs the dense model at batch n and checks every output element against a plain loop.
void RunAndCheck(const Session& s, const std::vector<float>& w, int64_t n, float seed) {
  std::vector<float> x = Input(n, seed);
  NamedValues out = s.Run({{"x", Tensor::Borrow(DType::kFloat, {n, kIn}, x.data())}});
  const Tensor& y = out[0].second.tensor();
  ASSERT_EQ(y.shape(), (Shape{n, kOut}));
  for (int64_t r = 0; r < n; ++r)
    for (int c = 0; c < kOut; ++c) {
      double acc = 0;
      for (int k = 0; k < kIn; ++k) acc += double(x[r * kIn + k]) * double(w[k * kOut + c]);
      ASSERT_NEAR(y.data<float>()[r * kOut + c], std::max(acc, 0.0), 1e-4)
          << "batch " << n << " row " << r << " col " << c;
    }
}

// By default every new shape gets a plan of its own at once (the cache is what these tests
// check); ShapeGenericPlanRunsNewShapesFirst sets its own policy.
//
// Intra-op threads: ONYX_TEST_INTRA_OP_THREADS, default 1 (scripts/test.sh runs the suite under
// ThreadSanitizer with 8, so that every concurrent run gets a slot of the session's TBB arena).
Session MakeSession(const ModelBuilder& b, Limits limits = {}) {
  SessionOptions o;
  const char* threads = std::getenv("ONYX_TEST_INTRA_OP_THREADS");
  o.intra_op_threads = threads ? std::max(1, std::atoi(threads)) : 1;
  if (limits.specialize_after_runs == 0) limits.specialize_after_runs = 1;
  o.limits = limits;
  return Session::FromBytes(b.Bytes(), o);
}

// A gate the build hook waits on, with a bound so that a broken engine fails instead of hanging.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, open = false, left = false;
  void Enter() {
    std::unique_lock<std::mutex> lock(mu);
    entered = true;
    cv.notify_all();
    cv.wait_for(lock, std::chrono::seconds(60), [&] { return open; });
    left = true;
  }
  bool WaitEntered() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(60), [&] { return entered; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
};

TEST(ShapePlans, NewShapeDoesNotStopRunsOnCachedShapes) {
  std::vector<float> w;
  Session s = MakeSession(DenseModel(&w));
  RunAndCheck(s, w, 2, 0.f);  // batch 2 is cached from here on
  Gate gate;
  testing::SetBeforePlanBuild(s, [&](const std::string& sig) {
    if (sig.find("[3,16]") != std::string::npos) gate.Enter();
  });
  std::thread builder([&] { RunAndCheck(s, w, 3, 0.5f); });
  ASSERT_TRUE(gate.WaitEntered());
  // The batch-3 plan is being built (held open by the hook): cached batch-2 runs go on.
  for (int i = 0; i < 20; ++i) RunAndCheck(s, w, 2, 0.1f * i);
  bool build_went_on;
  {
    std::lock_guard<std::mutex> lock(gate.mu);
    build_went_on = gate.left;
  }
  EXPECT_FALSE(build_went_on) << "cached runs finished only after the new shape's build";
  gate.Open();
  builder.join();
}

TEST(ShapePlans, ConcurrentFirstCallsAtOneShapeBuildItOnce) {
  std::vector<float> w;
  Session s = MakeSession(DenseModel(&w));
  RunAndCheck(s, w, 1, 0.f);
  const ShapePlanStats before = s.shape_plan_stats();
  Gate gate;
  testing::SetBeforePlanBuild(s, [&](const std::string& sig) {
    if (sig.find("[5,16]") != std::string::npos) gate.Enter();
  });
  constexpr int kCallers = 6;
  std::vector<std::thread> callers;
  for (int t = 0; t < kCallers; ++t)
    callers.emplace_back([&, t] { RunAndCheck(s, w, 5, 0.2f * t); });
  ASSERT_TRUE(gate.WaitEntered());
  // Every other caller finds the build in flight (a hit) and waits for it; then let it finish.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (s.shape_plan_stats().hits < before.hits + kCallers - 1 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  gate.Open();
  for (auto& c : callers) c.join();
  const ShapePlanStats after = s.shape_plan_stats();
  EXPECT_EQ(after.builds, before.builds + 1);
  EXPECT_EQ(after.hits, before.hits + kCallers - 1);
}

TEST(ShapePlans, CacheIsBoundedAndWeightsArePackedOnce) {
  std::vector<float> w;
  Limits limits;
  limits.max_shape_plans = 4;
  Session s = MakeSession(DenseModel(&w), limits);
  RunAndCheck(s, w, 1, 0.f);
  const ShapePlanStats one = s.shape_plan_stats();
  for (int64_t n = 2; n <= 12; ++n) RunAndCheck(s, w, n, 0.3f);
  const ShapePlanStats all = s.shape_plan_stats();
  EXPECT_EQ(all.builds, 12u);
  EXPECT_EQ(all.evictions, 8u);  // 12 plans built, 4 kept
  EXPECT_EQ(all.plans, 5u);      // and the plan for the declared shapes, kept for the session
  // One packed copy of W (oneDNN may lay it out differently for a single row: at most two).
  EXPECT_GT(one.packed_weight_bytes, 0u);
  EXPECT_LE(all.packed_weight_bytes, 2 * one.packed_weight_bytes);
  // An evicted shape is planned again and still right.
  RunAndCheck(s, w, 1, 0.7f);
  EXPECT_EQ(s.shape_plan_stats().builds, 13u);
}

TEST(ShapePlans, ShapeGenericPlanRunsNewShapesFirst) {
  std::vector<float> w;
  Limits limits;
  limits.specialize_after_runs = 3;
  Session s = MakeSession(DenseModel(&w), limits);
  // New shapes run on the plan made for the declared [N, 16] at creation: nothing is built.
  for (int64_t n = 1; n <= 6; ++n) RunAndCheck(s, w, n, 0.1f * n);
  ShapePlanStats st = s.shape_plan_stats();
  EXPECT_EQ(st.builds, 0u);
  EXPECT_EQ(st.generic_runs, 6u);
  // Its third run gives batch 4 a plan of its own, used from then on.
  RunAndCheck(s, w, 4, 0.f);
  EXPECT_EQ(s.shape_plan_stats().builds, 0u);
  RunAndCheck(s, w, 4, 0.5f);
  st = s.shape_plan_stats();
  EXPECT_EQ(st.builds, 1u);
  EXPECT_EQ(st.generic_runs, 7u);
  RunAndCheck(s, w, 4, 0.9f);
  EXPECT_EQ(s.shape_plan_stats().hits, 1u);
}

TEST(ShapePlans, GenericPlanTakesEmptyAndLargeBatches) {
  // Batch 0 and a large batch both must come out right on whichever plan runs them.
  std::vector<float> w;
  Limits limits;
  limits.specialize_after_runs = 100;
  Session s = MakeSession(DenseModel(&w), limits);
  RunAndCheck(s, w, 0, 0.f);
  RunAndCheck(s, w, 300, 0.2f);
}

// Sets input `i`'s dims to these dim_params/dim_values ("" = no name, "#-1" = dim_value -1).
void SetDims(ModelBuilder& b, int i, const std::vector<std::string>& dims) {
  auto* shape = b.graph().mutable_input(i)->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->clear_dim();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (d.rfind("#", 0) == 0)
      dim->set_dim_value(std::stoll(d.substr(1)));
    else if (!d.empty())
      dim->set_dim_param(d);
  }
}

TEST(ShapePlans, QuestionMarkDimsAreEachTheirOwnUnknown) {
  // paddle2onnx's way of writing an image input: [-1, 3, "?", "?"].
  ModelBuilder b;
  b.Input("x", kF, {1, 3, 1, 1}).Output("y", kF, {});
  SetDims(b, 0, {"#-1", "#3", "?", "?"});
  b.Node("Relu", {"x"}, {"y"});
  Session s = MakeSession(b);
  std::vector<float> x(3 * 48 * 192);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 2 ? 1.f : -1.f) * static_cast<float>(i % 5);
  NamedValues out = s.Run({{"x", Tensor::Borrow(DType::kFloat, {1, 3, 48, 192}, x.data())}});
  const Tensor& y = out[0].second.tensor();
  ASSERT_EQ(y.shape(), (Shape{1, 3, 48, 192}));
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y.data<float>()[i], std::max(x[i], 0.f));
}

TEST(ShapePlans, UnnamedDimsInTwoInputsMayDiffer) {
  ModelBuilder b;
  b.Input("a", kF, {1}).Input("b", kF, {1}).Output("ra", kF, {}).Output("rb", kF, {});
  SetDims(b, 0, {"?"});
  SetDims(b, 1, {""});
  b.Node("Relu", {"a"}, {"ra"});
  b.Node("Relu", {"b"}, {"rb"});
  Session s = MakeSession(b);
  std::vector<float> a = {-1, 2, -3}, bv = {4, -5};
  NamedValues out = s.Run({{"a", Tensor::Borrow(DType::kFloat, {3}, a.data())},
                           {"b", Tensor::Borrow(DType::kFloat, {2}, bv.data())}});
  EXPECT_EQ(out[0].second.tensor().shape(), Shape{3});
  EXPECT_EQ(out[1].second.tensor().shape(), Shape{2});
  EXPECT_EQ(out[1].second.tensor().data<float>()[0], 4.f);
}

TEST(ShapePlans, NamedDimSharedByTwoInputsMustAgree) {
  ModelBuilder b;
  b.Input("tokens", kF, {1}).Input("mask", kF, {1}).Output("y", kF, {});
  SetDims(b, 0, {"batch", "seq"});
  SetDims(b, 1, {"batch", "seq"});
  b.Node("Add", {"tokens", "mask"}, {"y"});
  Session s = MakeSession(b);
  std::vector<float> t(6), m(8);
  NamedValues out;
  Status st = s.Run({{"tokens", Tensor::Borrow(DType::kFloat, {2, 3}, t.data())},
                     {"mask", Tensor::Borrow(DType::kFloat, {2, 4}, m.data())}},
                    {}, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("'seq'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("'tokens'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("'mask'"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace onyx
