// The few-positions convolution (Conv / FusedConv / NhwcConv "_small_hwy": windows gathered into
// rows, one pass over W in column panels) against the reference kernels, which sum in double:
// 1-D and 2-D, strides, dilations, asymmetric and SAME pads, batches, channel counts that leave
// vector tails, bias, residual and activations, W packed at plan time or per run, one and two
// threads, every Highway target. And the positions limit: a larger map is not taken.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

struct Case {
  Shape x;  // stored shape (N, C, spatial...) or (N, spatial..., C) for NhwcConv
  Shape w;  // (M, C, k...)
  std::vector<ir::Attribute> attrs;
};

TEST(SmallConv, MatchesReference) {
  std::mt19937 rng(97);
  const std::vector<Case> cases = {
      // A learned STFT: 1 -> 258 channels, kernel 256, stride 128, 4 positions.
      {{1, 1, 576}, {258, 1, 256}, {IntsAttr("strides", {128})}},
      // 3-tap encoder layers, padding 1, strides 1 and 2, down to one position.
      {{1, 129, 4}, {128, 129, 3}, {IntsAttr("pads", {1, 1})}},
      {{1, 128, 4}, {64, 128, 3}, {IntsAttr("pads", {1, 1}), IntsAttr("strides", {2})}},
      {{1, 64, 1}, {128, 64, 3}, {IntsAttr("pads", {1, 1})}},
      {{1, 128, 1}, {1, 128, 1}, {}},
      // Dilation, asymmetric pads, a batch of two.
      {{2, 5, 7}, {7, 5, 3}, {IntsAttr("dilations", {3}), IntsAttr("pads", {2, 0})}},
      // 2-D: a 2x2 map, SAME padding with stride, a 1x1 map.
      {{1, 17, 2, 2}, {33, 17, 3, 3}, {IntsAttr("pads", {1, 1, 1, 1})}},
      {{1, 8, 5, 3},
       {20, 8, 2, 2},
       {StringAttr("auto_pad", "SAME_UPPER"), IntsAttr("strides", {2, 2})}},
      {{2, 48, 1, 1}, {70, 48, 1, 1}, {}},
  };
  for (const Case& c : cases) {
    const Tensor x = RandomFloats(c.x, rng);
    const Tensor w = RandomFloats(c.w, rng, -1.f, 1.f);
    const Tensor b = RandomFloats({c.w[0]}, rng);
    const std::string what = ShapeToString(c.x) + " * " + ShapeToString(c.w);
    // Plain Conv, with and without bias.
    for (bool bias : {false, true}) {
      NodeSpec spec{"Conv", 11, c.attrs};
      std::vector<Tensor> inputs = {x, w};
      if (bias) inputs.push_back(b);
      const RunResult ref = RunImpl(spec, inputs, "");
      ASSERT_TRUE(ref.status.ok()) << ref.status.message();
      ExpectImplMatches(spec, inputs, "Conv_f32_small_hwy", ref.outputs[0], 1e-4, 1e-5,
                        what + " bias " + std::to_string(bias));
    }
    // FusedConv with residual and an activation.
    std::vector<ir::Attribute> fused = c.attrs;
    fused.push_back(StringAttr("activation", "Relu"));
    NodeSpec spec{"FusedConv", 1, fused};
    spec.domain = "com.onyx";
    const Tensor z = RandomFloats(ReferenceOutputShape(spec, {x, w}), rng);
    const std::vector<Tensor> inputs = {x, w, b, z};
    const RunResult ref = RunImpl(spec, inputs, "");
    ASSERT_TRUE(ref.status.ok()) << ref.status.message();
    ExpectImplMatches(spec, inputs, "FusedConv_f32_small_hwy", ref.outputs[0], 1e-4, 1e-5,
                      what + " fused");
  }
}

TEST(SmallConv, ChannelsLastMatchesReference) {
  std::mt19937 rng(101);
  // (N, H, W, C): a 2x2 map padded to 2x2 outputs; two 1x3 images giving 1x2 each.
  struct ChannelsLastCase {
    Shape x, w;
    std::vector<int64_t> pads;
  };
  for (const auto& [xs, ws, pads] :
       std::vector<ChannelsLastCase>{{{1, 2, 2, 19}, {24, 19, 3, 3}, {1, 1, 1, 1}},
                                     {{2, 1, 3, 16}, {9, 16, 1, 2}, {0, 0, 0, 0}}}) {
    const Tensor x = RandomFloats(xs, rng);
    const Tensor w = RandomFloats(ws, rng, -1.f, 1.f);
    const Tensor b = RandomFloats({ws[0]}, rng);
    NodeSpec spec{"NhwcConv", 1, {IntsAttr("pads", pads), StringAttr("activation", "Sigmoid")}};
    spec.domain = "com.onyx";
    const RunResult ref = RunImpl(spec, {x, w, b}, "");
    ASSERT_TRUE(ref.status.ok()) << ref.status.message();
    ExpectImplMatches(spec, {x, w, b}, "NhwcConv_f32_small_hwy", ref.outputs[0], 1e-4, 1e-5,
                      ShapeToString(xs));
  }
}

TEST(SmallConv, LargerMapsAndGroupsAreLeftToOthers) {
  std::mt19937 rng(103);
  const Tensor w = RandomFloats({4, 3, 3}, rng);
  // 9 output positions: over the limit of 8.
  RunResult r = RunImpl({"Conv", 11, {IntsAttr("pads", {1, 1})}}, {RandomFloats({1, 3, 9}, rng), w},
                        "Conv_f32_small_hwy");
  EXPECT_FALSE(r.status.ok());
  r = RunImpl({"Conv", 11, {IntAttr("group", 3)}},
              {RandomFloats({1, 3, 4}, rng), RandomFloats({3, 1, 3}, rng)}, "Conv_f32_small_hwy");
  EXPECT_FALSE(r.status.ok());
}

}  // namespace
}  // namespace onyx::testing
