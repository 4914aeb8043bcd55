// The Highway LayerNormalization and inference BatchNormalization kernels against the reference
// kernels: every axis, optional bias, the Mean/InvStdDev outputs, odd row lengths, broadcast
// parameters (reference fallback), training outputs (reference), and in-place.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

TEST(LayerNorm, MatchesReferenceWithAndWithoutBiasAndStatistics) {
  std::mt19937 rng(51);
  struct Case {
    Shape x;
    int64_t axis;
  };
  const Case cases[] = {{{2, 3, 17}, -1}, {{4, 768}, -1}, {{2, 5, 7}, 1},
                        {{3, 1}, -1},     {{2, 1023}, 1}, {{6, 33}, 0}};
  for (const Case& c : cases) {
    const Tensor x = RandomFloats(c.x, rng, -3.f, 5.f);
    const int64_t axis = c.axis < 0 ? c.axis + static_cast<int64_t>(c.x.size()) : c.axis;
    const Shape norm(c.x.begin() + axis, c.x.end());
    const Tensor scale = RandomFloats(norm, rng, 0.5f, 1.5f);
    const Tensor bias = RandomFloats(norm, rng);
    for (bool with_bias : {true, false}) {
      for (int outputs : {1, 3}) {
        NodeSpec spec{"LayerNormalization", 17, {IntAttr("axis", c.axis)}, outputs};
        spec.attrs.push_back(FloatAttr("epsilon", 1e-3f));
        const std::vector<Tensor> in = {x, scale, with_bias ? bias : Tensor()};
        const RunResult ref = RunImpl(spec, in, "");
        ASSERT_TRUE(ref.status.ok()) << ref.status.message();
        ForEachSimdTarget([&](const std::string& target) {
          SCOPED_TRACE(ShapeToString(c.x) + " axis=" + std::to_string(c.axis) +
                       " bias=" + std::to_string(with_bias) +
                       " outputs=" + std::to_string(outputs) + " target=" + target);
          for (bool in_place : {false, true}) {
            RunOptions o;
            o.output_over_input0 = in_place;
            const RunResult fast = RunImpl(spec, in, "LayerNormalization_f32_hwy", o);
            ASSERT_TRUE(fast.status.ok()) << fast.status.message();
            for (int i = 0; i < outputs; ++i)
              EXPECT_EQ(CompareFloats(fast.outputs[i], ref.outputs[i], 1e-6, 1e-6), "")
                  << "output " << i;
          }
        });
      }
    }
  }
}

TEST(LayerNorm, BroadcastScaleUsesTheReference) {
  std::mt19937 rng(53);
  const Tensor x = RandomFloats({2, 3, 4}, rng);
  const Tensor scale = RandomFloats({1, 4}, rng);  // broadcasts onto [3, 4]
  const NodeSpec spec{"LayerNormalization", 17, {IntAttr("axis", 1)}};
  const RunResult ref = RunImpl(spec, {x, scale}, "");
  const RunResult fast = RunImpl(spec, {x, scale}, "LayerNormalization_f32_hwy");
  ASSERT_TRUE(ref.status.ok() && fast.status.ok()) << fast.status.message();
  EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 0, 0), "");
}

TEST(LayerNorm, LargeOnTwoThreads) {
  std::mt19937 rng(55);
  const Tensor x = RandomFloats({512, 768}, rng);
  const Tensor scale = RandomFloats({768}, rng);
  const Tensor bias = RandomFloats({768}, rng);
  const NodeSpec spec{"LayerNormalization", 17, {}, 3};
  const RunResult ref = RunImpl(spec, {x, scale, bias}, "");
  RunOptions o;
  o.threads = 2;
  const RunResult fast = RunImpl(spec, {x, scale, bias}, "LayerNormalization_f32_hwy", o);
  ASSERT_TRUE(fast.status.ok());
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(CompareFloats(fast.outputs[i], ref.outputs[i], 1e-6, 1e-6), "") << i;
}

TEST(BatchNorm, InferenceMatchesReference) {
  std::mt19937 rng(57);
  for (const Shape& shape :
       {Shape{2, 3, 5, 7}, Shape{1, 16, 17}, Shape{4, 5}, Shape{2, 3, 2, 2, 3}}) {
    const int64_t c = shape[1];
    const Tensor x = RandomFloats(shape, rng);
    const Tensor scale = RandomFloats({c}, rng);
    const Tensor bias = RandomFloats({c}, rng);
    const Tensor mean = RandomFloats({c}, rng);
    const Tensor var = RandomFloats({c}, rng, 0.1f, 2.f);
    for (int64_t opset : {9, 15}) {
      const NodeSpec spec{"BatchNormalization", opset, {FloatAttr("epsilon", 1e-3f)}};
      const std::vector<Tensor> in = {x, scale, bias, mean, var};
      const RunResult ref = RunImpl(spec, in, "");
      ASSERT_TRUE(ref.status.ok()) << ref.status.message();
      ForEachSimdTarget([&](const std::string& target) {
        SCOPED_TRACE(ShapeToString(shape) + " opset=" + std::to_string(opset) + " " + target);
        for (bool in_place : {false, true}) {
          RunOptions o;
          o.output_over_input0 = in_place;
          const RunResult fast = RunImpl(spec, in, "BatchNormalization_f32_hwy", o);
          ASSERT_TRUE(fast.status.ok()) << fast.status.message();
          EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 1e-6, 1e-6), "");
        }
      });
    }
  }
}

// oneDNN's LRN (x86) against the reference for odd window sizes, NCHW and channels-last; even
// sizes, whose window ONNX places off-centre, are refused and stay on the reference.
TEST(Lrn, OnednnMatchesReferenceForOddSizes) {
  const std::vector<std::string> impls = ImplNames("LRN", 13);
  if (std::find(impls.begin(), impls.end(), "LRN_f32_onednn") == impls.end())
    GTEST_SKIP() << "no oneDNN LRN on this architecture";
  std::mt19937 rng(59);
  for (const Shape& shape : {Shape{1, 64, 13, 11}, Shape{2, 7, 5, 3}, Shape{1, 3, 4, 4}}) {
    const Tensor x = RandomFloats(shape, rng);
    for (int64_t size : {1, 3, 5, 4}) {
      for (float beta : {0.75f, 0.5f}) {
        std::vector<ir::Attribute> attrs = {IntAttr("size", size), FloatAttr("alpha", 2e-3f),
                                            FloatAttr("beta", beta), FloatAttr("bias", 1.5f)};
        SCOPED_TRACE(ShapeToString(shape) + " size " + std::to_string(size));
        for (const char* domain : {"", "com.onyx"}) {
          NodeSpec spec{*domain ? "NhwcLRN" : "LRN", *domain ? 1 : 13, attrs};
          spec.domain = domain;
          const RunResult ref = RunImpl(spec, {x}, "");
          ASSERT_TRUE(ref.status.ok()) << ref.status.message();
          const RunResult fast = RunImpl(spec, {x}, spec.op + "_f32_onednn");
          if (size % 2 == 0) {
            EXPECT_FALSE(fast.status.ok()) << "even sizes must stay on the reference";
            continue;
          }
          ASSERT_TRUE(fast.status.ok()) << fast.status.message();
          EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 1e-5, 1e-6), "");
        }
      }
    }
  }
}

// ChannelAffine (channels at axis 1) and NhwcChannelAffine (channels last), with and without a
// fused activation, odd channel counts (vector tails), in place and on two threads.
TEST(ChannelAffine, MatchesReferenceInBothLayouts) {
  std::mt19937 rng(61);
  for (const Shape& shape : {Shape{1, 13, 9, 7}, Shape{2, 40, 5, 5}, Shape{1, 256, 28, 28}}) {
    for (const char* op : {"ChannelAffine", "NhwcChannelAffine"}) {
      const int64_t c = std::string(op) == "ChannelAffine" ? shape[1] : shape.back();
      Tensor x = RandomFloats(shape, rng);
      InjectSpecials(x);
      const Tensor scale = RandomFloats({c}, rng), shift = RandomFloats({c}, rng);
      for (const std::vector<ir::Attribute>& attrs :
           {std::vector<ir::Attribute>{},
            {StringAttr("activation", "Relu")},
            {StringAttr("activation", "Clip"), FloatsAttr("activation_params", {-1.f, 2.5f})}}) {
        NodeSpec spec{op, 1, attrs};
        spec.domain = "com.onyx";
        const RunResult ref = RunImpl(spec, {x, scale, shift}, "");
        ASSERT_TRUE(ref.status.ok()) << ref.status.message();
        ForEachSimdTarget([&](const std::string& target) {
          SCOPED_TRACE(std::string(op) + " " + ShapeToString(shape) + " " + target + " " +
                       std::to_string(attrs.size()));
          for (bool in_place : {false, true}) {
            RunOptions o;
            o.output_over_input0 = in_place;
            o.threads = 2;
            const RunResult fast =
                RunImpl(spec, {x, scale, shift}, std::string(op) + "_f32_hwy", o);
            ASSERT_TRUE(fast.status.ok()) << fast.status.message();
            EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 1e-6, 1e-6), "");
          }
        });
      }
    }
  }
}

TEST(BatchNorm, TrainingModeIsLeftToTheReference) {
  std::mt19937 rng(59);
  const Tensor x = RandomFloats({2, 3, 4}, rng);
  const Tensor p = RandomFloats({3}, rng, 0.5f, 1.f);
  const NodeSpec spec{"BatchNormalization", 15, {IntAttr("training_mode", 1)}, 3};
  const RunResult r = RunImpl(spec, {x, p, p, p, p}, "BatchNormalization_f32_hwy");
  EXPECT_FALSE(r.status.ok());  // supports() rejects: the planner picks the reference kernel
  EXPECT_NE(r.status.message().find("training_mode"), std::string::npos) << r.status.message();
}

}  // namespace
}  // namespace onyx::testing
