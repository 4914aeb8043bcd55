// The Highway QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear kernels (issue 16)
// against the reference kernels, bit for bit: random data and random bit patterns, exact .5 ties
// after the division, quotients next to a tie, saturating and huge values, NaN, +-inf, -0,
// subnormals, odd sizes that end inside a vector, per-axis scales on every axis, uint8 / int8 /
// int32, at 1, 2 and 4 threads on every Highway target; and the plans pick them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "onyx/session.h"
#include "tests/engine/model_builder.h"
#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kFltMax = std::numeric_limits<float>::max();
constexpr const char* kQuantize = "QuantizeLinear_f32_hwy";
constexpr const char* kDequantize = "DequantizeLinear_f32_hwy";
constexpr const char* kDynamic = "DynamicQuantizeLinear_f32_hwy";
// Elements above which the kernels split work between threads (2^18 units of work on TBB).
constexpr int64_t kThreadedSize = 300007;

template <typename T>
Tensor Make(DType t, const Shape& shape, const std::vector<T>& v) {
  Tensor x = Tensor::Allocate(t, shape);
  EXPECT_EQ(static_cast<int64_t>(v.size()), x.numel());
  if (!v.empty()) std::memcpy(x.raw_data(), v.data(), v.size() * sizeof(T));
  return x;
}

Tensor Scalar(float v) {
  return Make<float>(DType::kFloat, {}, {v});
}

// A zero point tensor of `type` (uint8, int8 or int32) holding `v`.
Tensor ZeroPoints(DType type, const Shape& shape, const std::vector<int32_t>& v) {
  if (type == DType::kUInt8) return Make(type, shape, std::vector<uint8_t>(v.begin(), v.end()));
  if (type == DType::kInt8) return Make(type, shape, std::vector<int8_t>(v.begin(), v.end()));
  return Make(type, shape, v);
}

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof(f));
  return f;
}

// Runs `impl` and the reference impl of the node on `inputs` and expects every output to be
// byte-identical: on every Highway target, at 1, 2 and 4 threads, with the scale and zero
// point seen at run time and as plan-time constants.
void ExpectSameBits(const NodeSpec& spec, const std::vector<Tensor>& inputs,
                    const std::string& impl, const std::string& what,
                    const std::vector<int>& thread_counts = {1, 2, 4}) {
  const RunResult ref = RunImpl(spec, inputs, "");
  ASSERT_TRUE(ref.status.ok()) << what << ": " << ref.status.message();
  ForEachSimdTarget([&](const std::string& target) {
    for (int threads : thread_counts) {
      for (bool constant : {false, true}) {
        SCOPED_TRACE(what + " target=" + target + " threads=" + std::to_string(threads) +
                     (constant ? " constant scale" : ""));
        RunOptions o;
        o.threads = threads;
        if (constant) o.constant_inputs = {1, 2};
        const RunResult fast = RunImpl(spec, inputs, impl, o);
        ASSERT_TRUE(fast.status.ok()) << fast.status.message();
        EXPECT_EQ(fast.impl, impl);
        ASSERT_EQ(fast.outputs.size(), ref.outputs.size());
        for (size_t i = 0; i < ref.outputs.size(); ++i)
          EXPECT_EQ(CompareBytes(fast.outputs[i], ref.outputs[i]), "") << "output " << i;
      }
    }
  });
}

// Values that stress the rounding and the saturation for scale s: exact ties (k + 0.5) s where
// that product is exact, the floats either side of fl((k + 0.5) s), saturating, huge and
// non-finite values, signed zeros and subnormals.
std::vector<float> EdgeValues(float s) {
  std::vector<float> v = {0.0f,     -0.0f,   kNaN,        -kNaN,        kInf,    -kInf,  kFltMax,
                          -kFltMax, 1e30f,   -1e30f,      1e-45f,       -1e-45f, 1e-40f, -1e-40f,
                          1e-38f,   -1e-38f, 16777216.0f, -16777216.0f, 3e9f,    -3e9f};
  for (int k = -300; k <= 300; k += (k > -20 && k < 20) ? 1 : 7) {
    const float m = static_cast<float>(k) + 0.5f;
    const float x = m * s;
    v.push_back(x);
    v.push_back(std::nextafter(x, kInf));
    v.push_back(std::nextafter(x, -kInf));
    v.push_back(static_cast<float>(k) * s);
  }
  return v;
}

struct QuantCase {
  DType type;  // of y and the zero point
  bool has_zp;
};

const std::vector<QuantCase> kQuantCases = {
    {DType::kUInt8, true}, {DType::kInt8, true}, {DType::kUInt8, false}};

std::string TypeName(DType t) {
  return DTypeName(t);
}

// ---- QuantizeLinear ----

TEST(QuantizeFast, PerTensorRandomOddSizes) {
  std::mt19937 rng(1601);
  for (const QuantCase& c : kQuantCases) {
    for (int64_t n : {1, 3, 7, 15, 16, 17, 31, 33, 63, 65, 127, 1000, 4099}) {
      const Tensor x = RandomFloats({n}, rng, -300.f, 300.f);
      const float s = std::uniform_real_distribution<float>(0.05f, 2.f)(rng);
      const int32_t zp = c.type == DType::kInt8 ? -7 : 131;
      std::vector<Tensor> inputs = {x, Scalar(s)};
      if (c.has_zp) inputs.push_back(ZeroPoints(c.type, {}, {zp}));
      ExpectSameBits({"QuantizeLinear", 13}, inputs, kQuantize,
                     TypeName(c.type) + (c.has_zp ? " zp" : " no zp") + " n=" + std::to_string(n));
    }
  }
}

TEST(QuantizeFast, TiesSaturationAndSpecialValues) {
  // Scales with few mantissa bits make (k + 0.5) s exact, so x / s is an exact tie.
  for (float s : {1.0f, 0.5f, 0.375f, 0.0234375f, 3.0f, 0.1f, 0.0078125f, 1.7e-3f}) {
    const std::vector<float> v = EdgeValues(s);
    const Tensor x = Make(DType::kFloat, {static_cast<int64_t>(v.size())}, v);
    for (const QuantCase& c : kQuantCases) {
      for (int32_t zp : c.type == DType::kInt8 ? std::vector<int32_t>{-128, 0, 5, 127}
                                               : std::vector<int32_t>{0, 1, 128, 255}) {
        if (!c.has_zp && zp != 0) continue;
        std::vector<Tensor> inputs = {x, Scalar(s)};
        if (c.has_zp) inputs.push_back(ZeroPoints(c.type, {1}, {zp}));
        ExpectSameBits({"QuantizeLinear", 19}, inputs, kQuantize,
                       TypeName(c.type) + " s=" + std::to_string(s) + " zp=" + std::to_string(zp),
                       {1});
      }
    }
  }
}

TEST(QuantizeFast, OddScales) {
  // Zero (x / 0 is +-inf or NaN), negative, NaN, inf, subnormal and huge scales.
  const std::vector<float> v = EdgeValues(0.25f);
  const Tensor x = Make(DType::kFloat, {static_cast<int64_t>(v.size())}, v);
  for (float s : {0.0f, -0.0f, -0.5f, kNaN, kInf, -kInf, 1e-45f, 1e-40f, 3e38f, -1e-3f}) {
    for (DType t : {DType::kUInt8, DType::kInt8}) {
      ExpectSameBits({"QuantizeLinear", 21}, {x, Scalar(s), ZeroPoints(t, {}, {3})}, kQuantize,
                     TypeName(t) + " s=" + std::to_string(s), {1});
    }
  }
}

TEST(QuantizeFast, RandomBitPatterns) {
  // Every class of float for x and the scale (a scale per channel, axis 1 of [4, 4096, 1] with
  // inner 1 and of [4, 64, 64] with inner 64, so both loops see 2^16 (x, scale) pairs).
  std::mt19937 rng(1602);
  for (const Shape& shape : {Shape{4, 4096, 1}, Shape{4, 64, 64}}) {
    const int64_t n = shape[0] * shape[1] * shape[2];
    std::vector<float> xv(n), sv(shape[1]);
    for (float& f : xv) f = FromBits(rng());
    for (float& f : sv) f = FromBits(rng());
    std::vector<int32_t> zv(shape[1]);
    for (int32_t& z : zv) z = static_cast<int32_t>(rng() % 256);
    for (DType t : {DType::kUInt8, DType::kInt8}) {
      std::vector<int32_t> z = zv;
      if (t == DType::kInt8)
        for (int32_t& e : z) e -= 128;
      ExpectSameBits({"QuantizeLinear", 13, {IntAttr("axis", 1)}},
                     {Make(DType::kFloat, shape, xv), Make(DType::kFloat, {shape[1]}, sv),
                      ZeroPoints(t, {shape[1]}, z)},
                     kQuantize, TypeName(t) + " " + ShapeToString(shape), {1});
    }
  }
}

TEST(QuantizeFast, QuotientsNextToTies) {
  // Random scales, x = fl((k + 0.5) s) and its neighbours: x / s lies within an ulp or two of
  // a tie, where a division computed another way would round differently.
  std::mt19937 rng(1603);
  std::uniform_real_distribution<float> mant(1.f, 2.f);
  std::uniform_int_distribution<int> expo(-40, 10);
  const int64_t channels = 512, per_channel = 96;
  std::vector<float> sv(channels), xv;
  for (float& s : sv) s = std::ldexp(mant(rng), expo(rng));
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t j = 0; j < per_channel / 3; ++j) {
      const float x = (static_cast<float>(static_cast<int>(rng() % 300) - 150) + 0.5f) * sv[c];
      xv.push_back(x);
      xv.push_back(std::nextafter(x, kInf));
      xv.push_back(std::nextafter(x, -kInf));
    }
  }
  for (DType t : {DType::kUInt8, DType::kInt8}) {
    const int32_t zp = t == DType::kUInt8 ? 128 : 0;
    ExpectSameBits(
        {"QuantizeLinear", 13, {IntAttr("axis", 0)}},
        {Make(DType::kFloat, {channels, per_channel}, xv), Make(DType::kFloat, {channels}, sv),
         ZeroPoints(t, {channels}, std::vector<int32_t>(channels, zp))},
        kQuantize, TypeName(t), {1});
  }
}

TEST(QuantizeFast, PerAxisEveryAxis) {
  std::mt19937 rng(1604);
  struct AxisCase {
    Shape shape;
    int64_t axis;
  };
  const AxisCase cases[] = {
      {{2, 3, 5, 7}, 0},  {{2, 3, 5, 7}, 1},    {{2, 3, 5, 7}, 2},    {{2, 3, 5, 7}, 3},
      {{2, 3, 5, 7}, -1}, {{3, 17}, 1},         {{1, 64, 9, 9}, 1},   {{4, 40, 3}, 1},
      {{5, 19, 33}, 1},   {{kThreadedSize}, 0}, {{1, 37, 91, 91}, 1}, {{1000, 60, 5}, 1},
      {{7919, 40}, 1},    {{64, 100, 50}, 1},
  };
  for (const AxisCase& c : cases) {
    const Tensor x = RandomFloats(c.shape, rng, -200.f, 200.f);
    const int64_t rank = static_cast<int64_t>(c.shape.size());
    const int64_t channels = c.shape[c.axis < 0 ? c.axis + rank : c.axis];
    const Tensor s = RandomFloats({channels}, rng, 0.1f, 3.f);
    for (const QuantCase& q : kQuantCases) {
      std::vector<int32_t> z(channels);
      for (int32_t& e : z)
        e = q.type == DType::kInt8 ? static_cast<int32_t>(rng() % 256) - 128
                                   : static_cast<int32_t>(rng() % 256);
      std::vector<Tensor> inputs = {x, s};
      if (q.has_zp) inputs.push_back(ZeroPoints(q.type, {channels}, z));
      ExpectSameBits({"QuantizeLinear", 13, {IntAttr("axis", c.axis)}}, inputs, kQuantize,
                     TypeName(q.type) + (q.has_zp ? "" : " no zp") + " " + ShapeToString(c.shape) +
                         " axis=" + std::to_string(c.axis));
    }
  }
}

TEST(QuantizeFast, LargePerTensorOnThreads) {
  std::mt19937 rng(1605);
  Tensor x = RandomFloats({kThreadedSize}, rng, -100.f, 100.f);
  InjectSpecials(x);
  for (DType t : {DType::kUInt8, DType::kInt8}) {
    ExpectSameBits({"QuantizeLinear", 21}, {x, Scalar(0.37f), ZeroPoints(t, {}, {17})}, kQuantize,
                   TypeName(t));
  }
}

TEST(QuantizeFast, OutputDtypeAttributeWithoutZeroPoint) {
  std::mt19937 rng(1606);
  const Tensor x = RandomFloats({2, 33}, rng, -300.f, 300.f);
  ExpectSameBits({"QuantizeLinear", 21, {IntAttr("output_dtype", 3)}}, {x, Scalar(0.9f)}, kQuantize,
                 "output_dtype int8");
  ExpectSameBits({"QuantizeLinear", 10}, {x, Scalar(0.9f)}, kQuantize, "opset 10");
}

TEST(QuantizeFast, LeavesOtherCasesToTheReference) {
  const Tensor x = Tensor::Allocate(DType::kFloat, {2, 4});
  // Blocked quantization, float16 scales, precision double, int16 outputs: not supported.
  EXPECT_FALSE(RunImpl({"QuantizeLinear", 21, {IntAttr("axis", 1), IntAttr("block_size", 2)}},
                       {x, Tensor::Allocate(DType::kFloat, {2, 2})}, kQuantize)
                   .status.ok());
  EXPECT_FALSE(
      RunImpl({"QuantizeLinear", 21}, {x, Tensor::Allocate(DType::kFloat16, {})}, kQuantize)
          .status.ok());
  EXPECT_FALSE(
      RunImpl({"QuantizeLinear", 23, {IntAttr("precision", 11)}}, {x, Scalar(1.f)}, kQuantize)
          .status.ok());
  EXPECT_FALSE(RunImpl({"QuantizeLinear", 21},
                       {x, Scalar(1.f), Make<int16_t>(DType::kInt16, {}, {0})}, kQuantize)
                   .status.ok());
  // A per-axis scale of the wrong length gets the reference kernel's error.
  const RunResult bad = RunImpl({"QuantizeLinear", 13, {IntAttr("axis", 1)}},
                                {x, Tensor::Allocate(DType::kFloat, {3})}, kQuantize);
  EXPECT_FALSE(bad.status.ok());
  EXPECT_NE(bad.status.message().find("per-axis quantization expects [4]"), std::string::npos)
      << bad.status.message();
  // An empty x: the reference's output.
  ExpectSameBits({"QuantizeLinear", 13}, {Tensor::Allocate(DType::kFloat, {0, 3}), Scalar(1.f)},
                 kQuantize, "empty", {1});
}

// ---- DequantizeLinear ----

template <typename T>
std::vector<T> RandomInts(int64_t n, std::mt19937& rng) {
  std::vector<T> v(n);
  for (T& e : v) e = static_cast<T>(rng());
  return v;
}

Tensor RandomQuantized(DType t, const Shape& shape, std::mt19937& rng) {
  const int64_t n = ShapeElementCount(shape);
  if (t == DType::kUInt8) return Make(t, shape, RandomInts<uint8_t>(n, rng));
  if (t == DType::kInt8) return Make(t, shape, RandomInts<int8_t>(n, rng));
  return Make(t, shape, RandomInts<int32_t>(n, rng));
}

int32_t RandomZeroPoint(DType t, std::mt19937& rng) {
  if (t == DType::kUInt8) return static_cast<int32_t>(rng() % 256);
  if (t == DType::kInt8) return static_cast<int32_t>(rng() % 256) - 128;
  return static_cast<int32_t>(rng());
}

const DType kDequantTypes[] = {DType::kUInt8, DType::kInt8, DType::kInt32};

TEST(DequantizeFast, PerTensorRandomOddSizes) {
  std::mt19937 rng(1611);
  for (DType t : kDequantTypes) {
    for (int64_t n :
         std::vector<int64_t>{1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 65, 1000, 4099, kThreadedSize}) {
      const Tensor x = RandomQuantized(t, {n}, rng);
      const float s = std::uniform_real_distribution<float>(1e-3f, 2.f)(rng);
      const std::string what = TypeName(t) + " n=" + std::to_string(n);
      ExpectSameBits({"DequantizeLinear", 13},
                     {x, Scalar(s), ZeroPoints(t, {}, {RandomZeroPoint(t, rng)})}, kDequantize,
                     what);
      ExpectSameBits({"DequantizeLinear", 13}, {x, Scalar(s)}, kDequantize, what + " no zp");
    }
  }
}

TEST(DequantizeFast, ExtremesAndOddScales) {
  // The extremes of each type against the extreme zero points (int32: 33-bit differences whose
  // products with a 24-bit scale need the reference's double rounding), and odd scales.
  const Tensor u8 = Make<uint8_t>(DType::kUInt8, {9}, {0, 1, 2, 127, 128, 129, 200, 254, 255});
  const Tensor i8 = Make<int8_t>(DType::kInt8, {9}, {-128, -127, -1, 0, 1, 2, 64, 126, 127});
  const int32_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  const Tensor i32 =
      Make<int32_t>(DType::kInt32, {11},
                    {lo, lo + 1, -16777217, -1, 0, 1, 16777217, 123456789, hi - 1, hi, 1 << 30});
  std::mt19937 rng(1612);
  std::vector<float> scales = {1.0f,  0.1f,   -0.5f,  0.0f,  -0.0f,   kNaN,           kInf,
                               -kInf, 1e-45f, 1e-40f, 3e38f, kFltMax, 1.17549435e-38f};
  for (int i = 0; i < 8; ++i) scales.push_back(FromBits(rng()));
  for (float s : scales) {
    for (const Tensor* x : {&u8, &i8, &i32}) {
      const DType t = x->dtype();
      std::vector<int32_t> zps = {0};
      if (t == DType::kUInt8) zps = {0, 128, 255};
      if (t == DType::kInt8) zps = {-128, 0, 127};
      if (t == DType::kInt32) zps = {lo, -1, 0, 7, hi};
      for (int32_t zp : zps) {
        ExpectSameBits({"DequantizeLinear", 21}, {*x, Scalar(s), ZeroPoints(t, {1}, {zp})},
                       kDequantize,
                       TypeName(t) + " s=" + std::to_string(s) + " zp=" + std::to_string(zp), {1});
      }
    }
  }
}

TEST(DequantizeFast, PerAxisEveryAxis) {
  std::mt19937 rng(1613);
  struct AxisCase {
    Shape shape;
    int64_t axis;
  };
  const AxisCase cases[] = {
      {{2, 3, 5, 7}, 0}, {{2, 3, 5, 7}, 1},  {{2, 3, 5, 7}, 2},    {{2, 3, 5, 7}, -1},
      {{3, 17}, 1},      {{64, 3, 3, 3}, 0}, {{1, 37, 91, 91}, 1}, {{1000, 60, 5}, 1},
      {{7919, 40}, 1},   {{64, 100, 50}, 1}, {{4, 40, 3}, 1},      {{kThreadedSize / 7, 7}, 0},
  };
  for (const AxisCase& c : cases) {
    const int64_t rank = static_cast<int64_t>(c.shape.size());
    const int64_t channels = c.shape[c.axis < 0 ? c.axis + rank : c.axis];
    const Tensor s = RandomFloats({channels}, rng, 1e-3f, 1.f);
    for (DType t : kDequantTypes) {
      const Tensor x = RandomQuantized(t, c.shape, rng);
      std::vector<int32_t> z(channels);
      for (int32_t& e : z) e = RandomZeroPoint(t, rng);
      const std::string what =
          TypeName(t) + " " + ShapeToString(c.shape) + " axis=" + std::to_string(c.axis);
      const NodeSpec spec{"DequantizeLinear", 13, {IntAttr("axis", c.axis)}};
      ExpectSameBits(spec, {x, s, ZeroPoints(t, {channels}, z)}, kDequantize, what);
      ExpectSameBits(spec, {x, s}, kDequantize, what + " no zp");
    }
  }
}

TEST(DequantizeFast, LeavesOtherCasesToTheReference) {
  const Tensor x = Tensor::Allocate(DType::kUInt8, {2, 4});
  EXPECT_FALSE(RunImpl({"DequantizeLinear", 21, {IntAttr("axis", 1), IntAttr("block_size", 2)}},
                       {x, Tensor::Allocate(DType::kFloat, {2, 2})}, kDequantize)
                   .status.ok());
  EXPECT_FALSE(
      RunImpl({"DequantizeLinear", 21}, {x, Tensor::Allocate(DType::kFloat16, {})}, kDequantize)
          .status.ok());
  EXPECT_FALSE(RunImpl({"DequantizeLinear", 23, {IntAttr("output_dtype", 16)}}, {x, Scalar(1.f)},
                       kDequantize)
                   .status.ok());
  EXPECT_FALSE(RunImpl({"DequantizeLinear", 21},
                       {Tensor::Allocate(DType::kInt16, {3}), Scalar(1.f)}, kDequantize)
                   .status.ok());
  const RunResult bad = RunImpl({"DequantizeLinear", 13, {IntAttr("axis", 0)}},
                                {x, Tensor::Allocate(DType::kFloat, {4})}, kDequantize);
  EXPECT_FALSE(bad.status.ok());
  EXPECT_NE(bad.status.message().find("per-axis quantization expects [2]"), std::string::npos)
      << bad.status.message();
}

// ---- DynamicQuantizeLinear ----

TEST(DynamicQuantizeFast, RandomAndEdgeInputs) {
  std::mt19937 rng(1621);
  std::vector<std::pair<std::string, Tensor>> cases;
  for (int64_t n : std::vector<int64_t>{1, 5, 16, 17, 33, 1000, 4099, kThreadedSize}) {
    cases.push_back({"mixed n=" + std::to_string(n), RandomFloats({n}, rng, -3.f, 5.f)});
    cases.push_back({"positive n=" + std::to_string(n), RandomFloats({n}, rng, 0.5f, 7.f)});
    cases.push_back({"negative n=" + std::to_string(n), RandomFloats({n}, rng, -7.f, -0.5f)});
  }
  Tensor specials = RandomFloats({kThreadedSize}, rng, -2.f, 2.f);
  InjectSpecials(specials);  // NaN, +-inf, -0, huge and tiny values
  cases.push_back({"specials", specials});
  const std::vector<std::pair<std::string, std::vector<float>>> edges = {
      {"zeros", {0.0f, -0.0f, 0.0f}},
      {"nan", {kNaN, 1.0f, -2.0f, kNaN, 3.5f}},
      {"only nan", {kNaN, kNaN}},
      {"+inf", {1.0f, kInf, -3.0f}},
      {"-inf", {1.0f, -kInf, 3.0f}},
      {"both inf", {kInf, -kInf}},
      {"range overflows", {3e38f, -3e38f, 1.0f, -1.0f}},
      {"subnormal range", {1e-45f, 0.0f, 1e-45f}},
      {"tiny range", {1e-38f, -2e-38f, 5e-39f}},
      {"ties", {0.0f, 2.55f, 0.5f * 0.01f, 1.5f * 0.01f, 2.5f * 0.01f, -1.0f}},
  };
  for (const auto& [name, v] : edges)
    cases.push_back({name, Make(DType::kFloat, {static_cast<int64_t>(v.size())}, v)});
  cases.push_back({"empty", Tensor::Allocate(DType::kFloat, {0})});
  for (const auto& [name, x] : cases)
    ExpectSameBits({"DynamicQuantizeLinear", 11, {}, 3}, {x}, kDynamic, name);
}

// ---- the plan picks the fast kernels ----

TEST(QuantizeFast, RegisteredInFrontOfTheReferenceInEveryOpset) {
  const std::map<std::string, std::pair<std::string, std::vector<int64_t>>> ops = {
      {"QuantizeLinear", {kQuantize, {10, 13, 19, 21, 23, 24, 25}}},
      {"DequantizeLinear", {kDequantize, {10, 13, 19, 21, 23, 24, 25}}},
      {"DynamicQuantizeLinear", {kDynamic, {11, 20}}},
  };
  for (const auto& [op, impl_opsets] : ops) {
    for (int64_t opset : impl_opsets.second) {
      const std::vector<std::string> names = ImplNames(op, opset);
      ASSERT_GE(names.size(), 2u) << op << " " << opset;
      EXPECT_EQ(names[names.size() - 2], impl_opsets.first) << op << " " << opset;
    }
  }
}

onnx::TensorProto& RawInit(ModelBuilder& b, const std::string& name, int32_t type,
                           const std::vector<int64_t>& dims, const void* data, size_t bytes) {
  onnx::TensorProto& t = *b.graph().add_initializer();
  t.set_name(name);
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(static_cast<const char*>(data), bytes));
  return t;
}

TEST(QuantizeFast, SessionsPlanTheFastKernels) {
  // x -> Q (per tensor, constant scale) -> DQ; x -> Q (per channel int8) -> DQ; x -> dynamic Q
  // -> DQ with its run-time scale and zero point; and a Q whose scale is a graph input.
  constexpr int32_t kF32 = onnx::TensorProto::FLOAT;
  const Shape shape = {1, 16, 20, 20};
  ModelBuilder b(21);
  b.Input("x", kF32, shape);
  b.Input("rs", kF32, {});
  for (const char* y : {"y1", "y2", "y3", "y4"}) b.Output(y, kF32, shape);
  b.FloatInit("s", {}, {0.013f});
  const uint8_t zp_u8 = 131;
  RawInit(b, "z", onnx::TensorProto::UINT8, {}, &zp_u8, 1);
  std::vector<float> cs(16);
  std::vector<int8_t> cz(16);
  for (int c = 0; c < 16; ++c) cs[c] = 0.004f * (c + 1), cz[c] = static_cast<int8_t>(3 * c - 20);
  b.FloatInit("cs", {16}, cs);
  RawInit(b, "cz", onnx::TensorProto::INT8, {16}, cz.data(), cz.size());
  b.Node("QuantizeLinear", {"x", "s", "z"}, {"q1"}, "q1");
  b.Node("DequantizeLinear", {"q1", "s", "z"}, {"y1"}, "dq1");
  b.Node("QuantizeLinear", {"x", "cs", "cz"}, {"q2"}, "q2");
  b.Node("DequantizeLinear", {"q2", "cs", "cz"}, {"y2"}, "dq2");
  b.Node("DynamicQuantizeLinear", {"x"}, {"q3", "s3", "z3"}, "dyn");
  b.Node("DequantizeLinear", {"q3", "s3", "z3"}, {"y3"}, "dq3");
  b.Node("QuantizeLinear", {"x", "rs", "z"}, {"q4"}, "q4");
  b.Node("DequantizeLinear", {"q4", "rs", "z"}, {"y4"}, "dq4");
  std::mt19937 rng(1631);
  Tensor x = RandomFloats(shape, rng, -2.f, 2.f);
  InjectSpecials(x);
  const NamedValues feeds = {{"x", Value(x)}, {"rs", Value(Scalar(0.021f))}};
  for (int threads : {1, 2, 4}) {
    SessionOptions fast_opts;
    fast_opts.intra_op_threads = threads;
    SessionOptions ref_opts = fast_opts;
    ref_opts.reference_kernels = true;
    Session fast = Session::FromBytes(b.Bytes(), fast_opts);
    Session ref = Session::FromBytes(b.Bytes(), ref_opts);
    const NamedValues got = fast.Run(feeds);
    const NamedValues want = ref.Run(feeds);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(CompareBytes(got[i].second.tensor(), want[i].second.tensor()), "")
          << got[i].first << " threads " << threads;
    auto plan = fast.DescribePlan({{"x", shape}, {"rs", {}}}, false);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    for (const char* impl : {kQuantize, kDequantize, kDynamic}) ExpectPlanPicks(*plan, impl);
  }
}

}  // namespace
}  // namespace onyx::testing
