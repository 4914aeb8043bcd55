// Products of a few rows with a constant B (a decoder's one-token step): PanelGemvF32 on its own
// against sums in double over hand-packed panels (every Highway target, panel and column tails,
// bias, residual, alpha, NaN and infinities) and over a plain row-major B read in place; and
// MatMul, Gemm and com.onyx FusedMatMul on oneDNN with a constant B at 1 to 5 rows (the kernel
// reads oneDNN's packed B itself up to 4) against sums in double written here, at one and two
// threads. Nothing expected comes from onyx.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/common/simd_kernels.h"
#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

using kernels::common::PanelGemvArgs;

// B [K, N] packed in panels of `panel` columns, each panel `stride` floats apart (with a few
// rows of padding as oneDNN leaves), zeros past N.
std::vector<float> Pack(const std::vector<float>& b, int64_t k, int64_t n, int64_t panel,
                        int64_t stride) {
  const int64_t panels = (n + panel - 1) / panel;
  std::vector<float> packed(static_cast<size_t>(panels * stride), 0.f);
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t j = 0; j < n; ++j)
      packed[(j / panel) * stride + kk * panel + j % panel] = b[kk * n + j];
  return packed;
}

// Arguments for rows x k of A (packed back to back) times a B [k, n] with panels `panel` wide
// starting `stride` floats apart, into y (rows ldy apart): packed (rows of a panel `panel` apart,
// padded past n) or a plain row-major matrix (rows n apart, nothing past n).
PanelGemvArgs Args(const float* a, int64_t rows, int64_t k, const float* b, int64_t panel,
                   int64_t stride, int64_t n, float* y, int64_t ldy, bool packed) {
  PanelGemvArgs g;
  g.a = a;
  g.lda = k;
  g.rows = rows;
  g.b = b;
  g.panel = panel;
  g.panel_stride = stride;
  g.ldb = packed ? panel : n;
  g.b_padded = packed;
  g.k = k;
  g.n = n;
  g.y = y;
  g.ldy = ldy;
  return g;
}

TEST(PanelGemv, MatchesDoubleSumsOnEveryTarget) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  struct Case {
    int64_t rows, k, n, panel;
    bool bias, bias_scalar, z;
    float alpha;
  };
  const std::vector<Case> cases = {
      {1, 256, 200, 64, false, false, false, 1.f},  // one row, a 8-column tail
      {1, 50, 300, 64, true, false, true, 0.5f},    // one row, panels in pairs and one left over
      {1, 9, 130, 32, true, false, false, 1.f},     // one row, pairs of 32-column panels (AVX2)
      {2, 33, 64, 64, true, false, false, 1.f},     // one full panel, bias
      {3, 7, 130, 32, true, true, true, 0.5f},      // panels of 32, scalar bias, residual
      {4, 1, 17, 16, false, false, true, -2.f},     // K = 1, one partial panel
      {4, 100, 257, 64, true, false, true, 1.f},    // four rows, five panels
      {5, 40, 130, 64, true, false, true, 1.f},     // one block of five rows, a 2-column tail
      {7, 64, 192, 64, true, true, false, 2.f},     // a block of five and one of two
      {13, 19, 70, 32, false, false, true, 1.f},    // blocks of five, five and three
  };
  for (const Case& c : cases) {
    if (!kernels::common::PanelGemvTakesPanel(c.panel)) continue;
    std::vector<float> a(static_cast<size_t>(c.rows * c.k)), b(static_cast<size_t>(c.k * c.n));
    std::vector<float> bias(static_cast<size_t>(c.n)), z(static_cast<size_t>(c.rows * c.n));
    for (auto& v : a) v = dist(rng);
    for (auto& v : b) v = dist(rng);
    for (auto& v : bias) v = dist(rng);
    for (auto& v : z) v = dist(rng);
    const int64_t stride = (c.k + 3) * c.panel;
    const std::vector<float> packed = Pack(b, c.k, c.n, c.panel, stride);
    const int64_t panels = (c.n + c.panel - 1) / c.panel;
    ForEachSimdTarget([&](const std::string& target) {
      SCOPED_TRACE(target + " rows " + std::to_string(c.rows) + " k " + std::to_string(c.k) +
                   " n " + std::to_string(c.n));
      // One guard column past N on every row: nothing may be written there.
      const int64_t ldy = c.n + 1;
      std::vector<float> y(static_cast<size_t>(c.rows * ldy), 7.f), zz(y.size(), 0.f);
      for (int64_t r = 0; r < c.rows; ++r)
        for (int64_t j = 0; j < c.n; ++j) zz[r * ldy + j] = z[r * c.n + j];
      PanelGemvArgs g =
          Args(a.data(), c.rows, c.k, packed.data(), c.panel, stride, c.n, y.data(), ldy, true);
      g.alpha = c.alpha;
      g.bias = c.bias ? bias.data() : nullptr;
      g.bias_scalar = c.bias_scalar;
      g.z = c.z ? zz.data() : nullptr;
      // Two disjoint panel ranges, as two threads would run them.
      kernels::common::PanelGemvF32(g, 0, panels / 2);
      kernels::common::PanelGemvF32(g, panels / 2, panels);
      for (int64_t r = 0; r < c.rows; ++r) {
        for (int64_t j = 0; j < c.n; ++j) {
          double s = 0;
          for (int64_t kk = 0; kk < c.k; ++kk) s += double(a[r * c.k + kk]) * b[kk * c.n + j];
          double want = c.alpha * s;
          if (c.bias) want += c.bias_scalar ? bias[0] : bias[j];
          if (c.z) want += z[r * c.n + j];
          ASSERT_NEAR(y[r * ldy + j], want, 1e-5 * (1 + c.k)) << "row " << r << " col " << j;
        }
        EXPECT_EQ(y[r * ldy + c.n], 7.f) << "row " << r << ": written past N";
      }
    });
  }
}

// A plain row-major B (attention's scores and context at a shape's first run), read in place
// by up to four rows and copied panel by panel for more: nothing is read past column N - 1, so B
// is allocated to exactly K x N floats here and AddressSanitizer would catch an over-read.
TEST(PanelGemv, PlainRowMajorBWithoutPadding) {
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (int64_t n : {1, 5, 16, 31, 64, 100, 257}) {
    for (int64_t rows : {1, 2, 3, 4, 5, 6, 9, 12}) {
      const int64_t k = 37;
      std::vector<float> a(static_cast<size_t>(rows * k)), b(static_cast<size_t>(k * n));
      for (auto& v : a) v = dist(rng);
      for (auto& v : b) v = dist(rng);
      ForEachSimdTarget([&](const std::string& target) {
        SCOPED_TRACE(target + " rows " + std::to_string(rows) + " n " + std::to_string(n));
        std::vector<float> y(static_cast<size_t>(rows * n), 7.f);
        const int64_t panel = kernels::common::PanelGemvPlainPanel();
        const PanelGemvArgs g =
            Args(a.data(), rows, k, b.data(), panel, panel, n, y.data(), n, false);
        kernels::common::PanelGemvF32(g, 0, (n + g.panel - 1) / g.panel);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < n; ++j) {
            double want = 0;
            for (int64_t kk = 0; kk < k; ++kk) want += double(a[r * k + kk]) * b[kk * n + j];
            ASSERT_NEAR(y[r * n + j], want, 1e-5 * (1 + k)) << "row " << r << " col " << j;
          }
      });
    }
  }
}

TEST(PanelGemv, NanAndInfinitySpreadAlongTheirRow) {
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t k = 3, n = 20, panel = 16, stride = k * panel;
  if (!kernels::common::PanelGemvTakesPanel(panel)) GTEST_SKIP() << "target splits 16 unevenly";
  std::vector<float> b(static_cast<size_t>(k * n), 1.f);
  const std::vector<float> packed = Pack(b, k, n, panel, stride);
  const std::vector<float> a = {1.f, std::nanf(""), 2.f, 1.f, inf, 0.f};  // two rows
  std::vector<float> y(static_cast<size_t>(2 * n));
  kernels::common::PanelGemvF32(
      Args(a.data(), 2, k, packed.data(), panel, stride, n, y.data(), n, true), 0, 2);
  for (int64_t j = 0; j < n; ++j) {
    EXPECT_TRUE(std::isnan(y[j])) << j;
    EXPECT_EQ(y[n + j], inf) << j;
  }
}

// alpha * A B (+ c broadcast along the rows) (+ z) summed in double here, for A [..., M, K] read as
// rows of K and B [K, N] (or [N, K] with trans_b): the output is A's shape with its last dim N.
Tensor Product(const Tensor& a, const Tensor& b, bool trans_b, float alpha, const Tensor* c,
               const Tensor* z) {
  const int64_t k = a.dim(a.rank() - 1), n = trans_b ? b.dim(0) : b.dim(1);
  const int64_t rows = a.numel() / k;
  Shape shape = a.shape();
  shape.back() = n;
  Tensor y = Tensor::Allocate(DType::kFloat, shape);
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t i = 0; i < k; ++i)
        sum += double(pa[r * k + i]) * pb[trans_b ? j * k + i : i * n + j];
      double v = alpha * sum;
      if (c) v += c->numel() == 1 ? c->data<float>()[0] : c->data<float>()[j];
      if (z) v += z->data<float>()[r * n + j];
      y.data<float>()[r * n + j] = static_cast<float>(v);
    }
  return y;
}

// oneDNN's MatMul family with B (and the bias) constant, against the sums above.
TEST(PanelGemv, MatMulGemmAndFusedMatMulWithAConstantB) {
  std::mt19937 rng(11);
  for (const Shape& a_shape :
       {Shape{1, 96}, Shape{2, 96}, Shape{1, 3, 96}, Shape{2, 2, 96}, Shape{5, 96}}) {
    for (int64_t n : {64, 100, 1000}) {
      const Tensor a = RandomFloats(a_shape, rng, -1.f, 1.f);
      const Tensor b = RandomFloats({96, n}, rng, -1.f, 1.f);
      ExpectImplMatches({"MatMul", 13}, {a, b}, "MatMul_f32_onednn",
                        Product(a, b, false, 1.f, nullptr, nullptr), 1e-4, 1e-5,
                        "MatMul " + ShapeToString(a_shape) + " n " + std::to_string(n));
    }
  }
  // Gemm: B stored transposed, alpha, C as a row, a scalar, and [1, N] (beta stays 1: the
  // harness also feeds C at run time, where oneDNN's kernel takes no other).
  const Tensor a = RandomFloats({3, 40}, rng, -1.f, 1.f);
  const Tensor bt = RandomFloats({70, 40}, rng, -1.f, 1.f);
  for (const Shape& c_shape : {Shape{70}, Shape{}, Shape{1, 70}}) {
    const Tensor c = RandomFloats(c_shape, rng, -1.f, 1.f);
    ExpectImplMatches({"Gemm", 13, {IntAttr("transB", 1), FloatAttr("alpha", 0.5f)}}, {a, bt, c},
                      "Gemm_f32_onednn", Product(a, bt, true, 0.5f, &c, nullptr), 1e-4, 1e-5,
                      "Gemm C " + ShapeToString(c_shape));
  }
  // More rows than the panels take, alpha 1: C is oneDNN's own bias argument.
  const Tensor a7 = RandomFloats({7, 40}, rng, -1.f, 1.f);
  for (const Shape& c_shape : {Shape{70}, Shape{1, 70}}) {
    const Tensor c = RandomFloats(c_shape, rng, -1.f, 1.f);
    ExpectImplMatches({"Gemm", 13, {IntAttr("transB", 1)}}, {a7, bt, c}, "Gemm_f32_onednn",
                      Product(a7, bt, true, 1.f, &c, nullptr), 1e-4, 1e-5,
                      "Gemm 7 rows, C " + ShapeToString(c_shape));
  }
  // A scalar C there is a bias oneDNN 2.6 has only its reference matmul for: the kernel refuses
  // it, and the generic GEMM takes the node.
  const Tensor c0 = RandomFloats({}, rng, -1.f, 1.f);
  EXPECT_FALSE(
      RunImpl({"Gemm", 13, {IntAttr("transB", 1)}}, {a7, bt, c0}, "Gemm_f32_onednn").status.ok());
  // FusedMatMul with a bias and a residual.
  NodeSpec fused{"FusedMatMul", 1};
  fused.domain = "com.onyx";
  const Tensor a2 = RandomFloats({2, 50}, rng, -1.f, 1.f);
  const Tensor b2 = RandomFloats({50, 90}, rng, -1.f, 1.f);
  const Tensor bias = RandomFloats({90}, rng, -1.f, 1.f);
  const Tensor z = RandomFloats({2, 90}, rng, -1.f, 1.f);
  ExpectImplMatches(fused, {a2, b2, bias, z}, "FusedMatMul_f32_onednn",
                    Product(a2, b2, false, 1.f, &bias, &z), 1e-4, 1e-5, "FusedMatMul bias, Z");
  const Tensor a9 = RandomFloats({9, 50}, rng, -1.f, 1.f);
  const Tensor z9 = RandomFloats({9, 90}, rng, -1.f, 1.f);
  ExpectImplMatches(fused, {a9, b2, bias, z9}, "FusedMatMul_f32_onednn",
                    Product(a9, b2, false, 1.f, &bias, &z9), 1e-4, 1e-5,
                    "FusedMatMul 9 rows, bias, Z");
  // FusedMatMul with an activation after the bias: the rows read the packed B and the
  // activation runs on their sums (Gelu within the Highway kernel's 2 ulp).
  const struct {
    const char* name;
    std::vector<float> params;
    double (*f)(double);
  } acts[] = {
      {"Relu", {}, [](double v) { return v > 0 ? v : 0.0; }},
      {"LeakyRelu", {0.1f}, [](double v) { return v > 0 ? v : double{0.1f} * v; }},
      {"Gelu", {0.f}, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }},
  };
  for (const auto& act : acts) {
    NodeSpec spec{"FusedMatMul", 1, {StringAttr("activation", act.name)}};
    spec.domain = "com.onyx";
    if (!act.params.empty()) spec.attrs.push_back(FloatsAttr("activation_params", act.params));
    Tensor want = Product(a2, b2, false, 1.f, &bias, nullptr);
    for (int64_t i = 0; i < want.numel(); ++i)
      want.data<float>()[i] = static_cast<float>(act.f(want.data<float>()[i]));
    ExpectImplMatches(spec, {a2, b2, bias}, "FusedMatMul_f32_onednn", want, 1e-4, 1e-5,
                      std::string("FusedMatMul bias, ") + act.name);
  }
  // NaN and infinities in A.
  Tensor special = RandomFloats({4, 64}, rng, -1.f, 1.f);
  InjectSpecials(special);
  const Tensor b3 = RandomFloats({64, 33}, rng, -1.f, 1.f);
  ExpectImplMatches({"MatMul", 13}, {special, b3}, "MatMul_f32_onednn",
                    Product(special, b3, false, 1.f, nullptr, nullptr), 1e-4, 1e-5,
                    "MatMul with NaN, inf");
}

}  // namespace
}  // namespace onyx::testing
