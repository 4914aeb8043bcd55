// The integer helpers of kernels/common/int_product_hwy.cc against plain loops, exactly, on every
// Highway target. Int32RowsTimes8BitMatrix: int8 and uint8 W, odd and even row counts of W (pairs
// of rows) and of q (blocks of four), widths that end inside a vector, zeros and extreme values
// in q. ConvInteger's corrections: lengths with tails, with and without the second term.
#include "kernels/common/int_product.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

TEST(Int32RowsTimes8BitMatrix, MatchesAPlainSumOnEveryTarget) {
  std::mt19937 rng(19);
  for (bool w_signed : {false, true}) {
    for (int64_t n : {1, 15, 16, 17, 63, 64, 65, 130, 2048}) {
      for (int64_t k : {1, 2, 7, 70, 71}) {
        for (int64_t rows : {1, 3, 4, 9}) {  // blocks of four rows and single rows
          std::vector<uint8_t> w(static_cast<size_t>(k * n));
          for (auto& v : w) v = static_cast<uint8_t>(rng() & 0xff);
          std::vector<int32_t> q(static_cast<size_t>(rows * k));
          for (int64_t i = 0; i < rows * k; ++i)
            q[i] = i % 5 == 0 || i % 7 == 1 ? 0 : static_cast<int32_t>(rng() % 511) - 255;
          q[rows * k - 1] = -255;
          std::vector<int32_t> want(static_cast<size_t>(rows * n));
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < n; ++j) {
              int64_t s = 0;
              for (int64_t i = 0; i < k; ++i) {
                const uint8_t b = w[i * n + j];
                s += static_cast<int64_t>(q[r * k + i]) *
                     (w_signed ? static_cast<int64_t>(static_cast<int8_t>(b)) : b);
              }
              want[r * n + j] = static_cast<int32_t>(s);
            }
          const std::vector<uint8_t> pairs = kernels::common::PairRows8Bit(w.data(), k, n);
          ForEachSimdTarget([&](const std::string& target) {
            SCOPED_TRACE(target + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
                         " rows=" + std::to_string(rows) + (w_signed ? " int8" : " uint8"));
            std::vector<int32_t> got(static_cast<size_t>(rows * n), 12345);
            kernels::common::Int32RowsTimes8BitMatrix(q.data(), rows, k, pairs.data(), w_signed, n,
                                                      got.data());
            EXPECT_EQ(got, want);
          });
        }
      }
    }
  }
}

TEST(ConvIntegerCorrections, SubtractScaledAndAddBytesOnEveryTarget) {
  std::mt19937 rng(23);
  for (int64_t n : {1, 15, 16, 17, 100, 1000}) {
    std::vector<int32_t> y(n), a(n), b(n);
    std::vector<uint8_t> x(n);
    for (int64_t i = 0; i < n; ++i) {
      y[i] = static_cast<int32_t>(rng() % 2000001) - 1000000;
      a[i] = static_cast<int32_t>(rng() % 40001) - 20000;
      b[i] = static_cast<int32_t>(rng() % 40001) - 20000;
      x[i] = static_cast<uint8_t>(rng() & 0xff);
    }
    for (bool with_b : {false, true}) {
      std::vector<int32_t> want = y;
      for (int64_t i = 0; i < n; ++i) want[i] -= 37 * a[i] + (with_b ? -211 * b[i] : 0);
      ForEachSimdTarget([&](const std::string& target) {
        SCOPED_TRACE(target + " n=" + std::to_string(n) + (with_b ? " with b" : ""));
        std::vector<int32_t> got = y;
        kernels::common::SubtractScaled(got.data(), n, 37, a.data(), -211,
                                        with_b ? b.data() : nullptr);
        EXPECT_EQ(got, want);
      });
    }
    for (bool x_signed : {false, true}) {
      std::vector<int32_t> want = y;
      for (int64_t i = 0; i < n; ++i)
        want[i] += x_signed ? static_cast<int32_t>(static_cast<int8_t>(x[i])) : x[i];
      ForEachSimdTarget([&](const std::string& target) {
        SCOPED_TRACE(target + " n=" + std::to_string(n) + (x_signed ? " int8" : " uint8"));
        std::vector<int32_t> got = y;
        kernels::common::AddBytesToInt32(x.data(), x_signed, n, got.data());
        EXPECT_EQ(got, want);
      });
    }
  }
}

}  // namespace
}  // namespace onyx::testing
