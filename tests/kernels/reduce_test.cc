// The Highway reductions against the reference kernels: trailing axes (rows), leading axes
// (columns), middle axes, keepdims on and off, axes as an attribute (opset < 13/18) and as an
// input, negative axes, noop_with_empty_axes, NaN propagation for Max/Min, and the fallback for
// axis sets the fast kernel does not take.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

const char* const kOps[] = {"ReduceSum", "ReduceMean",      "ReduceMax",
                            "ReduceMin", "ReduceSumSquare", "ReduceL2"};

struct ReduceCase {
  Shape shape;
  std::vector<int64_t> axes;  // empty = all (or noop with noop_with_empty_axes)
};

const std::vector<ReduceCase> kCases = {
    {{1023}, {0}},          {{7}, {}}, {{4, 17}, {1}},  // trailing
    {{4, 17}, {-1}},                                    // negative
    {{2, 3, 33}, {1, 2}},                               // trailing block
    {{17, 15}, {0}},                                    // leading (columns)
    {{5, 3, 4099}, {0, 1}},  // leading block, more columns than one accumulator block
    {{2, 9, 7}, {1}},        // middle
    {{2, 1, 9, 1, 7}, {2}},  // middle with size-1 dims around
    {{3, 4, 5}, {0, 2}},     // two blocks: reference fallback
    {{1, 1}, {0}},          {{}, {}},
};

// Reduces with the given opset's axes convention; keepdims as asked.
RunResult Reduce(const char* op, int64_t opset, const Tensor& x, const std::vector<int64_t>& axes,
                 bool keepdims, const std::string& impl, int threads = 1) {
  const bool axes_input = opset >= (std::string(op) == "ReduceSum" ? 13 : 18);
  NodeSpec spec{op, opset, {IntAttr("keepdims", keepdims ? 1 : 0)}};
  std::vector<Tensor> inputs = {x};
  if (axes_input) {
    if (!axes.empty()) inputs.push_back(Int64Tensor({static_cast<int64_t>(axes.size())}, axes));
  } else if (!axes.empty()) {
    spec.attrs.push_back(IntsAttr("axes", axes));
  }
  RunOptions o;
  o.threads = threads;
  return RunImpl(spec, inputs, impl, o);
}

TEST(Reduce, MatchesReferenceForEveryOpAxisSetAndTarget) {
  std::mt19937 rng(31);
  for (const char* op : kOps) {
    for (int64_t opset : {11, 18}) {
      for (const ReduceCase& c : kCases) {
        Tensor x = RandomFloats(c.shape, rng);
        for (bool keepdims : {true, false}) {
          const RunResult ref = Reduce(op, opset, x, c.axes, keepdims, "");
          ASSERT_TRUE(ref.status.ok()) << ref.status.message();
          ForEachSimdTarget([&](const std::string& target) {
            SCOPED_TRACE(std::string(op) + " opset=" + std::to_string(opset) + " " +
                         ShapeToString(c.shape) + " axes=" + std::to_string(c.axes.size()) +
                         " keepdims=" + std::to_string(keepdims) + " target=" + target);
            const RunResult fast =
                Reduce(op, opset, x, c.axes, keepdims, std::string(op) + "_f32_hwy");
            ASSERT_TRUE(fast.status.ok()) << fast.status.message();
            // Sums accumulate in double like the reference: only the final rounding differs.
            EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 1e-6, 1e-6), "");
          });
        }
      }
    }
  }
}

TEST(Reduce, NaNAndInfinitiesPropagate) {
  std::mt19937 rng(37);
  for (const Shape& shape : {Shape{5, 1023}, Shape{1023, 5}}) {
    Tensor x = RandomFloats(shape, rng);
    InjectSpecials(x);
    for (const char* op : kOps) {
      for (int64_t axis : {0, 1}) {
        const RunResult ref = Reduce(op, 18, x, {axis}, true, "");
        const RunResult fast = Reduce(op, 18, x, {axis}, true, std::string(op) + "_f32_hwy");
        ASSERT_TRUE(fast.status.ok()) << fast.status.message();
        EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 1e-6, 1e-6), "")
            << op << " " << ShapeToString(shape) << " axis " << axis;
      }
    }
  }
}

TEST(Reduce, NoopWithEmptyAxesAndEmptyInputsUseTheReference) {
  std::mt19937 rng(41);
  const Tensor x = RandomFloats({3, 5}, rng);
  const NodeSpec noop{"ReduceMean", 18, {IntAttr("noop_with_empty_axes", 1)}};
  const RunResult r = RunImpl(noop, {x}, "ReduceMean_f32_hwy");
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(CompareFloats(r.outputs[0], x, 0, 0), "");
  // An empty reduction gives the identity (0 for sums, -inf for max), from the reference.
  const Tensor empty = Tensor::Allocate(DType::kFloat, {0, 4});
  for (const char* op : {"ReduceSum", "ReduceMax"}) {
    const RunResult ref = Reduce(op, 18, empty, {0}, false, "");
    const RunResult fast = Reduce(op, 18, empty, {0}, false, std::string(op) + "_f32_hwy");
    ASSERT_TRUE(fast.status.ok());
    EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 0, 0), "") << op;
  }
  // An axis out of range is the reference kernel's error.
  const RunResult bad = Reduce("ReduceSum", 13, x, {2}, true, "ReduceSum_f32_hwy");
  EXPECT_FALSE(bad.status.ok());
}

TEST(Reduce, LargeOnTwoThreads) {
  std::mt19937 rng(43);
  const Tensor x = RandomFloats({64, 4096}, rng);
  for (const char* op : {"ReduceSum", "ReduceMax", "ReduceL2"}) {
    for (int64_t axis : {0, 1}) {
      const RunResult ref = Reduce(op, 18, x, {axis}, false, "");
      const RunResult fast = Reduce(op, 18, x, {axis}, false, std::string(op) + "_f32_hwy", 2);
      ASSERT_TRUE(fast.status.ok());
      EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 1e-6, 1e-6), "")
          << op << " axis " << axis;
    }
  }
}

// A whole tensor (or a few long rows) reduced on two threads: each row in parts, combined in order.
// Every op, every target, with NaN and infinities in one of the tensors.
TEST(Reduce, LongRowsSplitAcrossThreads) {
  std::mt19937 rng(47);
  struct LongCase {
    Shape shape;
    std::vector<int64_t> axes;
  };
  for (const LongCase& c : {LongCase{{1, 3, 224, 224}, {}}, LongCase{{1, 300001}, {1}}}) {
    for (bool specials : {false, true}) {
      Tensor x = RandomFloats(c.shape, rng);
      if (specials) InjectSpecials(x);
      for (const char* op : kOps) {
        const RunResult ref = Reduce(op, 18, x, c.axes, false, "");
        ASSERT_TRUE(ref.status.ok()) << ref.status.message();
        ForEachSimdTarget([&](const std::string& target) {
          const RunResult fast = Reduce(op, 18, x, c.axes, false, std::string(op) + "_f32_hwy", 2);
          ASSERT_TRUE(fast.status.ok()) << fast.status.message();
          EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 1e-6, 1e-6), "")
              << op << " " << ShapeToString(c.shape) << " specials " << specials << " " << target;
        });
      }
    }
  }
}

// GlobalAveragePool / GlobalMaxPool on channels-first maps: rows of one or many elements, more
// rows than threads and fewer (one long row split in parts), rank 3 to 5, NaN and infinities.
TEST(Reduce, GlobalPoolsMatchReference) {
  std::mt19937 rng(53);
  for (const Shape& shape : {Shape{1, 512, 508, 1}, Shape{2, 3, 17}, Shape{1, 1, 300001},
                             Shape{2, 5, 3, 4, 5}, Shape{3, 2, 1, 1}}) {
    for (bool specials : {false, true}) {
      Tensor x = RandomFloats(shape, rng);
      if (specials) InjectSpecials(x);
      for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
        const NodeSpec spec{op, 1};
        const RunResult ref = RunImpl(spec, {x}, "");
        ASSERT_TRUE(ref.status.ok()) << ref.status.message();
        ForEachSimdTarget([&](const std::string& target) {
          for (int threads : {1, 2}) {
            RunOptions o;
            o.threads = threads;
            const RunResult fast = RunImpl(spec, {x}, std::string(op) + "_f32_hwy", o);
            ASSERT_TRUE(fast.status.ok()) << fast.status.message();
            EXPECT_EQ(fast.outputs[0].shape(), ref.outputs[0].shape());
            EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 1e-6, 1e-6), "")
                << op << " " << ShapeToString(shape) << " specials " << specials << " " << target
                << " threads " << threads;
          }
        });
      }
    }
  }
}

}  // namespace
}  // namespace onyx::testing
