// The block-sparse 1x1 convolution (com.onyx NhwcConv, kernels/common/sparse_conv_kernel.cc and
// sparse_gemm_hwy.cc) against the reference NhwcConv kernel, which sums every product in double:
// zero-block fractions from the threshold to all zero, weights pruned in blocks of 16 and 32 (and
// 32-blocks with single zero 16-halves), channel counts with tails of the 16- and 32-wide blocks
// and of the row tiles, the block width the kernel picks, the same bits at one and two threads,
// strides, bias and residual (constant or not), Relu, Clip and an activation applied after, one and
// two threads, every Highway target; Inf and NaN inputs meeting zero weights; the convolutions and
// weights it must leave to the dense kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

constexpr const char* kImpl = "NhwcConv_f32_sparse";

NodeSpec ConvSpec(std::vector<ir::Attribute> attrs) {
  attrs.push_back(IntsAttr("kernel_shape", {1, 1}));
  NodeSpec spec{"NhwcConv", 1, attrs};
  spec.domain = "com.onyx";
  return spec;
}

// W [m, c, 1, 1] with a `zero` fraction of its blocks (`block` output channels at one input
// channel) all zero, and of the others a `half_zero` fraction with their first 16 channels zero;
// the rest random (a few single zeros among them, as pruning leaves).
Tensor BlockSparseWeights(int64_t m, int64_t c, double zero, std::mt19937& rng, int64_t block = 16,
                          double half_zero = 0.0) {
  Tensor w = RandomFloats({m, c, 1, 1}, rng, -1.f, 1.f);
  float* wd = w.data<float>();
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int64_t b = 0; b * block < m; ++b)
    for (int64_t ci = 0; ci < c; ++ci) {
      int64_t zeros = u(rng) < zero ? block : 0;
      if (zeros == 0 && u(rng) < half_zero) zeros = 16;
      for (int64_t co = b * block; co < std::min(m, b * block + zeros); ++co) wd[co * c + ci] = 0.f;
    }
  wd[m * c - 1] = 0.f;
  return w;
}

// Runs the sparse impl on every target at 1 and 2 threads, with W constant and B constant or not,
// and expects output 0 to match `expected`, in blocks of `block`, with the same bits at both
// thread counts.
void ExpectSparseMatches(const NodeSpec& spec, const std::vector<Tensor>& inputs,
                         const Tensor& expected, const std::string& what, int64_t block = 16) {
  ForEachSimdTarget([&](const std::string& target) {
    Tensor one_thread;
    for (int threads : {1, 2}) {
      for (bool constant_bias : {false, true}) {
        SCOPED_TRACE(what + " " + target + " threads " + std::to_string(threads) +
                     (constant_bias ? " constant B" : " B at run time"));
        RunOptions o;
        o.threads = threads;
        o.constant_inputs = constant_bias ? std::vector<int>{1, 2} : std::vector<int>{1};
        const RunResult fast = RunImpl(spec, inputs, kImpl, o);
        ASSERT_TRUE(fast.status.ok()) << fast.status.message();
        EXPECT_EQ(fast.impl, kImpl);
        EXPECT_EQ(fast.variant, "block" + std::to_string(block));
        // Float sums of up to 300 products of size ~4: within 1e-4 of the double sums.
        EXPECT_EQ(CompareFloats(fast.outputs[0], expected, 1e-4, 1e-5), "");
        if (threads == 1) {
          one_thread = fast.outputs[0];
        } else {
          EXPECT_EQ(std::memcmp(one_thread.data<float>(), fast.outputs[0].data<float>(),
                                one_thread.numel() * sizeof(float)),
                    0)
              << "bits differ between 1 and 2 threads";
        }
      }
    }
  });
}

TEST(SparseConv, MatchesReference) {
  std::mt19937 rng(211);
  struct Layer {
    Shape x;      // N, H, W, C
    int64_t m;    // output channels
    double zero;  // fraction of zero blocks
    int64_t stride;
    int64_t block = 16;      // the width W is pruned in
    double half_zero = 0.0;  // of the other blocks: first 16 channels zero
    int64_t expected = 16;   // the width the kernel should pick
  };
  const std::vector<Layer> layers = {
      {{1, 5, 7, 37}, 40, 0.6, 1},   // 35 rows (a 12-row tile tail), a block of 8 channels
      {{2, 6, 6, 64}, 64, 0.7, 1},   // two images, whole blocks and tiles
      {{1, 4, 4, 300}, 7, 0.6, 1},   // one partial block; many input channels
      {{1, 9, 9, 24}, 144, 0.9, 2},  // stride 2: 5x5 outputs from every other pixel
      // Every block zero: bias, residual and activation only (in 32-blocks, as wide as they pay).
      {{1, 8, 10, 16}, 33, 1.0, 1, 16, 0.0, 32},
      {{1, 13, 12, 96}, 256, 0.5, 1},  // 156 rows, 16 blocks for two threads
      {{1, 5, 5, 32}, 768, 0.5, 1},    // 24 blocks per channel: rows interleaved first on AVX-512
      {{1, 2, 7, 1024}, 640, 0.5, 1},  // 1.25 MiB of blocks: blocks outside the tiles (1 thread)
      {{2, 6, 6, 64}, 64, 0.7, 1, 16, 0.0, 16},  // 16s at 70%: half the 32-blocks zero, stays 16
      // Pruned in 32s:
      {{1, 5, 7, 37}, 40, 0.6, 1, 32, 0.0, 32},     // one 32-block and a tail of 8 channels
      {{1, 4, 5, 50}, 56, 0.6, 1, 32, 0.0, 32},     // a tail of 24: one vector and a half
      {{1, 9, 9, 24}, 96, 0.6, 2, 32, 0.0, 32},     // stride 2, whole blocks
      {{1, 8, 10, 16}, 70, 1.0, 1, 32, 0.0, 32},    // every block zero, a tail of 6
      {{1, 13, 12, 96}, 256, 0.5, 1, 32, 0.2, 32},  // mixed: zero 16-halves in 32-blocks
      {{1, 5, 5, 32}, 768, 0.5, 1, 32, 0.0, 32},    // rows interleaved first on AVX-512
      {{1, 2, 7, 1024}, 640, 0.5, 1, 32, 0.0, 32},  // blocks outside the tiles
  };
  for (const Layer& l : layers) {
    const Tensor x = RandomFloats(l.x, rng);
    const Tensor w = BlockSparseWeights(l.m, l.x[3], l.zero, rng, l.block, l.half_zero);
    const Tensor b = RandomFloats({l.m}, rng);
    std::vector<ir::Attribute> geometry;
    if (l.stride != 1) geometry.push_back(IntsAttr("strides", {l.stride, l.stride}));
    const Tensor z = RandomFloats(ReferenceOutputShape(ConvSpec(geometry), {x, w}), rng);
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
      std::vector<ir::Attribute> attrs = geometry;
      for (const ir::Attribute& a : c.act) attrs.push_back(a);
      const NodeSpec spec = ConvSpec(attrs);
      std::vector<Tensor> inputs = {x, w};
      if (c.bias || c.residual) inputs.push_back(c.bias ? b : Tensor());
      if (c.residual) inputs.push_back(z);
      const RunResult ref = RunImpl(spec, inputs, "");
      ASSERT_TRUE(ref.status.ok()) << ref.status.message();
      ExpectSparseMatches(spec, inputs, ref.outputs[0],
                          ShapeToString(l.x) + " M " + std::to_string(l.m) + " zero " +
                              std::to_string(l.zero) + " act " + std::to_string(c.act.size()) +
                              " bias " + std::to_string(c.bias) + " residual " +
                              std::to_string(c.residual) + " block " + std::to_string(l.block),
                          l.expected);
    }
  }
}

// A NaN or Inf in X meets zero weights in a dense product (0 * Inf = NaN): the skipped blocks must
// not hide it, in the rows that hold it, and must not spread it to the other rows of their tile.
TEST(SparseConv, NonFiniteInputsMeetTheZeroWeights) {
  std::mt19937 rng(223);
  const int64_t c = 32, m = 48, h = 5, wd = 6;
  Tensor x = RandomFloats({1, h, wd, c}, rng);
  Tensor w = BlockSparseWeights(m, c, 0.6, rng);
  // Channel 3's and 17's weights all zero, in every block.
  for (int64_t co = 0; co < m; ++co) w.data<float>()[co * c + 3] = w.data<float>()[co * c + 17] = 0;
  float* xd = x.data<float>();
  xd[(1 * wd + 2) * c + 3] = std::numeric_limits<float>::quiet_NaN();
  xd[(4 * wd + 5) * c + 17] = std::numeric_limits<float>::infinity();
  const Tensor b = RandomFloats({m}, rng);
  for (const std::vector<ir::Attribute>& act :
       {std::vector<ir::Attribute>{},
        {StringAttr("activation", "Clip"), FloatsAttr("activation_params", {-1.f, 1.f})}}) {
    const NodeSpec spec = ConvSpec(act);
    const RunResult ref = RunImpl(spec, {x, w, b}, "");
    ASSERT_TRUE(ref.status.ok()) << ref.status.message();
    // The reference's sums: NaN in every output channel of both pixels, finite elsewhere.
    ASSERT_TRUE(std::isnan(ref.outputs[0].data<float>()[(1 * wd + 2) * m + 5]));
    ASSERT_TRUE(std::isnan(ref.outputs[0].data<float>()[(4 * wd + 5) * m + 40]));
    ExpectSparseMatches(spec, {x, w, b}, ref.outputs[0],
                        "non-finite act " + std::to_string(act.size()));
  }
}

TEST(SparseConv, LeavesDenseWeightsAndOtherConvolutionsToOtherKernels) {
  std::mt19937 rng(227);
  const Tensor x = RandomFloats({1, 8, 8, 32}, rng);
  const Tensor sparse = BlockSparseWeights(64, 32, 0.6, rng);
  const Tensor dense = BlockSparseWeights(64, 32, 0.1, rng);
  struct Reject {
    NodeSpec spec;
    std::vector<Tensor> inputs;
    std::vector<int> constant;
    const char* why;
  };
  NodeSpec three = ConvSpec({IntsAttr("pads", {1, 1, 1, 1})});
  three.attrs.back() = IntsAttr("kernel_shape", {3, 3});
  NodeSpec grouped = ConvSpec({IntAttr("group", 2)});
  const std::vector<Reject> rejects = {
      {ConvSpec({}), {x, dense}, {1}, "zero blocks"},
      {ConvSpec({}), {x, sparse}, {}, "not constant"},
      {ConvSpec({IntsAttr("pads", {1, 1, 1, 1})}), {x, sparse}, {1}, "padding"},
      {grouped, {x, RandomFloats({64, 16, 1, 1}, rng)}, {1}, "group"},
      {three, {x, RandomFloats({64, 32, 3, 3}, rng)}, {1}, "1x1"},
  };
  for (const Reject& r : rejects) {
    RunOptions o;
    o.constant_inputs = r.constant;
    const RunResult got = RunImpl(r.spec, r.inputs, kImpl, o);
    EXPECT_FALSE(got.status.ok()) << r.why;
    EXPECT_NE(got.status.message().find(r.why), std::string::npos) << got.status.message();
  }
}

}  // namespace
}  // namespace onyx::testing
