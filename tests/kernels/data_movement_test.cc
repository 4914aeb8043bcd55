// The data-movement kernels (Transpose, Concat, Split, Slice, Gather) against the reference
// kernels, byte for byte, over element sizes 1, 2, 4 and 8, size-1 dims, empty tensors, every
// permutation of rank 4, negative slice steps, negative and int32 gather indices, and the errors
// (bad index, bad split) that must come back naming the node rather than crashing.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

Tensor RandomBytes(DType t, const Shape& shape, std::mt19937& rng) {
  Tensor x = Tensor::Allocate(t, shape);
  auto* p = static_cast<unsigned char*>(x.raw_data());
  for (size_t i = 0; i < x.nbytes(); ++i) p[i] = static_cast<unsigned char>(rng());
  return x;
}

void ExpectSameAsReference(const NodeSpec& spec, const std::vector<Tensor>& inputs,
                           const std::string& impl, int threads = 1) {
  const RunResult ref = RunImpl(spec, inputs, "");
  ASSERT_TRUE(ref.status.ok()) << ref.status.message();
  RunOptions o;
  o.threads = threads;
  const RunResult fast = RunImpl(spec, inputs, impl, o);
  ASSERT_TRUE(fast.status.ok()) << fast.status.message();
  ASSERT_EQ(fast.outputs.size(), ref.outputs.size());
  for (size_t i = 0; i < ref.outputs.size(); ++i)
    EXPECT_EQ(CompareBytes(fast.outputs[i], ref.outputs[i]), "") << "output " << i;
}

const DType kTypes[] = {DType::kUInt8, DType::kFloat16, DType::kFloat, DType::kInt64};

TEST(Transpose, EveryPermutationOfRank4AndEveryElementSize) {
  std::mt19937 rng(61);
  for (DType t : kTypes) {
    for (const Shape& shape : {Shape{2, 3, 5, 7}, Shape{1, 17, 1, 33}, Shape{3, 1, 40, 18}}) {
      const Tensor x = RandomBytes(t, shape, rng);
      std::vector<int64_t> perm = {0, 1, 2, 3};
      do {
        SCOPED_TRACE(std::string(DTypeName(t)) + " " + ShapeToString(shape) + " perm " +
                     std::to_string(perm[0]) + std::to_string(perm[1]) + std::to_string(perm[2]) +
                     std::to_string(perm[3]));
        ExpectSameAsReference({"Transpose", 13, {IntsAttr("perm", perm)}}, {x},
                              "Transpose_any_tiled");
      } while (std::next_permutation(perm.begin(), perm.end()));
    }
  }
}

TEST(Transpose, DefaultPermutationLargeMatricesAndEmpty) {
  std::mt19937 rng(63);
  // Default perm reverses the dims; 2-D and batched last-two swaps with odd sizes.
  for (const Shape& shape : {Shape{1023, 17}, Shape{3, 130, 77}, Shape{0, 5}, Shape{7}, Shape{}}) {
    const Tensor x = RandomBytes(DType::kFloat, shape, rng);
    ExpectSameAsReference({"Transpose", 13}, {x}, "Transpose_any_tiled");
  }
  // Attention permutation and NCHW -> NHWC on two threads.
  const Tensor q = RandomBytes(DType::kFloat, {2, 128, 12, 64}, rng);
  ExpectSameAsReference({"Transpose", 13, {IntsAttr("perm", {0, 2, 1, 3})}}, {q},
                        "Transpose_any_tiled", 2);
  const Tensor img = RandomBytes(DType::kFloat, {2, 64, 56, 56}, rng);
  ExpectSameAsReference({"Transpose", 13, {IntsAttr("perm", {0, 2, 3, 1})}}, {img},
                        "Transpose_any_tiled", 2);
  ExpectSameAsReference({"Transpose", 13, {IntsAttr("perm", {0, 3, 1, 2})}}, {img},
                        "Transpose_any_tiled", 2);
  // Images with 2, 3 or 4 channels to channels-last (interleaved stores, odd tails).
  for (const Shape& shape : {Shape{2, 3, 37, 29}, Shape{1, 2, 33, 17}, Shape{1, 4, 19, 23}}) {
    const Tensor rgb = RandomBytes(DType::kFloat, shape, rng);
    ExpectSameAsReference({"Transpose", 13, {IntsAttr("perm", {0, 2, 3, 1})}}, {rgb},
                          "Transpose_any_tiled", 2);
  }
}

// ShuffleNet's channel shuffle on channels-last data: per pixel [G][K] -> [K][G] with G = 2..4
// (interleaved stores in whole vectors, then four lanes, then scalar rows), on every target.
TEST(Transpose, ChannelShuffleOfEachPixel) {
  std::mt19937 rng(67);
  ForEachSimdTarget([&](const std::string& target) {
    for (int64_t g : {2, 3, 4}) {
      for (int64_t k : {3, 7, 21, 28, 34, 68}) {
        SCOPED_TRACE(target + " G " + std::to_string(g) + " K " + std::to_string(k));
        const Tensor x = RandomBytes(DType::kFloat, {1, 5, 6, g, k}, rng);
        for (int threads : {1, 2})
          ExpectSameAsReference({"Transpose", 13, {IntsAttr("perm", {0, 1, 2, 4, 3})}}, {x},
                                "Transpose_any_tiled", threads);
      }
    }
  });
}

TEST(Transpose, BadPermutationGivesTheReferenceError) {
  const Tensor x = Tensor::Allocate(DType::kFloat, {2, 3});
  const RunResult r =
      RunImpl({"Transpose", 13, {IntsAttr("perm", {0, 0})}}, {x}, "Transpose_any_tiled");
  EXPECT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("perm"), std::string::npos) << r.status.message();
}

// A view op's output: the shape written out by hand here, and input 0's bytes in their order.
void ExpectView(const NodeSpec& spec, const std::vector<Tensor>& inputs, const std::string& impl,
                const Shape& shape) {
  SCOPED_TRACE(spec.op + " to " + ShapeToString(shape));
  const RunResult r = RunImpl(spec, inputs, impl);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.impl, impl);
  ASSERT_EQ(r.outputs[0].shape(), shape);
  ASSERT_EQ(r.outputs[0].dtype(), inputs[0].dtype());
  ASSERT_EQ(r.outputs[0].nbytes(), inputs[0].nbytes());
  if (inputs[0].nbytes() > 0)
    EXPECT_EQ(std::memcmp(r.outputs[0].raw_data(), inputs[0].raw_data(), inputs[0].nbytes()), 0);
}

TEST(ViewOps, ReshapeFlattenSqueezeUnsqueezeKeepTheBytes) {
  std::mt19937 rng(67);
  for (DType t : kTypes) {
    SCOPED_TRACE(DTypeName(t));
    const Tensor x = RandomBytes(t, {2, 1, 3, 4}, rng);
    const std::vector<std::pair<std::vector<int64_t>, Shape>> reshapes = {
        {{24}, {24}},
        {{-1, 4}, {6, 4}},
        {{0, 0, -1}, {2, 1, 12}},  // 0 copies the input's dim
        {{2, 12}, {2, 12}},
        {{4, 0, 3, 2}, {4, 1, 3, 2}},
    };
    for (const auto& [to, want] : reshapes)
      ExpectView({"Reshape", 14}, {x, Int64Tensor({static_cast<int64_t>(to.size())}, to)},
                 "Reshape_any_view", want);
    // allowzero: a 0 is a zero-sized dim, not a copy (an empty input).
    const Tensor empty = RandomBytes(t, {0, 3}, rng);
    ExpectView({"Reshape", 14, {IntAttr("allowzero", 1)}}, {empty, Int64Tensor({2}, {3, 0})},
               "Reshape_any_view", {3, 0});
    const std::vector<std::pair<int64_t, Shape>> flattens = {
        {0, {1, 24}}, {1, {2, 12}}, {2, {2, 12}}, {4, {24, 1}}};
    for (const auto& [axis, want] : flattens)
      ExpectView({"Flatten", 13, {IntAttr("axis", axis)}}, {x}, "Flatten_any_view", want);
    ExpectView({"Squeeze", 13}, {x}, "Squeeze_any_view", {2, 3, 4});
    ExpectView({"Squeeze", 13}, {x, Int64Tensor({1}, {-3})}, "Squeeze_any_view", {2, 3, 4});
    ExpectView({"Unsqueeze", 13}, {x, Int64Tensor({3}, {0, -1, 3})}, "Unsqueeze_any_view",
               {1, 2, 1, 1, 3, 4, 1});
  }
}

TEST(ViewOps, BadShapesAndAxesGiveTheReferenceErrors) {
  const Tensor x = Tensor::Allocate(DType::kFloat, {2, 3});
  struct Bad {
    NodeSpec spec;
    Tensor second;
    std::string impl, words;
  };
  const std::vector<Bad> cases = {
      {{"Reshape", 14}, Int64Tensor({2}, {4, 2}), "Reshape_any_view", "reshape"},
      {{"Reshape", 14}, Int64Tensor({2}, {-1, -1}), "Reshape_any_view", "-1"},
      {{"Squeeze", 13}, Int64Tensor({1}, {0}), "Squeeze_any_view", "squeeze"},
      {{"Unsqueeze", 13}, Int64Tensor({2}, {1, 1}), "Unsqueeze_any_view", "more than once"},
      {{"Unsqueeze", 13}, Int64Tensor({1}, {5}), "Unsqueeze_any_view", "axes"},
  };
  for (const Bad& b : cases) {
    const RunResult r = RunImpl(b.spec, {x, b.second}, b.impl);
    const RunResult ref = RunImpl(b.spec, {x, b.second}, "");
    EXPECT_FALSE(r.status.ok()) << b.impl;
    EXPECT_EQ(r.status.message(), ref.status.message());
    EXPECT_NE(r.status.message().find(b.words), std::string::npos) << r.status.message();
  }
}

// Where with a scalar X or Y against a full condition (its masked fixed-stride loops), every
// element size, NaN bit patterns kept, against a plain loop written here.
TEST(Where, ScalarOperandAgainstAFullCondition) {
  std::mt19937 rng(71);
  for (DType t : kTypes) {
    SCOPED_TRACE(DTypeName(t));
    const Shape shape{3, 5, 67};
    Tensor cond = Tensor::Allocate(DType::kBool, shape);
    for (int64_t i = 0; i < cond.numel(); ++i) cond.data<bool>()[i] = (rng() & 1) != 0;
    const Tensor full = RandomBytes(t, shape, rng);
    const Tensor scalar = RandomBytes(t, {}, rng);
    const size_t es = DTypeSize(t);
    for (bool scalar_x : {true, false}) {
      const Tensor& x = scalar_x ? scalar : full;
      const Tensor& y = scalar_x ? full : scalar;
      const RunResult r = RunImpl({"Where", 16}, {cond, x, y}, "");
      ASSERT_TRUE(r.status.ok()) << r.status.message();
      ASSERT_EQ(r.outputs[0].shape(), shape);
      const auto* out = static_cast<const unsigned char*>(r.outputs[0].raw_data());
      for (int64_t i = 0; i < cond.numel(); ++i) {
        const Tensor& from = cond.data<bool>()[i] ? x : y;
        const auto* want =
            static_cast<const unsigned char*>(from.raw_data()) + (from.numel() == 1 ? 0 : i * es);
        ASSERT_EQ(std::memcmp(out + i * es, want, es), 0) << "element " << i;
      }
    }
  }
}

TEST(Concat, EveryAxisElementSizeAndEmptyInputs) {
  std::mt19937 rng(65);
  for (DType t : kTypes) {
    for (int64_t axis : {0, 1, 2, -1}) {
      std::vector<Tensor> inputs;
      for (int64_t len : {3, 0, 1, 17}) {
        Shape s = {2, 5, 7};
        s[axis < 0 ? axis + 3 : axis] = len;
        inputs.push_back(RandomBytes(t, s, rng));
      }
      SCOPED_TRACE(std::string(DTypeName(t)) + " axis " + std::to_string(axis));
      ExpectSameAsReference({"Concat", 13, {IntAttr("axis", axis)}}, inputs, "Concat_any_memcpy");
    }
  }
  const Tensor a = RandomBytes(DType::kFloat, {1, 512, 28, 28}, rng);
  const Tensor b = RandomBytes(DType::kFloat, {1, 128, 28, 28}, rng);
  ExpectSameAsReference({"Concat", 13, {IntAttr("axis", 1)}}, {a, b}, "Concat_any_memcpy", 2);
  // Channels-last Concat (SqueezeNet's fire modules): many short rows split over two threads.
  const Tensor c = RandomBytes(DType::kFloat, {1, 55, 55, 64}, rng);
  const Tensor d = RandomBytes(DType::kFloat, {1, 55, 55, 48}, rng);
  ExpectSameAsReference({"Concat", 13, {IntAttr("axis", 3)}}, {c, d, c}, "Concat_any_memcpy", 2);
  // Mismatched dims are the reference kernel's error.
  const RunResult bad =
      RunImpl({"Concat", 13, {IntAttr("axis", 0)}},
              {RandomBytes(DType::kFloat, {2, 3}, rng), RandomBytes(DType::kFloat, {2, 4}, rng)},
              "Concat_any_memcpy");
  EXPECT_FALSE(bad.status.ok());
}

TEST(Split, AttributeInputAndNumOutputs) {
  std::mt19937 rng(67);
  const Tensor x = RandomBytes(DType::kFloat, {4, 10, 6}, rng);
  // Opset 11: split attribute; opset 13: split input; opset 18: num_outputs with a short last
  // part; equal parts without split.
  ExpectSameAsReference({"Split", 11, {IntAttr("axis", 1), IntsAttr("split", {2, 0, 5, 3})}, 4},
                        {x}, "Split_any_memcpy");
  ExpectSameAsReference({"Split", 13, {IntAttr("axis", -1)}, 2}, {x, Int64Tensor({2}, {1, 5})},
                        "Split_any_memcpy");
  ExpectSameAsReference({"Split", 18, {IntAttr("axis", 1), IntAttr("num_outputs", 3)}, 3}, {x},
                        "Split_any_memcpy");
  ExpectSameAsReference({"Split", 13, {IntAttr("axis", 0)}, 4}, {x}, "Split_any_memcpy");
  for (DType t : kTypes) {
    const Tensor y = RandomBytes(t, {3, 1023}, rng);
    ExpectSameAsReference({"Split", 13, {IntAttr("axis", 1)}, 3}, {y}, "Split_any_memcpy", 2);
  }
  // Sizes that do not add up are the reference kernel's error.
  const RunResult bad = RunImpl({"Split", 13, {IntAttr("axis", 1)}, 2},
                                {x, Int64Tensor({2}, {3, 3})}, "Split_any_memcpy");
  EXPECT_FALSE(bad.status.ok());
  EXPECT_NE(bad.status.message().find("sum to"), std::string::npos) << bad.status.message();
}

TEST(Slice, StepsClampingNegativeAxesAndAttributes) {
  std::mt19937 rng(69);
  const Tensor x = RandomBytes(DType::kFloat, {5, 9, 13}, rng);
  struct Args {
    std::vector<int64_t> starts, ends, axes, steps;
  };
  const int64_t kBig = int64_t{1} << 62;
  const Args args[] = {
      {{1}, {4}, {0}, {1}},
      {{0, 2}, {kBig, -1}, {1, 2}, {1, 1}},
      {{-1}, {-kBig}, {-1}, {-1}},  // reversed last axis
      {{8, 10}, {0, 1}, {1, 2}, {-2, -3}},
      {{0, 0, 0}, {5, 9, 13}, {0, 1, 2}, {2, 3, 4}},
      {{3}, {2}, {0}, {1}},  // empty
      {{-100}, {100}, {2}, {5}},
  };
  for (const Args& a : args) {
    const int64_t n = static_cast<int64_t>(a.starts.size());
    ExpectSameAsReference({"Slice", 13},
                          {x, Int64Tensor({n}, a.starts), Int64Tensor({n}, a.ends),
                           Int64Tensor({n}, a.axes), Int64Tensor({n}, a.steps)},
                          "Slice_any_memcpy");
  }
  // Opset 9 attributes, int8 and int64 data, a big contiguous slice on two threads.
  ExpectSameAsReference({"Slice", 9, {IntsAttr("starts", {1, -3}), IntsAttr("ends", {4, kBig})}},
                        {RandomBytes(DType::kInt8, {6, 7}, rng)}, "Slice_any_memcpy");
  const Tensor big = RandomBytes(DType::kInt64, {64, 2000}, rng);
  ExpectSameAsReference(
      {"Slice", 13},
      {big, Int64Tensor({1}, {10}), Int64Tensor({1}, {60}), Int64Tensor({1}, {0}), Tensor()},
      "Slice_any_memcpy", 2);
  // A zero step is the reference kernel's error.
  const RunResult bad = RunImpl({"Slice", 13},
                                {x, Int64Tensor({1}, {0}), Int64Tensor({1}, {3}),
                                 Int64Tensor({1}, {0}), Int64Tensor({1}, {0})},
                                "Slice_any_memcpy");
  EXPECT_FALSE(bad.status.ok());
}

TEST(Gather, EveryAxisNegativeAndInt32Indices) {
  std::mt19937 rng(71);
  for (DType t : kTypes) {
    const Tensor data = RandomBytes(t, {6, 7, 9}, rng);
    for (int64_t axis : {0, 1, 2, -1}) {
      const int64_t dim = data.dim(axis < 0 ? axis + 3 : axis);
      std::vector<int64_t> idx = {0, dim - 1, -1, -dim, 2, 2};
      SCOPED_TRACE(std::string(DTypeName(t)) + " axis " + std::to_string(axis));
      ExpectSameAsReference({"Gather", 13, {IntAttr("axis", axis)}},
                            {data, Int64Tensor({2, 3}, idx)}, "Gather_any_memcpy");
      Tensor idx32 = Tensor::Allocate(DType::kInt32, {6});
      for (int i = 0; i < 6; ++i) idx32.data<int32_t>()[i] = static_cast<int32_t>(idx[i]);
      ExpectSameAsReference({"Gather", 13, {IntAttr("axis", axis)}}, {data, idx32},
                            "Gather_any_memcpy");
      ExpectSameAsReference({"Gather", 13, {IntAttr("axis", axis)}}, {data, Int64Tensor({}, {1})},
                            "Gather_any_memcpy");
    }
  }
  // Embedding lookup: axis 0 rows on two threads.
  const Tensor table = RandomBytes(DType::kFloat, {1000, 768}, rng);
  std::vector<int64_t> ids(512);
  for (auto& v : ids) v = static_cast<int64_t>(rng() % 1000);
  ExpectSameAsReference({"Gather", 13}, {table, Int64Tensor({4, 128}, ids)}, "Gather_any_memcpy",
                        2);
}

TEST(Gather, OutOfRangeIndexIsAClearError) {
  std::mt19937 rng(73);
  const Tensor data = RandomBytes(DType::kFloat, {4, 3}, rng);
  for (int64_t bad : {int64_t{4}, int64_t{-5}, int64_t{1} << 40}) {
    const RunResult r =
        RunImpl({"Gather", 13}, {data, Int64Tensor({3}, {0, bad, 1})}, "Gather_any_memcpy");
    ASSERT_FALSE(r.status.ok()) << bad;
    EXPECT_NE(r.status.message().find("out of range"), std::string::npos) << r.status.message();
    EXPECT_NE(r.status.message().find("position 1"), std::string::npos) << r.status.message();
  }
}

}  // namespace
}  // namespace onyx::testing

namespace onyx::testing {
namespace {

// Cast_any_convert (bool and integers of up to 32 bits to float32 or double) against the
// reference kernel, byte for byte: random values, each type's extremes, and a size that splits
// across threads.
TEST(Cast, FastConversionsMatchReference) {
  std::mt19937 rng(61);
  for (DType from :
       {DType::kBool, DType::kInt8, DType::kUInt8, DType::kInt16, DType::kUInt16, DType::kInt32}) {
    for (int64_t n : {int64_t{7}, int64_t{300001}}) {
      Tensor x = Tensor::Allocate(from, {n});
      auto* bytes = static_cast<uint8_t*>(x.raw_data());
      for (size_t i = 0; i < x.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(rng());
      if (from == DType::kBool)
        for (int64_t i = 0; i < n; ++i) bytes[i] &= 1;
      if (from == DType::kInt32) {  // extremes: -2^31 and 2^31 - 1 round to float
        x.data<int32_t>()[0] = INT32_MIN;
        x.data<int32_t>()[1] = INT32_MAX;
      }
      for (DType to : {DType::kFloat, DType::kDouble}) {
        const NodeSpec spec{"Cast", 21, {IntAttr("to", static_cast<int64_t>(to))}};
        const RunResult ref = RunImpl(spec, {x}, "");
        ASSERT_TRUE(ref.status.ok()) << ref.status.message();
        for (int threads : {1, 2}) {
          RunOptions o;
          o.threads = threads;
          const RunResult fast = RunImpl(spec, {x}, "Cast_any_convert", o);
          ASSERT_TRUE(fast.status.ok()) << fast.status.message();
          EXPECT_EQ(CompareBytes(fast.outputs[0], ref.outputs[0]), "")
              << DTypeName(from) << " -> " << DTypeName(to) << " n " << n << " threads " << threads;
        }
      }
    }
  }
}

}  // namespace
}  // namespace onyx::testing
