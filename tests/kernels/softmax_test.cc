// The Highway Softmax/LogSoftmax kernels against the reference kernels: every axis (rows when it
// is innermost, column blocks otherwise), the opset < 13 flattening, odd row lengths, rows with
// -inf, +inf and NaN, and large values that overflow without the max subtraction.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

struct SoftmaxCase {
  Shape shape;
  int64_t axis;
  int64_t opset;
};

const std::vector<SoftmaxCase> kCases = {
    {{1}, -1, 13},         {{7}, 0, 13},          {{3, 17}, 1, 13},
    {{4, 1023}, -1, 13},   {{2, 3, 16}, -1, 13},  {{2, 15, 5}, 1, 13},
    {{2, 7, 300}, 1, 13},  {{5, 33}, 0, 13},      {{2, 3, 4, 5}, 1, 11},  // flattens [2, 60]
    {{2, 3, 4, 5}, 0, 11}, {{2, 3, 4, 5}, 4, 11}, {{3, 1, 9}, 1, 13},
};

std::string Describe(const SoftmaxCase& c) {
  return ShapeToString(c.shape) + " axis=" + std::to_string(c.axis) +
         " opset=" + std::to_string(c.opset);
}

TEST(Softmax, MatchesReferenceOnEveryAxisAndTarget) {
  std::mt19937 rng(21);
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (const SoftmaxCase& c : kCases) {
      const Tensor x = RandomFloats(c.shape, rng, -10.f, 10.f);
      const NodeSpec spec{op, c.opset, {IntAttr("axis", c.axis)}};
      const RunResult ref = RunImpl(spec, {x}, "");
      ASSERT_TRUE(ref.status.ok()) << ref.status.message();
      ForEachSimdTarget([&](const std::string& target) {
        SCOPED_TRACE(std::string(op) + " " + Describe(c) + " target=" + target);
        for (bool in_place : {false, true}) {
          RunOptions o;
          o.output_over_input0 = in_place;
          const RunResult fast = RunImpl(spec, {x}, std::string(op) + "_f32_hwy", o);
          ASSERT_TRUE(fast.status.ok()) << fast.status.message();
          EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 1e-7, 2e-6), "");
        }
      });
    }
  }
}

TEST(Softmax, LargeValuesAndNonFiniteRows) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Rows of 17: huge values (exp would overflow without the max subtraction), a -inf entry, a
  // row of all -inf, a +inf entry and a NaN entry.
  std::vector<float> v;
  for (int i = 0; i < 17; ++i) v.push_back(1000.f + i);
  for (int i = 0; i < 17; ++i) v.push_back(i == 3 ? -inf : static_cast<float>(i) * 0.5f);
  for (int i = 0; i < 17; ++i) v.push_back(-inf);
  for (int i = 0; i < 17; ++i) v.push_back(i == 16 ? inf : 1.f);
  for (int i = 0; i < 17; ++i) v.push_back(i == 8 ? nan : 2.f);
  const Tensor x = FloatTensor({5, 17}, v);
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (int64_t axis : {1, 0}) {
      const NodeSpec spec{op, 13, {IntAttr("axis", axis)}};
      const RunResult ref = RunImpl(spec, {x}, "");
      ASSERT_TRUE(ref.status.ok());
      ForEachSimdTarget([&](const std::string& target) {
        SCOPED_TRACE(std::string(op) + " axis=" + std::to_string(axis) + " target=" + target);
        const RunResult fast = RunImpl(spec, {x}, std::string(op) + "_f32_hwy");
        ASSERT_TRUE(fast.status.ok());
        EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 1e-7, 2e-6), "");
      });
    }
  }
  // Independent check of the first row: softmax of 1000..1016 is softmax of 0..16.
  const RunResult r = RunImpl({"Softmax", 13}, {x}, "Softmax_f32_hwy");
  double sum = 0;
  for (int i = 0; i < 17; ++i) sum += std::exp(static_cast<double>(i));
  for (int i = 0; i < 17; ++i)
    EXPECT_NEAR(r.outputs[0].data<float>()[i], std::exp(static_cast<double>(i)) / sum, 1e-6);
}

TEST(Softmax, LargeOnTwoThreads) {
  std::mt19937 rng(23);
  for (const Shape& shape : {Shape{512, 1000}, Shape{1, 64, 4000}}) {
    const Tensor x = RandomFloats(shape, rng, -5.f, 5.f);
    for (int64_t axis : {-1, 1}) {
      const NodeSpec spec{"Softmax", 13, {IntAttr("axis", axis)}};
      const RunResult ref = RunImpl(spec, {x}, "");
      RunOptions o;
      o.threads = 2;
      const RunResult fast = RunImpl(spec, {x}, "Softmax_f32_hwy", o);
      ASSERT_TRUE(fast.status.ok());
      EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 1e-7, 2e-6), "")
          << ShapeToString(shape) << " axis " << axis;
    }
  }
}

TEST(Softmax, BadAxisGivesTheReferenceError) {
  const Tensor x = Tensor::Allocate(DType::kFloat, {2, 3});
  const RunResult r = RunImpl({"Softmax", 13, {IntAttr("axis", 2)}}, {x}, "Softmax_f32_hwy");
  EXPECT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("out of range"), std::string::npos) << r.status.message();
}

}  // namespace
}  // namespace onyx::testing
