// Concurrent runs on one session (DESIGN contract 7, issue 19): each fast kernel family runs from
// several threads at once on one Session, every thread with its own inputs, and every output must
// be bit-identical to a single-threaded run of the same input. The sessions use one intra-op
// thread, so OpenMP starts no team (libgomp's barriers are invisible to ThreadSanitizer).
//
// A session's TBB arena admits max(2, intra-op threads) runs at once and hands further callers'
// runs to the threads inside it, through synchronisation ThreadSanitizer cannot see either. So
// scripts/test.sh runs this test under TSan (build-tsan) with ONYX_TEST_INTRA_OP_THREADS=8 and
// OMP_THREAD_LIMIT=1: every run gets a slot of its own and every OpenMP region one thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "onyx/session.h"
#include "tests/engine/model_builder.h"

namespace onyx {
namespace {

using testing::ModelBuilder;
using testing::SetIntAttr;
using testing::SetIntsAttr;

constexpr int kThreads = 8;
constexpr int kRunsPerThread = 6;
constexpr auto kF = onnx::TensorProto::FLOAT;

// Deterministic values in [-1, 1) from (seed, index): every thread's inputs differ.
std::vector<float> Values(size_t n, uint64_t seed) {
  std::vector<float> v(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& x : v) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    x = static_cast<float>(s >> 40) / static_cast<float>(1 << 23) - 1.f;
  }
  return v;
}

onnx::TensorProto& Weights(ModelBuilder& b, const std::string& name,
                           const std::vector<int64_t>& dims, uint64_t seed, float scale = 0.3f) {
  size_t n = 1;
  for (int64_t d : dims) n *= static_cast<size_t>(d);
  std::vector<float> v = Values(n, seed);
  for (float& x : v) x *= scale;
  return b.FloatInit(name, dims, v);
}

void SetFloatAttr(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

struct Case {
  std::string name;
  std::string model;
  std::map<std::string, Shape> inputs;  // float inputs and their shapes
  std::vector<std::string> impls;       // kernel impls the case is meant to exercise
  OptimizationLevel optimization = OptimizationLevel::kAll;
  // Steps of different threads that must overlap in time before the test stops adding rounds.
  int64_t wanted_overlaps = 20;
};

// Conv + Relu, LRN, MaxPool, depthwise Conv, ConvTranspose, AveragePool, GlobalAveragePool.
Case CnnCase() {
  ModelBuilder b;
  b.Input("x", kF, {1, 8, 14, 14});
  b.Output("a", kF, {1, 8, 14, 14});
  b.Output("g", kF, {1, 8, 1, 1});
  Weights(b, "w1", {16, 8, 3, 3}, 1);
  Weights(b, "b1", {16}, 2);
  Weights(b, "wd", {16, 1, 3, 3}, 3);
  Weights(b, "wt", {16, 8, 2, 2}, 4);
  SetIntsAttr(b.Node("Conv", {"x", "w1", "b1"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c"}, {"r"}, "relu");
  SetIntAttr(b.Node("LRN", {"r"}, {"l"}, "lrn"), "size", 3);
  auto& mp = b.Node("MaxPool", {"l"}, {"p"}, "maxpool");
  SetIntsAttr(mp, "kernel_shape", {2, 2});
  SetIntsAttr(mp, "strides", {2, 2});
  auto& dw = b.Node("Conv", {"p", "wd"}, {"d"}, "depthwise");
  SetIntAttr(dw, "group", 16);
  SetIntsAttr(dw, "pads", {1, 1, 1, 1});
  SetIntsAttr(b.Node("ConvTranspose", {"d", "wt"}, {"u"}, "deconv"), "strides", {2, 2});
  auto& ap = b.Node("AveragePool", {"u"}, {"a"}, "avgpool");
  SetIntsAttr(ap, "kernel_shape", {3, 3});
  SetIntsAttr(ap, "pads", {1, 1, 1, 1});
  b.Node("GlobalAveragePool", {"a"}, {"g"}, "gap");
  return {"cnn",
          b.Bytes(),
          {{"x", {1, 8, 14, 14}}},
          // The layout pass puts the convolutions, LRN and MaxPool on channels-last.
          {"NhwcConv_f32_onednn", "NhwcLRN_f32_onednn", "NhwcMaxPool_f32_onednn",
           "ConvTranspose_f32_onednn", "AveragePool_f32_onednn", "GlobalAveragePool_f32_onednn",
           "Transpose_any_tiled"}};
}

// 3x3 convolutions with 32 channels on a 16x16 map: oneDNN's Winograd (AVX-512) on NCHW with
// optimization "basic" (no layout pass), onyx's own F(2x2, 3x3) on channels-last with "all".
Case WinogradCase(OptimizationLevel level) {
  ModelBuilder b;
  b.Input("x", kF, {1, 32, 16, 16});
  b.Output("y", kF, {1, 64, 16, 16});
  Weights(b, "w", {64, 32, 3, 3}, 5, 0.1f);
  Weights(b, "bias", {64}, 6);
  SetIntsAttr(b.Node("Conv", {"x", "w", "bias"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c"}, {"y"}, "relu");
  Case c{level == OptimizationLevel::kAll ? "winograd_f2" : "winograd_onednn",
         b.Bytes(),
         {{"x", {1, 32, 16, 16}}},
         {level == OptimizationLevel::kAll ? "NhwcConv_f32_hwy/winograd"
                                           : "Conv_f32_onednn/winograd"}};
  c.optimization = level;
  return c;
}

// Gemm + Relu (post-op), MatMul + bias + residual (binary post-ops).
Case MatMulCase() {
  ModelBuilder b;
  b.Input("x", kF, {2, 8, 32});
  b.Output("y", kF, {2, 8, 24});
  b.Output("z", kF, {16, 24});
  Weights(b, "w1", {32, 24}, 7);
  Weights(b, "b1", {24}, 8);
  Weights(b, "w2", {24, 24}, 9);
  Weights(b, "c", {24}, 10);
  b.Node("MatMul", {"x", "w1"}, {"m"}, "matmul");
  b.Node("Add", {"m", "b1"}, {"mb"}, "bias");
  b.Node("Relu", {"mb"}, {"h"}, "relu");
  b.Node("MatMul", {"h", "w2"}, {"m2"}, "matmul2");
  b.Node("Add", {"m2", "h"}, {"y"}, "residual");
  Weights(b, "shape", {2}, 0);
  auto& shape = *b.graph().mutable_initializer(b.graph().initializer_size() - 1);
  shape.set_data_type(onnx::TensorProto::INT64);
  const int64_t dims[2] = {16, 24};
  shape.set_raw_data(std::string(reinterpret_cast<const char*>(dims), sizeof(dims)));
  b.Node("Reshape", {"y", "shape"}, {"y2"}, "flatten");
  auto& gemm = b.Node("Gemm", {"y2", "w2", "c"}, {"gm"}, "gemm");
  SetFloatAttr(gemm, "alpha", 0.5f);
  b.Node("Sigmoid", {"gm"}, {"z"}, "sigmoid");
  return {"matmul", b.Bytes(), {{"x", {2, 8, 32}}}, {"FusedMatMul_f32_onednn"}};
}

// ai.onnx Attention (the target of the attention fusion) with an additive mask.
Case AttentionCase() {
  ModelBuilder b(23, 10);
  b.Input("q", kF, {2, 16, 64});
  b.Input("k", kF, {2, 24, 64});
  b.Input("v", kF, {2, 24, 64});
  b.Input("mask", kF, {16, 24});
  b.Output("y", kF, {2, 16, 64});
  auto& n = b.Node("Attention", {"q", "k", "v", "mask"}, {"y"}, "attention");
  SetIntAttr(n, "q_num_heads", 4);
  SetIntAttr(n, "kv_num_heads", 4);
  Case c{"attention",
         b.Bytes(),
         {{"q", {2, 16, 64}}, {"k", {2, 24, 64}}, {"v", {2, 24, 64}}, {"mask", {16, 24}}},
         {"Attention_f32_onednn"}};
  // One step per run: more rounds, so that the race of issue 19 (P x V sharing oneDNN's
  // scratchpad) fails this test reliably.
  c.wanted_overlaps = 300;
  return c;
}

// Highway kernels: LayerNormalization, binary and unary elementwise, Softmax, Transpose,
// reductions.
Case HighwayCase() {
  ModelBuilder b;
  b.Input("x", kF, {4, 16, 40});
  b.Output("sm", kF, {4, 16, 40});
  b.Output("r", kF, {4, 40, 1});
  Weights(b, "scale", {40}, 11);
  Weights(b, "shift", {40}, 12);
  Weights(b, "g", {16, 40}, 13);
  SetIntAttr(b.Node("LayerNormalization", {"x", "scale", "shift"}, {"ln"}, "ln"), "axis", -1);
  b.Node("Mul", {"ln", "g"}, {"m"}, "mul");
  b.Node("Tanh", {"m"}, {"s"}, "tanh");
  b.Node("Add", {"s", "x"}, {"a"}, "add");
  SetIntAttr(b.Node("Softmax", {"a"}, {"sm"}, "softmax"), "axis", -1);
  SetIntsAttr(b.Node("Transpose", {"a"}, {"t"}, "transpose"), "perm", {0, 2, 1});
  SetIntsAttr(b.Node("ReduceMean", {"t"}, {"r"}, "reduce"), "axes", {2});
  return {"highway",
          b.Bytes(),
          {{"x", {4, 16, 40}}},
          {"LayerNormalization_f32_hwy", "Softmax_f32_hwy", "Transpose_any_tiled",
           "ReduceMean_f32_hwy"}};
}

NamedValues Feeds(const Case& c, uint64_t seed) {
  NamedValues feeds;
  uint64_t k = 0;
  for (const auto& [name, shape] : c.inputs) {
    Tensor t = Tensor::Allocate(DType::kFloat, shape);
    const std::vector<float> v = Values(static_cast<size_t>(t.numel()), seed * 16 + k++);
    std::memcpy(t.raw_data(), v.data(), v.size() * sizeof(float));
    feeds.push_back({name, Value(t)});
  }
  return feeds;
}

// Elements of `got` whose bits differ from `want` (every output, in order).
int64_t BitDifferences(const NamedValues& want, const NamedValues& got) {
  if (want.size() != got.size()) return -1;
  int64_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const Tensor& w = want[i].second.tensor();
    const Tensor& g = got[i].second.tensor();
    if (w.shape() != g.shape() || w.dtype() != g.dtype()) return -1;
    const auto* wb = static_cast<const uint32_t*>(w.raw_data());
    const auto* gb = static_cast<const uint32_t*>(g.raw_data());
    for (int64_t j = 0; j < w.numel(); ++j) bad += wb[j] != gb[j];
  }
  return bad;
}

// The sessions' intra-op threads: ONYX_TEST_INTRA_OP_THREADS, default 1.
int IntraOpThreads() {
  const char* env = std::getenv("ONYX_TEST_INTRA_OP_THREADS");
  return env ? std::max(1, std::atoi(env)) : 1;
}

Case CaseNamed(const std::string& name) {
  if (name == "cnn") return CnnCase();
  if (name == "winograd_onednn") return WinogradCase(OptimizationLevel::kBasic);
  if (name == "winograd_f2") return WinogradCase(OptimizationLevel::kAll);
  if (name == "matmul") return MatMulCase();
  if (name == "attention") return AttentionCase();
  return HighwayCase();
}

class ConcurrentRun : public ::testing::TestWithParam<std::string> {};

TEST_P(ConcurrentRun, BitIdenticalToSingleThreaded) {
  const Case c = CaseNamed(GetParam());
  SessionOptions options;
  options.intra_op_threads = IntraOpThreads();
  options.optimization = c.optimization;
  Session s = Session::FromBytes(c.model, options);

  // The oracle: each thread's inputs run alone, one after another. This run also records which
  // kernels the plan picked, so a planner change that drops a family fails here, not silently.
  std::set<std::string> impls;
  RunOptions observe;
  observe.step_observer = [&](const StepEvent& e) { impls.insert(std::string(e.impl)); };
  std::vector<NamedValues> expected(kThreads * kRunsPerThread);
  for (int i = 0; i < kThreads * kRunsPerThread; ++i)
    expected[i] = s.Run(Feeds(c, i), i == 0 ? observe : RunOptions{});
  std::string used;
  for (const std::string& impl : impls) used += " " + impl;
  for (const std::string& want : c.impls) {
    // By prefix: oneDNN picks Winograd ("Conv_f32_onednn/winograd") only with AVX-512.
    const bool found = std::any_of(impls.begin(), impls.end(), [&](const std::string& impl) {
      return impl.compare(0, want.size(), want) == 0;
    });
    EXPECT_TRUE(found) << c.name << ": the plan does not use " << want << "; it uses" << used;
  }

  // Rounds of kThreads x kRunsPerThread until steps of different threads have overlapped in time
  // often enough: the session's task arena admits only a few runs at once, and on a loaded
  // machine a round of short runs may happen to go one at a time.
  constexpr int kMaxRounds = 100;
  int64_t overlaps = 0, runs = 0;
  std::atomic<int64_t> mismatched_runs{0}, mismatched_elements{0}, errors{0};
  for (int round = 0; round < kMaxRounds && overlaps < c.wanted_overlaps; ++round) {
    std::vector<std::pair<int64_t, int64_t>> spans[kThreads];  // [start, end) of each step
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        RunOptions o;
        o.step_observer = [&, t](const StepEvent& e) {
          const int64_t start = e.start.time_since_epoch().count();
          spans[t].push_back({start, start + e.duration.count()});
        };
        ready.fetch_add(1);
        while (ready.load() < kThreads) std::this_thread::yield();  // start together
        for (int r = 0; r < kRunsPerThread; ++r) {
          const int i = t * kRunsPerThread + (r + round) % kRunsPerThread;
          NamedValues out;
          if (!s.Run(Feeds(c, i), o, &out).ok()) {
            errors.fetch_add(1);
            continue;
          }
          const int64_t bad = BitDifferences(expected[i], out);
          if (bad != 0) {
            mismatched_runs.fetch_add(1);
            mismatched_elements.fetch_add(bad < 0 ? 0 : bad);
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    runs += kThreads * kRunsPerThread;
    for (int a = 0; a < kThreads; ++a)
      for (int b = a + 1; b < kThreads; ++b)
        for (const auto& x : spans[a])
          for (const auto& y : spans[b]) overlaps += x.first < y.second && y.first < x.second;
  }
  std::printf("[ %s ] %lld runs on %d threads: %lld overlapping step pairs, %lld runs differ;%s\n",
              c.name.c_str(), static_cast<long long>(runs), kThreads,
              static_cast<long long>(overlaps), static_cast<long long>(mismatched_runs.load()),
              used.c_str());
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mismatched_runs.load(), 0) << mismatched_elements.load() << " elements differ";
  EXPECT_GT(overlaps, 0) << "no two runs overlapped: the test exercised nothing concurrent";
}

INSTANTIATE_TEST_SUITE_P(Families, ConcurrentRun,
                         ::testing::Values("cnn", "winograd_onednn", "winograd_f2", "matmul",
                                           "attention", "highway"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace onyx
