// The Highway elementwise kernels (kernels/common/elementwise_*.cc) against the reference kernels
// of the same nodes: unary math and activations, binary arithmetic with broadcasting, variadic
// Sum/Max/Min. Odd sizes hit the vector tails; NaN, +-inf and -0 are mixed into the data; every
// case also runs with the output over input 0 (in-place) and on every Highway target.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

const std::vector<int64_t> kSizes = {1, 7, 15, 16, 17, 33, 1023};

struct UnaryCase {
  UnaryCase(std::string o, int64_t v, std::vector<ir::Attribute> a, double abs_tol, double rel_tol,
            float low = -6.f, float high = 6.f, std::string l = "")
      : op(std::move(o)),
        opset(v),
        attrs(std::move(a)),
        atol(abs_tol),
        rtol(rel_tol),
        lo(low),
        hi(high),
        label(std::move(l)) {}
  std::string op;
  int64_t opset;
  std::vector<ir::Attribute> attrs;
  double atol, rtol;  // 0, 0 = exact
  float lo, hi;       // input range (special values are mixed in as well)
  std::string label;  // distinguishes cases of the same op
};

std::vector<UnaryCase> UnaryCases() {
  constexpr double kUlps = 1e-6;  // about 8 ulp relative
  return {
      {"Relu", 14, {}, 0, 0},
      {"LeakyRelu", 16, {FloatAttr("alpha", 0.1f)}, 0, 0},
      {"LeakyRelu", 16, {}, 0, 0, -6.f, 6.f, "default_alpha"},
      {"Clip", 6, {FloatAttr("min", -1.5f), FloatAttr("max", 2.f)}, 0, 0},
      {"Clip", 6, {}, 0, 0, -6.f, 6.f, "defaults"},
      {"Sigmoid", 13, {}, 1e-7, kUlps, -100.f, 100.f},
      {"Tanh", 13, {}, 1e-7, kUlps},
      {"Erf", 13, {}, 2e-6, 0},
      {"Gelu", 20, {}, 2e-6, kUlps},
      {"Gelu", 20, {StringAttr("approximate", "tanh")}, 1e-6, kUlps, -6.f, 6.f, "tanh"},
      {"HardSigmoid", 6, {FloatAttr("alpha", 0.3f), FloatAttr("beta", 0.4f)}, 1e-7, kUlps},
      {"HardSwish", 14, {}, 1e-7, kUlps},
      {"Elu", 6, {FloatAttr("alpha", 0.7f)}, 1e-7, kUlps},
      {"Softplus", 1, {}, 1e-7, kUlps, -30.f, 30.f},
      {"Exp", 13, {}, 1e-30, kUlps, -90.f, 90.f},
      {"Log", 13, {}, 1e-7, kUlps, 0.f, 100.f},
      {"Sqrt", 13, {}, 0, 0, 0.f, 100.f},
      {"Neg", 13, {}, 0, 0},
      {"Abs", 13, {}, 0, 0},
      {"Reciprocal", 13, {}, 0, 0},
      {"Mish", 18, {}, 1e-7, kUlps, -30.f, 30.f},
  };
}

double ElementValue(const Tensor& t) {
  return t.dtype() == DType::kInt64 ? static_cast<double>(t.data<int64_t>()[0])
                                    : static_cast<double>(t.data<float>()[0]);
}

std::string CaseName(const UnaryCase& c) {
  return c.op + (c.label.empty() ? "" : "_" + c.label);
}

// Names the case in failure messages instead of a byte dump.
void PrintTo(const UnaryCase& c, std::ostream* os) {
  *os << CaseName(c);
}

class UnaryTest : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(UnaryTest, MatchesReferenceOnEveryTargetAndSize) {
  const UnaryCase& c = GetParam();
  const NodeSpec spec{c.op, c.opset, c.attrs};
  const std::string impl = c.op + "_f32_hwy";
  std::mt19937 rng(42);
  for (int64_t n : kSizes) {
    Tensor x = RandomFloats({n}, rng, c.lo, c.hi);
    InjectSpecials(x);
    const RunResult ref = RunImpl(spec, {x}, "");
    ASSERT_TRUE(ref.status.ok()) << ref.status.message();
    ForEachSimdTarget([&](const std::string& target) {
      SCOPED_TRACE(impl + " n=" + std::to_string(n) + " target=" + target);
      for (bool in_place : {false, true}) {
        RunOptions o;
        o.output_over_input0 = in_place;
        const RunResult fast = RunImpl(spec, {x}, impl, o);
        ASSERT_TRUE(fast.status.ok()) << fast.status.message();
        EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], c.atol, c.rtol), "")
            << (in_place ? "in place" : "out of place");
      }
    });
  }
}

TEST_P(UnaryTest, LargeTensorOnTwoThreads) {
  const UnaryCase& c = GetParam();
  const NodeSpec spec{c.op, c.opset, c.attrs};
  std::mt19937 rng(7);
  Tensor x = RandomFloats({3, 100003}, rng, c.lo, c.hi);
  InjectSpecials(x);
  const RunResult ref = RunImpl(spec, {x}, "");
  RunOptions o;
  o.threads = 2;
  const RunResult fast = RunImpl(spec, {x}, c.op + "_f32_hwy", o);
  ASSERT_TRUE(fast.status.ok()) << fast.status.message();
  EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], c.atol, c.rtol), "");
}

INSTANTIATE_TEST_SUITE_P(hwy, UnaryTest, ::testing::ValuesIn(UnaryCases()),
                         [](const auto& info) { return CaseName(info.param); });

// Against double-precision libm rather than the reference kernel (whose own exp is a clamped
// approximation): the transcendental loops over a dense grid, special values included.
TEST(UnaryAccuracy, TranscendentalsAgainstDoubleLibm) {
  std::vector<float> grid;
  for (float v = -95.f; v <= 95.f; v += 0.01171875f) grid.push_back(v);
  for (float v : {0.f, -0.f, 1e-30f, -1e-30f, 1e-40f, 0.5f, 88.7f, 88.73f, -103.f, -104.f})
    grid.push_back(v);
  const int64_t n = static_cast<int64_t>(grid.size());
  const Tensor x = FloatTensor({n}, grid);
  struct Fn {
    const char* op;
    double (*f)(double);
    double atol, rtol;
  };
  const Fn fns[] = {
      {"Exp", [](double v) { return std::exp(v); }, 1e-44, 3e-7},
      {"Tanh", [](double v) { return std::tanh(v); }, 1e-30, 3e-7},
      {"Sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }, 1e-44, 3e-7},
      {"Erf", [](double v) { return std::erf(v); }, 4.5e-7, 0},
      {"Softplus", [](double v) { return std::log1p(std::exp(v)); }, 1e-44, 3e-7},
  };
  for (const Fn& fn : fns) {
    ForEachSimdTarget([&](const std::string& target) {
      SCOPED_TRACE(std::string(fn.op) + " target=" + target);
      const RunResult r = RunImpl({fn.op, 13}, {x}, std::string(fn.op) + "_f32_hwy");
      ASSERT_TRUE(r.status.ok()) << r.status.message();
      std::vector<float> expected;
      for (float v : grid) expected.push_back(static_cast<float>(fn.f(v)));
      EXPECT_EQ(CompareFloats(r.outputs[0], FloatTensor({n}, expected), fn.atol, fn.rtol), "");
    });
  }
}

TEST(UnaryAccuracy, SpecialValuesFollowLibm) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = FloatTensor({6}, {-inf, inf, nan, -0.f, -1.f, 0.f});
  struct Want {
    const char* op;
    std::vector<float> y;
  };
  const Want wants[] = {
      {"Exp", {0.f, inf, nan, 1.f, std::exp(-1.f), 1.f}},
      {"Log", {nan, inf, nan, -inf, nan, -inf}},
      {"Sigmoid", {0.f, 1.f, nan, 0.5f, 1 / (1 + std::exp(1.f)), 0.5f}},
      {"Tanh", {-1.f, 1.f, nan, -0.f, std::tanh(-1.f), 0.f}},
      {"Erf", {-1.f, 1.f, nan, -0.f, std::erf(-1.f), 0.f}},
      {"Relu", {0.f, inf, nan, -0.f, 0.f, 0.f}},
      {"Softplus", {0.f, inf, nan, std::log(2.f), std::log1p(std::exp(-1.f)), std::log(2.f)}},
      {"Sqrt", {nan, inf, nan, -0.f, nan, 0.f}},
  };
  for (const Want& w : wants) {
    ForEachSimdTarget([&](const std::string& target) {
      SCOPED_TRACE(std::string(w.op) + " target=" + target);
      const RunResult r = RunImpl({w.op, 14}, {x}, std::string(w.op) + "_f32_hwy");
      ASSERT_TRUE(r.status.ok()) << r.status.message();
      EXPECT_EQ(CompareFloats(r.outputs[0], FloatTensor({6}, w.y), 1e-7, 1e-6), "");
    });
  }
}

TEST(Clip, InputBoundsOpset13IncludingNaNAndInvertedBounds) {
  std::mt19937 rng(3);
  Tensor x = RandomFloats({1023}, rng);
  InjectSpecials(x);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::pair<Tensor, Tensor>> bounds = {
      {FloatTensor({}, {-1.f}), FloatTensor({}, {1.f})},
      {FloatTensor({}, {2.f}), FloatTensor({}, {-2.f})},  // min > max: everything becomes max
      {FloatTensor({}, {nan}), FloatTensor({}, {0.5f})},
      {Tensor(), FloatTensor({1}, {0.5f})},
      {FloatTensor({}, {-0.5f}), Tensor()},
      {Tensor(), Tensor()},
  };
  for (const auto& [lo, hi] : bounds) {
    const RunResult ref = RunImpl({"Clip", 13}, {x, lo, hi}, "");
    ASSERT_TRUE(ref.status.ok()) << ref.status.message();
    // Structured bindings are captured by name: C++17 clang cannot capture them implicitly.
    ForEachSimdTarget([&, &lo = lo, &hi = hi](const std::string& target) {
      SCOPED_TRACE(target);
      const RunResult fast = RunImpl({"Clip", 13}, {x, lo, hi}, "Clip_f32_hwy");
      ASSERT_TRUE(fast.status.ok()) << fast.status.message();
      EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 0, 0), "");
    });
  }
  // A non-scalar bound is the reference kernel's error, with the node named.
  const RunResult bad =
      RunImpl({"Clip", 13}, {x, FloatTensor({2}, {0.f, 1.f}), Tensor()}, "Clip_f32_hwy");
  EXPECT_FALSE(bad.status.ok());
  EXPECT_NE(bad.status.message().find("expected a scalar"), std::string::npos)
      << bad.status.message();
}

TEST(Unary, RejectsWhatItDoesNotRunExactly) {
  std::mt19937 rng(1);
  const Tensor x64 = Tensor::Allocate(DType::kDouble, {4});
  EXPECT_FALSE(RunImpl({"Relu", 14}, {x64}, "Relu_f32_hwy").status.ok());
  const Tensor x = RandomFloats({4}, rng);
  EXPECT_FALSE(
      RunImpl({"Gelu", 20, {StringAttr("approximate", "erf")}}, {x}, "Gelu_f32_hwy").status.ok());
}

TEST(Pow, ScalarExponentsMatchReference) {
  std::mt19937 rng(19);
  Tensor x = RandomFloats({2, 1023}, rng, -8.f, 8.f);
  InjectSpecials(x);
  std::vector<Tensor> exponents;
  for (float e : {1.f, 2.f, 3.f, 0.5f, -1.f, 2.5f}) exponents.push_back(FloatTensor({}, {e}));
  exponents.push_back(Int64Tensor({1}, {2}));
  exponents.push_back(Int64Tensor({1}, {3}));
  for (const Tensor& e : exponents) {
    const RunResult ref = RunImpl({"Pow", 15}, {x, e}, "");
    ASSERT_TRUE(ref.status.ok()) << ref.status.message();
    ForEachSimdTarget([&](const std::string& target) {
      SCOPED_TRACE("exponent " + std::to_string(ElementValue(e)) + " target=" + target);
      for (bool in_place : {false, true}) {
        RunOptions o;
        o.output_over_input0 = in_place;
        const RunResult fast = RunImpl({"Pow", 15}, {x, e}, "Pow_f32_hwy", o);
        ASSERT_TRUE(fast.status.ok()) << fast.status.message();
        // x * x * x rounds twice where powf rounds once: 2 ulp.
        EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 1e-45, 2.5e-7), "");
      }
    });
  }
  // A per-element exponent is the reference kernel's business.
  const Tensor many = RandomFloats({2, 1023}, rng);
  const RunResult ref = RunImpl({"Pow", 15}, {x, many}, "");
  const RunResult fast = RunImpl({"Pow", 15}, {x, many}, "Pow_f32_hwy");
  EXPECT_FALSE(fast.status.ok());  // supports() rejects a non-scalar exponent
}

// ---- binary ----

struct ShapePair {
  Shape a, b;
};

const std::vector<ShapePair> kBroadcasts = {
    {{1023}, {1023}},
    {{2, 3, 17}, {2, 3, 17}},
    {{37}, {}},
    {{}, {37}},
    {{1}, {5, 7}},
    {{2, 3, 5, 7}, {1, 3, 1, 1}},  // per channel
    {{2, 3, 5, 7}, {3, 1, 1}},
    {{1, 3, 1, 1}, {2, 3, 5, 7}},
    {{2, 4, 33}, {33}},  // per row (bias)
    {{33}, {2, 4, 33}},
    {{2, 1, 5}, {3, 1}},  // both broadcast
    {{4, 1, 6, 1}, {1, 5, 1, 7}},
    {{3, 17}, {3, 1}},
    {{0, 3}, {3}},
    {{}, {}},
};

TEST(Binary, MatchesReferenceOverBroadcastShapes) {
  std::mt19937 rng(5);
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    for (const ShapePair& s : kBroadcasts) {
      Tensor a = RandomFloats(s.a, rng);
      Tensor b = RandomFloats(s.b, rng);
      InjectSpecials(a);
      const NodeSpec spec{op, 14};
      const RunResult ref = RunImpl(spec, {a, b}, "");
      ASSERT_TRUE(ref.status.ok()) << ref.status.message();
      ForEachSimdTarget([&](const std::string& target) {
        SCOPED_TRACE(std::string(op) + " " + ShapeToString(s.a) + " " + ShapeToString(s.b) +
                     " target=" + target);
        for (bool in_place : {false, true}) {
          RunOptions o;
          o.output_over_input0 = in_place;
          const RunResult fast = RunImpl(spec, {a, b}, std::string(op) + "_f32_hwy", o);
          ASSERT_TRUE(fast.status.ok()) << fast.status.message();
          EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 0, 0), "");
        }
      });
    }
  }
}

TEST(Binary, SameBufferForBothInputsInPlace) {
  std::mt19937 rng(9);
  Tensor x = RandomFloats({1, 1023}, rng);
  const RunResult ref = RunImpl({"Mul", 14}, {x, x}, "");
  RunOptions o;
  o.output_over_input0 = true;
  const RunResult fast = RunImpl({"Mul", 14}, {x, x}, "Mul_f32_hwy", o);
  ASSERT_TRUE(fast.status.ok());
  // Input 1 is the caller's tensor, input 0 a copy: the output aliases only input 0 here, and the
  // values must still be x * x.
  EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 0, 0), "");
}

TEST(Binary, LegacyBroadcastAttributesBeforeOpset7) {
  std::mt19937 rng(11);
  const Tensor a = RandomFloats({2, 3, 4, 5}, rng);
  const Tensor b = RandomFloats({3, 4}, rng);
  const NodeSpec spec{"Add", 6, {IntAttr("broadcast", 1), IntAttr("axis", 1)}};
  const RunResult ref = RunImpl(spec, {a, b}, "");
  ASSERT_TRUE(ref.status.ok()) << ref.status.message();
  const RunResult fast = RunImpl(spec, {a, b}, "Add_f32_hwy");
  ASSERT_TRUE(fast.status.ok()) << fast.status.message();
  EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 0, 0), "");
  // Without broadcast=1 the shapes must match: the reference kernel's error.
  const RunResult bad = RunImpl({"Add", 6}, {a, b}, "Add_f32_hwy");
  EXPECT_FALSE(bad.status.ok());
  EXPECT_NE(bad.status.message().find("broadcast=0"), std::string::npos) << bad.status.message();
}

TEST(Binary, IncompatibleShapesGiveTheReferenceError) {
  const Tensor a = Tensor::Allocate(DType::kFloat, {2, 3});
  const Tensor b = Tensor::Allocate(DType::kFloat, {4});
  const RunResult r = RunImpl({"Sub", 14}, {a, b}, "Sub_f32_hwy");
  EXPECT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("'n'"), std::string::npos) << r.status.message();
}

TEST(Binary, LargeBroadcastOnTwoThreads) {
  std::mt19937 rng(13);
  const Tensor a = RandomFloats({8, 64, 30, 30}, rng);
  const Tensor b = RandomFloats({1, 64, 1, 1}, rng);
  RunOptions o;
  o.threads = 2;
  for (const char* op : {"Add", "Mul"}) {
    const RunResult ref = RunImpl({op, 14}, {a, b}, "");
    const RunResult fast = RunImpl({op, 14}, {a, b}, std::string(op) + "_f32_hwy", o);
    ASSERT_TRUE(fast.status.ok());
    EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 0, 0), "") << op;
  }
}

TEST(Variadic, SumMaxMinWithBroadcastingAndNaN) {
  std::mt19937 rng(17);
  const std::vector<std::vector<Shape>> shape_sets = {
      {{1023}, {1023}},
      {{2, 3, 5}, {3, 1}, {5}},
      {{4, 17}, {4, 17}, {4, 17}, {1}},
  };
  for (const char* op : {"Sum", "Max", "Min"}) {
    for (const auto& shapes : shape_sets) {
      std::vector<Tensor> inputs;
      for (const Shape& s : shapes) {
        inputs.push_back(RandomFloats(s, rng));
        InjectSpecials(inputs.back());
      }
      const RunResult ref = RunImpl({op, 13}, inputs, "");
      ASSERT_TRUE(ref.status.ok()) << ref.status.message();
      ForEachSimdTarget([&](const std::string& target) {
        SCOPED_TRACE(std::string(op) + " inputs=" + std::to_string(shapes.size()) +
                     " target=" + target);
        const RunResult fast = RunImpl({op, 13}, inputs, std::string(op) + "_f32_hwy");
        ASSERT_TRUE(fast.status.ok()) << fast.status.message();
        EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 0, 0), "");
      });
    }
  }
}

TEST(Variadic, MaxMinPropagateNaNFromEitherSide) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor a = FloatTensor({4}, {nan, 1.f, nan, -2.f});
  const Tensor b = FloatTensor({4}, {1.f, nan, nan, 3.f});
  const RunResult mx = RunImpl({"Max", 13}, {a, b}, "Max_f32_hwy");
  const RunResult mn = RunImpl({"Min", 13}, {a, b}, "Min_f32_hwy");
  ASSERT_TRUE(mx.status.ok() && mn.status.ok());
  EXPECT_EQ(CompareFloats(mx.outputs[0], FloatTensor({4}, {nan, nan, nan, 3.f}), 0, 0), "");
  EXPECT_EQ(CompareFloats(mn.outputs[0], FloatTensor({4}, {nan, nan, nan, -2.f}), 0, 0), "");
}

// com.onyx ReplaceNaN (the fusion of Where(IsNaN(x), value, x)): NaNs become `value`, everything
// else (infinities, -0) passes bit for bit, at sizes that end inside a vector, on every target.
TEST(ReplaceNaN, NaNsBecomeTheValueOnEveryTarget) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(5);
  NodeSpec spec{"ReplaceNaN", 1, {FloatAttr("value", -1.5f)}};
  spec.domain = "com.onyx";
  for (int64_t n : kSizes) {
    Tensor x = RandomFloats({n}, rng);
    Tensor want = Tensor::Allocate(DType::kFloat, {n});
    for (int64_t i = 0; i < n; ++i) {
      float& v = x.data<float>()[i];
      if (i % 3 == 1) v = nan;
      if (i % 7 == 2) v = i % 2 ? inf : -0.f;
      want.data<float>()[i] = std::isnan(v) ? -1.5f : v;
    }
    for (const std::string impl : {"ReplaceNaN_f32_hwy", "replacenan_f32_ref"})
      ExpectImplMatches(spec, {x}, impl, want, 0, 0, "n " + std::to_string(n) + " " + impl);
  }
}

}  // namespace
}  // namespace onyx::testing
