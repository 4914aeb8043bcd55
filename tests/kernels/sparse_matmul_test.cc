// The block-sparse products with a constant B (MatMul_f32_sparse, FusedMatMul_f32_sparse in
// kernels/common/sparse_matmul_kernel.cc, and Gemm_f32_sparse) against the reference MatMul, Gemm
// and FusedMatMul, which
// sum in double: B [K, N] or transposed, N with tails of the 16-wide blocks, batched A, bias,
// residual and activations, one and two threads, every Highway target; what they leave to others.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

// B [k, n] (or [n, k] when transposed) with a `zero` fraction of its blocks of `block` columns at
// one row all zero.
Tensor SparseB(int64_t k, int64_t n, bool trans, double zero, std::mt19937& rng,
               int64_t block = 16) {
  Tensor b = RandomFloats(trans ? Shape{n, k} : Shape{k, n}, rng, -1.f, 1.f);
  float* bd = b.data<float>();
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int64_t blk = 0; blk * block < n; ++blk)
    for (int64_t r = 0; r < k; ++r)
      if (u(rng) < zero)
        for (int64_t c = blk * block; c < std::min(n, blk * block + block); ++c)
          bd[trans ? c * k + r : r * n + c] = 0.f;
  return b;
}

void ExpectSparseMatches(const NodeSpec& spec, const std::vector<Tensor>& inputs,
                         const std::string& impl, const std::string& what, int64_t block = 16) {
  const RunResult ref = RunImpl(spec, inputs, "");
  ASSERT_TRUE(ref.status.ok()) << ref.status.message();
  ForEachSimdTarget([&](const std::string& target) {
    for (int threads : {1, 2}) {
      for (bool constant_bias : {false, true}) {
        SCOPED_TRACE(what + " " + target + " threads " + std::to_string(threads) +
                     (constant_bias ? " constant bias" : ""));
        RunOptions o;
        o.threads = threads;
        o.constant_inputs = constant_bias ? std::vector<int>{1, 2} : std::vector<int>{1};
        const RunResult fast = RunImpl(spec, inputs, impl, o);
        ASSERT_TRUE(fast.status.ok()) << fast.status.message();
        EXPECT_EQ(fast.impl, impl);
        EXPECT_EQ(fast.variant, "block" + std::to_string(block));
        EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], 1e-4, 1e-5), "");
      }
    }
  });
}

TEST(SparseMatMul, MatchesReference) {
  std::mt19937 rng(307);
  struct Product {
    Shape a;  // [..., K]
    int64_t n;
    double zero;
    int64_t block = 16;  // pruned in blocks of 16 or 32 columns
  };
  const std::vector<Product> products = {
      {{3, 40}, 24, 0.6},           // 3 rows, a block of 8 columns
      {{2, 13, 64}, 100, 0.7},      // batched A: 26 rows (12-row tile tails), N = 6 * 16 + 4
      {{1, 200}, 16, 0.9},          // one row, one block
      {{30, 33}, 48, 1.0, 32},      // all zero: bias and residual only, in 32-blocks
      {{2, 13, 64}, 100, 0.6, 32},  // 32-blocks: 26 rows, N = 3 * 32 + 4
      {{40, 48}, 56, 0.6, 32},      // 32-blocks: a tail of 24 columns
  };
  for (const Product& p : products) {
    const Tensor a = RandomFloats(p.a, rng);
    const int64_t k = p.a.back();
    Shape ys = p.a;
    ys.back() = p.n;
    const Tensor bias = RandomFloats({p.n}, rng);
    const Tensor z = RandomFloats(ys, rng);
    const std::string what = ShapeToString(p.a) + " N " + std::to_string(p.n);
    ExpectSparseMatches(NodeSpec{"MatMul", 13}, {a, SparseB(k, p.n, false, p.zero, rng, p.block)},
                        "MatMul_f32_sparse", what, p.block);
    for (bool trans : {false, true}) {
      NodeSpec fused{
          "FusedMatMul", 1, {IntAttr("transB", trans ? 1 : 0), StringAttr("activation", "Relu")}};
      fused.domain = "com.onyx";
      ExpectSparseMatches(fused, {a, SparseB(k, p.n, trans, p.zero, rng, p.block), bias, z},
                          "FusedMatMul_f32_sparse", what + " transB " + std::to_string(trans),
                          p.block);
      if (p.a.size() == 2) {  // Gemm: 2-D A, bias C [1, N]
        const NodeSpec gemm{"Gemm", 13, {IntAttr("transB", trans ? 1 : 0)}};
        ExpectSparseMatches(
            gemm, {a, SparseB(k, p.n, trans, p.zero, rng, p.block), RandomFloats({1, p.n}, rng)},
            "Gemm_f32_sparse", what + " gemm transB " + std::to_string(trans), p.block);
      }
      NodeSpec tanh{
          "FusedMatMul", 1, {IntAttr("transB", trans ? 1 : 0), StringAttr("activation", "Tanh")}};
      tanh.domain = "com.onyx";
      ExpectSparseMatches(tanh, {a, SparseB(k, p.n, trans, p.zero, rng, p.block), bias},
                          "FusedMatMul_f32_sparse", what + " tanh transB " + std::to_string(trans),
                          p.block);
    }
  }
}

TEST(SparseMatMul, LeavesDenseAndOtherProductsToOtherKernels) {
  std::mt19937 rng(311);
  const Tensor a = RandomFloats({4, 32}, rng);
  NodeSpec trans_a{"FusedMatMul", 1, {IntAttr("transA", 1)}};
  trans_a.domain = "com.onyx";
  NodeSpec alpha{"FusedMatMul", 1, {FloatAttr("alpha", 0.5f)}};
  alpha.domain = "com.onyx";
  struct Reject {
    NodeSpec spec;
    std::vector<Tensor> inputs;
    std::vector<int> constant;
    const char* why;
  };
  const std::vector<Reject> rejects = {
      {NodeSpec{"MatMul", 13}, {a, SparseB(32, 64, false, 0.1, rng)}, {1}, "zero blocks"},
      {NodeSpec{"MatMul", 13}, {a, SparseB(32, 64, false, 0.8, rng)}, {}, "not constant"},
      {NodeSpec{"MatMul", 13}, {a, RandomFloats({2, 32, 64}, rng)}, {1}, "2-D B"},
      {trans_a, {RandomFloats({32, 4}, rng), SparseB(32, 64, false, 0.8, rng)}, {1}, "transA"},
      {alpha, {a, SparseB(32, 64, false, 0.8, rng)}, {1}, "alpha"},
      {NodeSpec{"Gemm", 13, {FloatAttr("beta", 0.5f)}},
       {a, SparseB(32, 64, false, 0.8, rng), RandomFloats({64}, rng)},
       {1},
       "beta"},
  };
  for (const Reject& r : rejects) {
    RunOptions o;
    o.constant_inputs = r.constant;
    const RunResult got = RunImpl(r.spec, r.inputs, r.spec.op + "_f32_sparse", o);
    EXPECT_FALSE(got.status.ok()) << r.why;
    EXPECT_NE(got.status.message().find(r.why), std::string::npos) << got.status.message();
  }
}

}  // namespace
}  // namespace onyx::testing
