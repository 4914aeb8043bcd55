// The portable depthwise convolution (com.onyx NhwcConv, group = C = M) against the reference
// NhwcConv kernel, which sums in double: geometries with borders, strides, dilations and
// asymmetric pads, channel counts with vector tails, bias, residual and activations, weights
// packed at plan time or per run, one and two threads, every Highway target.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

constexpr const char* kImpl = "NhwcConv_f32_dw_hwy";

struct Geometry {
  int64_t kh, kw;
  std::vector<ir::Attribute> attrs;  // strides, pads, dilations, auto_pad
};

NodeSpec DepthwiseSpec(int64_t c, const Geometry& g, std::vector<ir::Attribute> extra = {}) {
  std::vector<ir::Attribute> attrs = g.attrs;
  attrs.push_back(IntAttr("group", c));
  attrs.push_back(IntsAttr("kernel_shape", {g.kh, g.kw}));
  for (auto& a : extra) attrs.push_back(std::move(a));
  NodeSpec spec{"NhwcConv", 1, attrs};
  spec.domain = "com.onyx";
  return spec;
}

TEST(DepthwiseConv, MatchesReference) {
  std::mt19937 rng(83);
  const std::vector<Geometry> geometries = {
      {3, 3, {IntsAttr("pads", {1, 1, 1, 1})}},
      {3, 3, {IntsAttr("strides", {2, 2}), IntsAttr("pads", {1, 1, 1, 1})}},
      {5, 5, {IntsAttr("pads", {2, 2, 2, 2})}},
      {3, 3, {IntsAttr("dilations", {2, 2}), IntsAttr("pads", {2, 2, 2, 2})}},
      {3, 2, {IntsAttr("strides", {1, 2}), IntsAttr("pads", {0, 1, 2, 0})}},
      {1, 1, {}},
      {3, 3, {StringAttr("auto_pad", "SAME_UPPER"), IntsAttr("strides", {2, 2})}},
      {7, 7, {IntsAttr("pads", {1, 1, 1, 1})}},  // wider than the padding: few inner outputs
  };
  // (N, H, W, C): tails only, several images with a tail, whole vectors, one group and a half.
  const std::vector<Shape> shapes = {
      {1, 7, 9, 5}, {2, 12, 13, 37}, {1, 14, 14, 64}, {1, 11, 20, 96}};
  for (const Shape& xs : shapes) {
    const int64_t c = xs[3];
    for (const Geometry& g : geometries) {
      Tensor x = RandomFloats(xs, rng);
      const Tensor w = RandomFloats({c, 1, g.kh, g.kw}, rng, -1.f, 1.f);
      const Tensor b = RandomFloats({c}, rng);
      const NodeSpec plain = DepthwiseSpec(c, g);
      const Tensor z = RandomFloats(ReferenceOutputShape(plain, {x, w}), rng);
      struct Case {
        std::vector<ir::Attribute> act;
        bool bias, residual;
      };
      const std::vector<Case> cases = {
          {{}, false, false},
          {{StringAttr("activation", "Relu")}, true, false},
          {{StringAttr("activation", "Clip"), FloatsAttr("activation_params", {0.f, 6.f})},
           true,
           false},
          {{StringAttr("activation", "Relu")}, true, true},
          {{StringAttr("activation", "Sigmoid")}, true, true},  // applied over finished rows
      };
      for (const Case& k : cases) {
        const NodeSpec spec = DepthwiseSpec(c, g, k.act);
        std::vector<Tensor> inputs = {x, w};
        if (k.bias || k.residual) inputs.push_back(k.bias ? b : Tensor());
        if (k.residual) inputs.push_back(z);
        const RunResult ref = RunImpl(spec, inputs, "");
        ASSERT_TRUE(ref.status.ok()) << ref.status.message();
        ExpectImplMatches(spec, inputs, kImpl, ref.outputs[0], 1e-5, 1e-5,
                          ShapeToString(xs) + " k" + std::to_string(g.kh) + "x" +
                              std::to_string(g.kw) + " act " + std::to_string(k.act.size()) +
                              " bias " + std::to_string(k.bias) + " residual " +
                              std::to_string(k.residual));
      }
    }
  }
}

// NaN reaches every output whose window covers it, through Relu and Clip as those ops pass it.
TEST(DepthwiseConv, NaNPropagatesThroughActivations) {
  std::mt19937 rng(89);
  const int64_t c = 40;
  Tensor x = RandomFloats({1, 9, 9, c}, rng);
  x.data<float>()[(4 * 9 + 4) * c + 3] = std::numeric_limits<float>::quiet_NaN();
  x.data<float>()[(0 * 9 + 8) * c + 33] = std::numeric_limits<float>::infinity();
  const Tensor w = RandomFloats({c, 1, 3, 3}, rng, -1.f, 1.f);
  const Geometry g{3, 3, {IntsAttr("pads", {1, 1, 1, 1})}};
  for (const std::vector<ir::Attribute>& act :
       {std::vector<ir::Attribute>{StringAttr("activation", "Relu")},
        {StringAttr("activation", "Clip"), FloatsAttr("activation_params", {-1.f, 1.f})}}) {
    const NodeSpec spec = DepthwiseSpec(c, g, act);
    const RunResult ref = RunImpl(spec, {x, w}, "");
    ASSERT_TRUE(ref.status.ok()) << ref.status.message();
    const RunResult fast = RunImpl(spec, {x, w}, kImpl);
    ASSERT_TRUE(fast.status.ok()) << fast.status.message();
    EXPECT_TRUE(std::isnan(fast.outputs[0].data<float>()[(4 * 9 + 4) * c + 3]));
    EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 1e-5, 1e-5), "");
  }
}

TEST(DepthwiseConv, RejectsOtherConvolutions) {
  std::mt19937 rng(97);
  const Tensor x = RandomFloats({1, 6, 6, 8}, rng);
  const Geometry g{3, 3, {IntsAttr("pads", {1, 1, 1, 1})}};
  // Grouped but not depthwise (two channels per group), and a channel multiplier of 2.
  NodeSpec grouped = DepthwiseSpec(4, g);
  RunResult r = RunImpl(grouped, {x, RandomFloats({4, 2, 3, 3}, rng)}, kImpl);
  EXPECT_FALSE(r.status.ok());
  NodeSpec multiplier = DepthwiseSpec(8, g);
  r = RunImpl(multiplier, {x, RandomFloats({16, 1, 3, 3}, rng)}, kImpl);
  EXPECT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("depthwise"), std::string::npos) << r.status.message();
}

// The reference NhwcConv's activation against hand-computed values: Softplus(x) is x where
// exp(x) overflows (it computed log1p(exp(x)) = inf from x = 89), and an activation name no fused
// op defines is an error naming it, not NaN outputs.
TEST(NhwcConvReference, ActivationsAreTheFusedOpsOnes) {
  const Tensor x = FloatTensor({1, 1, 4, 1}, {100.f, 89.f, 0.f, -100.f});
  const Tensor w = FloatTensor({1, 1, 1, 1}, {1.f});
  const Geometry g{1, 1, {}};
  RunResult r = RunImpl(DepthwiseSpec(1, g, {StringAttr("activation", "Softplus")}), {x, w}, "");
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  const float* y = r.outputs[0].data<float>();
  EXPECT_EQ(y[0], 100.f);
  EXPECT_EQ(y[1], 89.f);
  EXPECT_FLOAT_EQ(y[2], std::log(2.f));
  EXPECT_GE(y[3], 0.f);
  EXPECT_LT(y[3], 1e-40f);
  r = RunImpl(DepthwiseSpec(1, g, {StringAttr("activation", "Swish")}), {x, w}, "");
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("Swish"), std::string::npos) << r.status.message();
}

}  // namespace
}  // namespace onyx::testing
