// The fast kernels of the com.microsoft transformer operators (kernels/ops/transformer_ms.cc)
// against their reference kernels on every Highway target the CPU supports: MatMulNBits' 4-bit
// streaming and tiled paths (constant and run-time weights), the attention core of Attention,
// MultiHeadAttention and GroupQueryAttention, the skip layer norms and the Gelu family.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

constexpr const char* kMs = "com.microsoft";

NodeSpec MsSpec(const std::string& op, std::vector<ir::Attribute> attrs, int outputs = 1) {
  NodeSpec spec{op, 1, std::move(attrs), outputs};
  spec.domain = kMs;
  return spec;
}

Tensor Bytes(const Shape& shape, std::mt19937& rng) {
  Tensor t = Tensor::Allocate(DType::kUInt8, shape);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(byte(rng));
  return t;
}

Tensor Int32s(const Shape& shape, const std::vector<int32_t>& values) {
  Tensor t = Tensor::Allocate(DType::kInt32, shape);
  for (size_t i = 0; i < values.size(); ++i) t.data<int32_t>()[i] = values[i];
  return t;
}

// Runs `impl` on every target, with the given inputs seen at run time and as plan-time
// constants, and compares every output with the reference impl's.
void ExpectMatchesReference(const NodeSpec& spec, const std::vector<Tensor>& in,
                            const std::string& impl, const std::vector<int>& constants, double tol,
                            const std::string& what) {
  const RunResult ref = RunImpl(spec, in, "");
  ASSERT_TRUE(ref.status.ok()) << what << ": " << ref.status.message();
  ForEachSimdTarget([&](const std::string& target) {
    for (bool constant : {false, true}) {
      for (int threads : {1, 2}) {
        SCOPED_TRACE(what + " target=" + target + " constant=" + std::to_string(constant) +
                     " threads=" + std::to_string(threads));
        RunOptions o;
        o.threads = threads;
        if (constant) o.constant_inputs = constants;
        const RunResult fast = RunImpl(spec, in, impl, o);
        ASSERT_TRUE(fast.status.ok()) << fast.status.message();
        EXPECT_EQ(fast.impl, impl);
        for (size_t i = 0; i < ref.outputs.size(); ++i)
          EXPECT_EQ(CompareFloats(fast.outputs[i], ref.outputs[i], tol, tol), "") << "output " << i;
      }
    }
  });
}

TEST(MatMulNBits, FourBitPathsMatchReference) {
  std::mt19937 rng(81);
  struct Case {
    int64_t m, k, n, block;
    bool zero_points, bias;
  };
  // Rows 1..8 stream B; 9 and 20 take the tiled path. K = 100 pads its last block.
  const Case cases[] = {{1, 64, 37, 16, false, false},
                        {3, 100, 37, 32, true, true},
                        {8, 128, 19, 64, true, false},
                        {9, 96, 70, 32, false, true},
                        {20, 100, 130, 16, true, true}};
  for (const Case& c : cases) {
    const int64_t kb = (c.k + c.block - 1) / c.block;
    const Tensor a = RandomFloats({c.m, c.k}, rng);
    const Tensor b = Bytes({c.n, kb, c.block / 2}, rng);
    const Tensor scales = RandomFloats({c.n * kb}, rng, 0.01f, 0.1f);
    const Tensor zp = Bytes({c.n * ((kb + 1) / 2)}, rng);
    const Tensor bias = RandomFloats({c.n}, rng);
    const NodeSpec spec = MsSpec(
        "MatMulNBits",
        {IntAttr("K", c.k), IntAttr("N", c.n), IntAttr("bits", 4), IntAttr("block_size", c.block)});
    const std::vector<Tensor> in = {
        a, b, scales, c.zero_points ? zp : Tensor(), Tensor(), c.bias ? bias : Tensor()};
    ExpectMatchesReference(spec, in, "MatMulNBits_f32_hwy", {1, 2, 3}, 1e-4,
                           "M=" + std::to_string(c.m) + " K=" + std::to_string(c.k) +
                               " N=" + std::to_string(c.n) + " block=" + std::to_string(c.block));
  }
}

TEST(MatMulNBits, EightBitPanelsMatchReference) {
  std::mt19937 rng(83);
  const int64_t m = 5, k = 64, n = 21, block = 32, kb = 2;
  const NodeSpec spec = MsSpec("MatMulNBits", {IntAttr("K", k), IntAttr("N", n), IntAttr("bits", 8),
                                               IntAttr("block_size", block)});
  const std::vector<Tensor> in = {RandomFloats({m, k}, rng), Bytes({n, kb, block}, rng),
                                  RandomFloats({n * kb}, rng, 0.01f, 0.1f)};
  ExpectMatchesReference(spec, in, "MatMulNBits_f32_hwy", {1, 2}, 1e-4, "8 bits");
}

TEST(MsAttention, MatchesReference) {
  std::mt19937 rng(85);
  const int64_t b = 2, s = 7, hin = 12, heads = 3, hidden = 24;
  const Tensor x = RandomFloats({b, s, hin}, rng, -1.f, 1.f);
  const Tensor w = RandomFloats({hin, 3 * hidden}, rng, -0.5f, 0.5f);
  const Tensor bias = RandomFloats({3 * hidden}, rng, -0.5f, 0.5f);
  const Tensor mask = Int32s({b, s}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0});
  for (int64_t unidirectional : {0, 1}) {
    const NodeSpec spec = MsSpec(
        "Attention", {IntAttr("num_heads", heads), IntAttr("unidirectional", unidirectional)});
    ExpectMatchesReference(spec, {x, w, bias, mask}, "Attention_f32_hwy", {1, 2}, 1e-5,
                           "unidirectional=" + std::to_string(unidirectional));
  }
}

TEST(MultiHeadAttention, MatchesReference) {
  std::mt19937 rng(87);
  const int64_t b = 2, s = 5, l = 9, heads = 2, d = 8;
  const NodeSpec spec = MsSpec("MultiHeadAttention", {IntAttr("num_heads", heads)});
  const std::vector<Tensor> in = {RandomFloats({b, s, heads * d}, rng, -1.f, 1.f),
                                  RandomFloats({b, l, heads * d}, rng, -1.f, 1.f),
                                  RandomFloats({b, l, heads * d}, rng, -1.f, 1.f), Tensor(),
                                  Int32s({b}, {9, 4})};
  ExpectMatchesReference(spec, in, "MultiHeadAttention_f32_hwy", {}, 1e-5, "cross attention");
}

TEST(GroupQueryAttention, MatchesReference) {
  std::mt19937 rng(89);
  const int64_t b = 2, heads = 4, kv_heads = 2, d = 16, past = 6;
  for (int64_t s : {1, 3}) {
    for (int64_t window : {-1, 4}) {
      const NodeSpec spec = MsSpec(
          "GroupQueryAttention",
          {IntAttr("num_heads", heads), IntAttr("kv_num_heads", kv_heads),
           IntAttr("local_window_size", window), FloatAttr("softcap", window > 0 ? 3.f : 0.f)},
          3);
      const int32_t total = static_cast<int32_t>(past + s);
      const std::vector<Tensor> in = {
          RandomFloats({b, s, (heads + 2 * kv_heads) * d}, rng, -1.f, 1.f),
          Tensor(),
          Tensor(),
          RandomFloats({b, kv_heads, past, d}, rng, -1.f, 1.f),
          RandomFloats({b, kv_heads, past, d}, rng, -1.f, 1.f),
          Int32s({b}, {total - 1, total - 3}),
          Int32s({}, {total})};
      ExpectMatchesReference(spec, in, "GroupQueryAttention_f32_hwy", {}, 1e-5,
                             "S=" + std::to_string(s) + " window=" + std::to_string(window));
    }
  }
}

TEST(SkipLayerNorms, MatchReference) {
  std::mt19937 rng(91);
  const Tensor x = RandomFloats({2, 5, 33}, rng);
  const Tensor skip = RandomFloats({5, 33}, rng);
  const Tensor gamma = RandomFloats({33}, rng);
  const Tensor beta = RandomFloats({33}, rng);
  const Tensor bias = RandomFloats({33}, rng);
  ExpectMatchesReference(MsSpec("SkipLayerNormalization", {FloatAttr("epsilon", 1e-5f)}, 4),
                         {x, skip, gamma, beta, bias}, "SkipLayerNormalization_f32_hwy", {}, 1e-5,
                         "SkipLayerNormalization");
  ExpectMatchesReference(MsSpec("SkipSimplifiedLayerNormalization", {}, 4), {x, skip, gamma, bias},
                         "SkipSimplifiedLayerNormalization_f32_simd", {}, 1e-5,
                         "SkipSimplifiedLayerNormalization");
}

TEST(GeluFamily, MatchesReference) {
  std::mt19937 rng(93);
  const Tensor x = RandomFloats({3, 7, 65}, rng);
  const Tensor bias = RandomFloats({65}, rng);
  ExpectMatchesReference(MsSpec("Gelu", {}), {x}, "Gelu_f32_hwy", {}, 1e-5, "Gelu");
  ExpectMatchesReference(MsSpec("BiasGelu", {}), {x, bias}, "BiasGelu_f32_hwy", {}, 1e-5,
                         "BiasGelu");
  ExpectMatchesReference(MsSpec("FastGelu", {}), {x, bias}, "FastGelu_f32_hwy", {}, 1e-5,
                         "FastGelu");
  ExpectMatchesReference(MsSpec("QuickGelu", {FloatAttr("alpha", 1.3f)}), {x}, "QuickGelu_f32_hwy",
                         {}, 1e-5, "QuickGelu");
}

}  // namespace
}  // namespace onyx::testing
