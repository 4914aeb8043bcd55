// Deterministic mode (SessionOptions::deterministic, docs/determinism.md): every fast kernel
// family, and the cases that used to depend on the thread count or on the runs before (long
// reductions, products of row counts seen for the first time), gives bitwise-identical outputs at
// 1, 2, 3 and 4 threads and on every run; what cannot repeat is refused at session creation.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "kernels/op_registry.h"
#include "onyx/session.h"
#include "tests/engine/kernel_family_cases.h"
#include "tests/engine/model_builder.h"

namespace onyx {
namespace {

using testing::BitDifferences;
using testing::Case;
using testing::Feeds;
using testing::ModelBuilder;
using testing::SetIntAttr;

constexpr auto kF = onnx::TensorProto::FLOAT;

// Weights from a xorshift stream, in [-scale, scale).
onnx::TensorProto& Weights(ModelBuilder& b, const std::string& name,
                           const std::vector<int64_t>& dims, uint64_t seed, float scale = 0.3f) {
  size_t n = 1;
  for (int64_t d : dims) n *= static_cast<size_t>(d);
  std::vector<float> v(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
  for (float& x : v) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    x = scale * (static_cast<float>(s >> 40) / static_cast<float>(1 << 23) - 1.f);
  }
  return b.FloatInit(name, dims, v);
}

// Whole-tensor reductions: one row of 2^18 elements (ReduceMean, no axes) and GlobalAveragePool
// over two channels of 2^16: rows reduced in parts, which once followed the thread count.
Case LongReductionCase() {
  ModelBuilder b;
  b.Input("x", kF, {4, 65536});
  b.Input("p", kF, {1, 2, 256, 256});
  b.Output("m", kF, {});
  b.Output("g", kF, {1, 2, 1, 1});
  b.Output("s", kF, {4});
  SetIntAttr(b.Node("ReduceMean", {"x"}, {"m"}, "mean_all"), "keepdims", 0);
  b.Node("GlobalAveragePool", {"p"}, {"g"}, "gap");
  testing::SetIntsAttr(b.Node("ReduceSumSquare", {"x"}, {"s0"}, "sumsq_rows"), "axes", {1});
  b.Int64Init("shape", {1}, {4});
  b.Node("Reshape", {"s0", "shape"}, {"s"}, "flat");
  return {"long_reduction", b.Bytes(), {{"x", {4, 65536}}, {"p", {1, 2, 256, 256}}}, {}};
}

// LSTM and GRU steps: gate products split between the threads by columns.
Case RecurrentCase() {
  ModelBuilder b;
  const int64_t seq = 6, batch = 2, in = 24, h = 40;
  b.Input("x", kF, {seq, batch, in});
  b.Output("ly", kF, {seq, 1, batch, h});
  b.Output("gy", kF, {seq, 1, batch, h});
  Weights(b, "lw", {1, 4 * h, in}, 1);
  Weights(b, "lr", {1, 4 * h, h}, 2);
  Weights(b, "lb", {1, 8 * h}, 3);
  Weights(b, "gw", {1, 3 * h, in}, 4);
  Weights(b, "gr", {1, 3 * h, h}, 5);
  Weights(b, "gb", {1, 6 * h}, 6);
  SetIntAttr(b.Node("LSTM", {"x", "lw", "lr", "lb"}, {"ly"}, "lstm"), "hidden_size", h);
  SetIntAttr(b.Node("GRU", {"x", "gw", "gr", "gb"}, {"gy"}, "gru"), "hidden_size", h);
  return {"recurrent", b.Bytes(), {{"x", {seq, batch, in}}}, {"LSTM_f32_hwy", "GRU_f32_hwy"}};
}

// Products whose row count or shapes are known only at run time: a constant B times rows first
// seen (once read on column panels at a row count's first run, then on a oneDNN primitive), and
// two computed operands (once a plain product at a shape's first run, a primitive after).
Case DynamicProductCase() {
  ModelBuilder b;
  b.Input("x", kF, {-1, 768});
  b.Input("q", kF, {-1, 32, 64});
  b.Input("k", kF, {-1, 64, 32});
  b.Output("y", kF, {-1, 256});
  b.Output("s", kF, {-1, 32, 32});
  Weights(b, "w", {768, 256}, 9);
  b.Node("MatMul", {"x", "w"}, {"y"}, "rows");
  b.Node("MatMul", {"q", "k"}, {"s"}, "scores");
  return {"dynamic_product",
          b.Bytes(),
          {{"x", {24, 768}}, {"q", {24, 32, 64}}, {"k", {24, 64, 32}}},
          {"MatMul_f32_onednn"}};
}

std::vector<std::string> CaseNames() {
  std::vector<std::string> names = testing::KernelFamilyNames();
  for (const char* extra : {"long_reduction", "recurrent", "dynamic_product"})
    names.push_back(extra);
  return names;
}

Case CaseNamed(const std::string& name) {
  if (name == "long_reduction") return LongReductionCase();
  if (name == "recurrent") return RecurrentCase();
  if (name == "dynamic_product") return DynamicProductCase();
  return testing::KernelFamilyCase(name);
}

class DeterministicMode : public ::testing::TestWithParam<std::string> {};

TEST_P(DeterministicMode, SameBitsAtOneToFourThreadsOnEveryRun) {
  const Case c = CaseNamed(GetParam());
  for (uint64_t seed = 0; seed < 2; ++seed) {
    const NamedValues feeds = Feeds(c, seed);
    NamedValues first;
    for (int threads : {1, 2, 3, 4}) {
      SessionOptions options;
      options.intra_op_threads = threads;
      options.optimization = c.optimization;
      options.adapt_threads = false;  // each session runs at its own count
      options.deterministic = true;
      Session s = Session::FromBytes(c.model, options);
      ASSERT_TRUE(s.deterministic_mode());
      for (int run = 0; run < 3; ++run) {
        NamedValues got;
        ASSERT_TRUE(s.Run(feeds, {}, &got).ok()) << threads << " threads";
        if (first.empty()) first = got;
        EXPECT_EQ(BitDifferences(first, got), 0)
            << c.name << ": " << threads << " threads, run " << run << ", seed " << seed;
      }
    }
  }
}

// A shape's runs once changed kernels twice: on the shape-generic plan, the first run of a row
// count read B on column panels and the next ones ran a oneDNN primitive; from the
// specialize_after_runs-th run the shape had a plan of its own.
TEST(DeterministicMode, EveryRunOfAShapeGivesTheSameBits) {
  // A convolution of unknown batch: on the shape-generic plan it ran on the reference kernel.
  ModelBuilder b;
  b.Input("img", kF, {-1, 8, 10, 10});
  b.Output("c", kF, {-1, 16, 10, 10});
  Weights(b, "cw", {16, 8, 3, 3}, 10);
  testing::SetIntsAttr(b.Node("Conv", {"img", "cw"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
  const Case conv{"symbolic_conv", b.Bytes(), {{"img", {24, 8, 10, 10}}}, {}};
  for (const Case& c : {DynamicProductCase(), conv}) {
    SessionOptions options;
    options.intra_op_threads = 2;
    options.deterministic = true;
    Session s = Session::FromBytes(c.model, options);
    const NamedValues feeds = Feeds(c, 3);
    const NamedValues first = s.Run(feeds);
    for (int run = 1; run < 12; ++run)
      EXPECT_EQ(BitDifferences(first, s.Run(feeds)), 0) << c.name << ", run " << run;
    EXPECT_EQ(s.shape_plan_stats().generic_runs, 0u) << c.name;
  }
}

// Rows that only the run knows, inside a shape's own plan (a Slice to a computed end): the product
// kernel once read B on column panels at a row count's first run and on a oneDNN primitive after.
TEST(DeterministicMode, RowsKnownOnlyAtRunTimeGiveTheSameBitsOnEveryRun) {
  ModelBuilder b;
  b.Input("x", kF, {32, 768});
  b.Input("end", onnx::TensorProto::INT64, {1});
  b.Output("y", kF, {-1, 256});
  Weights(b, "w", {768, 256}, 11);
  b.Int64Init("zero", {1}, {0});
  b.Node("Slice", {"x", "zero", "end", "zero"}, {"rows"}, "first_rows");
  b.Node("MatMul", {"rows", "w"}, {"y"}, "product");
  Case c{"slice", b.Bytes(), {{"x", {32, 768}}}, {}};
  NamedValues feeds = Feeds(c, 5);
  feeds.emplace_back("end", Tensor::Allocate(DType::kInt64, {1}));
  feeds.back().second.tensor().data<int64_t>()[0] = 24;
  SessionOptions options;
  options.intra_op_threads = 2;
  options.deterministic = true;
  Session s = Session::FromBytes(c.model, options);
  const NamedValues first = s.Run(feeds);
  ASSERT_EQ(first[0].second.tensor().shape(), (Shape{24, 256}));
  for (int run = 1; run < 4; ++run) EXPECT_EQ(BitDifferences(first, s.Run(feeds)), 0) << run;
}

INSTANTIATE_TEST_SUITE_P(Families, DeterministicMode, ::testing::ValuesIn(CaseNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// A model of one RandomNormal node, with or without a seed.
std::string RandomModel(bool seeded) {
  ModelBuilder b;
  b.Output("y", kF, {2, 3});
  auto& n = b.Node("RandomNormal", {}, {"y"}, "noise");
  auto* shape = n.add_attribute();
  shape->set_name("shape");
  shape->set_type(onnx::AttributeProto::INTS);
  shape->add_ints(2);
  shape->add_ints(3);
  if (seeded) {
    auto* seed = n.add_attribute();
    seed->set_name("seed");
    seed->set_type(onnx::AttributeProto::FLOAT);
    seed->set_f(5.f);
  }
  return b.Bytes();
}

TEST(DeterministicModeRefuses, ARandomOperatorWithoutSeedNamingTheNode) {
  SessionOptions options;
  options.deterministic = true;
  auto s = Session::CreateFromBytes(RandomModel(false), options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("RandomNormal node 'noise'"), std::string::npos)
      << s.status().message();
  EXPECT_NE(s.status().message().find("without a 'seed' attribute"), std::string::npos);
  // Without the mode the model runs (new values each run).
  EXPECT_TRUE(Session::CreateFromBytes(RandomModel(false), {}).ok());
}

TEST(DeterministicModeRefuses, NothingSeededAndRepeatsItsDraws) {
  SessionOptions options;
  options.deterministic = true;
  Session s = Session::FromBytes(RandomModel(true), options);
  const NamedValues a = s.Run({});
  const NamedValues b = s.Run({});
  EXPECT_EQ(BitDifferences(a, b), 0);
}

TEST(DeterministicModeRefuses, DropoutOnlyWhenItMayTrain) {
  for (bool training_input : {false, true}) {
    ModelBuilder b(13);
    b.Input("x", kF, {4});
    if (training_input) b.Input("t", onnx::TensorProto::BOOL, {});
    b.Output("y", kF, {4});
    std::vector<std::string> in = {"x"};
    if (training_input) in = {"x", "", "t"};
    b.Node("Dropout", in, {"y"}, "drop");
    SessionOptions options;
    options.deterministic = true;
    auto s = Session::CreateFromBytes(b.Bytes(), options);
    EXPECT_EQ(s.ok(), !training_input) << s.status().message();
    if (!s.ok()) {
      EXPECT_NE(s.status().message().find("Dropout node 'drop'"), std::string::npos)
          << s.status().message();
    }
  }
}

TEST(DeterministicModeRefuses, Bf16) {
  SessionOptions options;
  options.deterministic = true;
  options.bf16 = true;
  auto s = Session::CreateFromBytes(testing::KernelFamilyCase("matmul").model, options);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("cannot be combined with bf16"), std::string::npos)
      << s.status().message();
}

// oneDNN's Winograd chooses its schedule from the thread count: deterministic mode plans the
// direct convolution instead (where this CPU would run oneDNN's Winograd at all).
TEST(DeterministicModePlan, ReplacesOnednnWinograd) {
  const Case c = testing::KernelFamilyCase("winograd_onednn");
  SessionOptions options;
  options.optimization = c.optimization;
  options.intra_op_threads = 2;
  const auto plan = [&](bool deterministic) {
    options.deterministic = deterministic;
    StatusOr<std::string> p = Session::FromBytes(c.model, options).DescribePlan({}, false);
    return p.ok() ? p.value() : p.status().message();
  };
  const std::string normal = plan(false), det = plan(true);
  EXPECT_EQ(det.find("onednn/winograd"), std::string::npos) << det;
  if (normal.find("onednn/winograd") == std::string::npos)
    GTEST_SKIP() << "oneDNN's Winograd does not run on this CPU";
  EXPECT_NE(det.find("Conv_f32_onednn"), std::string::npos) << det;
}

// The audit table names only impls that exist (an impl renamed or removed leaves no stale row),
// and every impl the registry holds on this build is audited: a new kernel must be added to
// kernels/thread_invariance.cc (or stays out of deterministic mode, which this test reports).
TEST(ThreadInvarianceAudit, CoversEveryRegisteredImpl) {
  kernels::OpRegistry r;
  kernels::RegisterAllOps(r);
  const std::vector<std::string> stale = kernels::MarkThreadInvariantKernels(r);
#if defined(__x86_64__) || defined(_M_X64)
  EXPECT_TRUE(stale.empty()) << stale.front();
#endif
  std::vector<std::string> unaudited;
  for (const kernels::OpDef* def : kernels::OpRegistry::Global().All())
    for (const kernels::KernelImpl& impl : def->impls)
      if (!impl.thread_invariant) unaudited.push_back(impl.name);
  EXPECT_TRUE(unaudited.empty()) << unaudited.front() << " and " << unaudited.size() - 1 << " more";
}

}  // namespace
}  // namespace onyx
