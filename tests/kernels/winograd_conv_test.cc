// The Winograd F(2x2, 3x3) convolution (com.onyx NhwcConv, kernels/common/winograd_conv_*.cc)
// against the reference NhwcConv kernel, which sums directly in double: padding variants, maps
// with odd sizes, channel counts with vector and panel tails, several images, bias, residual and
// activations, weights transformed at plan time or per run, one and two threads (block and panel
// splits), every Highway target; Inf and NaN inputs; the shapes it must leave to others.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

constexpr const char* kImpl = "NhwcConv_f32_hwy";

NodeSpec ConvSpec(std::vector<ir::Attribute> attrs) {
  attrs.push_back(IntsAttr("kernel_shape", {3, 3}));
  NodeSpec spec{"NhwcConv", 1, attrs};
  spec.domain = "com.onyx";
  return spec;
}

TEST(WinogradConv, MatchesReference) {
  std::mt19937 rng(101);
  const std::vector<std::vector<ir::Attribute>> paddings = {
      {IntsAttr("pads", {1, 1, 1, 1})},       {},  // no padding
      {IntsAttr("pads", {0, 1, 2, 0})},            // asymmetric
      {IntsAttr("pads", {2, 2, 2, 2})},            // wider than the filter reaches
      {StringAttr("auto_pad", "SAME_LOWER")},
  };
  struct Layer {
    Shape x;    // N, H, W, C
    int64_t k;  // output channels
  };
  const std::vector<Layer> layers = {
      {{1, 11, 13, 9}, 64},    // a channel tail on every target, one panel
      {{2, 12, 13, 37}, 70},   // two images, odd map, a panel of 6 channels
      {{1, 14, 14, 64}, 128},  // whole vectors; two panels, split between two threads
      {{1, 11, 11, 16}, 192},  // three panels: two threads split the tiles instead
      {{1, 27, 27, 16}, 64},   // several blocks of tiles
  };
  for (const Layer& l : layers) {
    for (const std::vector<ir::Attribute>& pad : paddings) {
      const Tensor x = RandomFloats(l.x, rng);
      const Tensor w = RandomFloats({l.k, l.x[3], 3, 3}, rng, -1.f, 1.f);
      const Tensor b = RandomFloats({l.k}, rng);
      const Tensor z = RandomFloats(ReferenceOutputShape(ConvSpec(pad), {x, w}), rng);
      struct Case {
        std::vector<ir::Attribute> act;
        bool bias, residual;
      };
      const std::vector<Case> cases = {
          {{}, false, false},
          {{StringAttr("activation", "Relu")}, true, false},
          {{StringAttr("activation", "Clip"), FloatsAttr("activation_params", {-2.f, 6.f})},
           true,
           false},
          {{StringAttr("activation", "Relu")}, true, true},
          {{StringAttr("activation", "Sigmoid")}, false, true},  // applied over the output after
      };
      for (const Case& c : cases) {
        std::vector<ir::Attribute> attrs = pad;
        for (const ir::Attribute& a : c.act) attrs.push_back(a);
        const NodeSpec spec = ConvSpec(attrs);
        std::vector<Tensor> inputs = {x, w};
        if (c.bias || c.residual) inputs.push_back(c.bias ? b : Tensor());
        if (c.residual) inputs.push_back(z);
        const RunResult ref = RunImpl(spec, inputs, "");
        ASSERT_TRUE(ref.status.ok()) << ref.status.message();
        // Sums of up to 9 * 64 products of size ~4 (outputs ~50): float32 Winograd differs
        // from double direct summation by about 1e-5 there.
        ExpectImplMatches(spec, inputs, kImpl, ref.outputs[0], 2e-4, 1e-5,
                          ShapeToString(l.x) + " K " + std::to_string(l.k) + " act " +
                              std::to_string(c.act.size()) + " bias " + std::to_string(c.bias) +
                              " residual " + std::to_string(c.residual));
      }
    }
  }
}

// Inf and NaN reach exactly the outputs whose window holds them, with the signs and NaNs of direct
// summation: the transforms alone would spread them over whole 2x2 tiles and turn Inf into NaN.
TEST(WinogradConv, NonFiniteInputsPropagateAsInDirectConvolution) {
  std::mt19937 rng(103);
  const int64_t c = 24, k = 64, h = 9, wd = 10;
  Tensor x = RandomFloats({1, h, wd, c}, rng);
  float* xd = x.data<float>();
  xd[(4 * wd + 4) * c + 3] = std::numeric_limits<float>::quiet_NaN();
  xd[(0 * wd + 6) * c + 17] = std::numeric_limits<float>::infinity();
  xd[(8 * wd + 1) * c + 0] = -std::numeric_limits<float>::infinity();
  const Tensor w = RandomFloats({k, c, 3, 3}, rng, -1.f, 1.f);
  const Tensor b = RandomFloats({k}, rng);
  for (const std::vector<ir::Attribute>& act :
       {std::vector<ir::Attribute>{},
        {StringAttr("activation", "Relu")},
        {StringAttr("activation", "Clip"), FloatsAttr("activation_params", {-1.f, 1.f})}}) {
    std::vector<ir::Attribute> attrs = act;
    attrs.push_back(IntsAttr("pads", {1, 1, 1, 1}));
    const NodeSpec spec = ConvSpec(attrs);
    const RunResult ref = RunImpl(spec, {x, w, b}, "");
    ASSERT_TRUE(ref.status.ok()) << ref.status.message();
    ForEachSimdTarget([&](const std::string& target) {
      SCOPED_TRACE(target + " act " + std::to_string(act.size()));
      const RunResult fast = RunImpl(spec, {x, w, b}, kImpl);
      ASSERT_TRUE(fast.status.ok()) << fast.status.message();
      const float* y = fast.outputs[0].data<float>();
      // Output (2, 2) shares its 2x2 tile, and so the tile's 4x4 input patch, with output
      // (3, 3), whose window holds the NaN; its own window does not. Likewise (0, 4) and (0, 5)
      // around the Inf.
      EXPECT_TRUE(std::isnan(y[(3 * wd + 3) * k + 5]));
      EXPECT_FALSE(std::isnan(y[(2 * wd + 2) * k + 5]));
      EXPECT_TRUE(std::isinf(y[(0 * wd + 5) * k + 7]) || act.size() > 0);
      EXPECT_TRUE(std::isfinite(y[(0 * wd + 4) * k + 7]));
      EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 2e-4, 1e-5), "");
    });
  }
}

TEST(WinogradConv, LeavesOtherConvolutionsToOtherKernels) {
  std::mt19937 rng(107);
  const Tensor x = RandomFloats({1, 8, 8, 16}, rng);
  const Tensor w = RandomFloats({64, 16, 3, 3}, rng);
  struct Reject {
    NodeSpec spec;
    std::vector<Tensor> inputs;
    const char* why;
  };
  NodeSpec five = ConvSpec({IntsAttr("pads", {2, 2, 2, 2})});
  five.attrs.back() = IntsAttr("kernel_shape", {5, 5});
  NodeSpec grouped = ConvSpec({IntAttr("group", 2)});
  const std::vector<Reject> rejects = {
      {ConvSpec({IntsAttr("strides", {2, 2})}), {x, w}, "stride"},
      {ConvSpec({IntsAttr("dilations", {2, 2})}), {x, w}, "dilation"},
      {grouped, {x, RandomFloats({64, 8, 3, 3}, rng)}, "group"},
      {five, {x, RandomFloats({64, 16, 5, 5}, rng)}, "3x3"},
      // Fewer than 64 output channels would leave most of a weight panel unused.
      {ConvSpec({IntsAttr("pads", {1, 1, 1, 1})}),
       {RandomFloats({1, 12, 12, 16}, rng), RandomFloats({32, 16, 3, 3}, rng)},
       "faster"},
      // 6x6 outputs: 9 tiles, too few to pay for reading the larger transformed weights.
      {ConvSpec({}), {x, w}, "faster"},
  };
  for (const Reject& r : rejects) {
    const RunResult got = RunImpl(r.spec, r.inputs, kImpl);
    EXPECT_FALSE(got.status.ok()) << r.why;
    EXPECT_NE(got.status.message().find(r.why), std::string::npos) << got.status.message();
  }
}

}  // namespace
}  // namespace onyx::testing
