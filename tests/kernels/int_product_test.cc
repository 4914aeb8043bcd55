// Int32RowTimes8BitMatrix (kernels/common/int_product_hwy.cc) against a plain int64 sum, exactly,
// on every Highway target: int8 and uint8 W, odd and even row counts (pairs of rows), widths
// that end inside a vector and span the two-vector blocks, zeros in q (skipped pairs) and
// extreme values.
#include "kernels/common/int_product.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

TEST(Int32RowTimes8BitMatrix, MatchesAPlainSumOnEveryTarget) {
  std::mt19937 rng(19);
  for (bool w_signed : {false, true}) {
    for (int64_t n : {1, 15, 16, 17, 63, 64, 65, 130, 2048}) {
      for (int64_t k : {1, 2, 7, 70, 71}) {
        std::vector<uint8_t> w(static_cast<size_t>(k * n));
        for (auto& v : w) v = static_cast<uint8_t>(rng() & 0xff);
        std::vector<int32_t> q(static_cast<size_t>(k));
        for (int64_t i = 0; i < k; ++i)
          q[i] = i % 5 == 0 || i % 7 == 1 ? 0 : static_cast<int32_t>(rng() % 511) - 255;
        q[k - 1] = k > 1 ? -255 : q[k - 1];
        std::vector<int32_t> want(static_cast<size_t>(n));
        for (int64_t j = 0; j < n; ++j) {
          int64_t s = 0;
          for (int64_t i = 0; i < k; ++i) {
            const uint8_t b = w[i * n + j];
            s += static_cast<int64_t>(q[i]) *
                 (w_signed ? static_cast<int64_t>(static_cast<int8_t>(b)) : b);
          }
          want[j] = static_cast<int32_t>(s);
        }
        const std::vector<uint8_t> pairs = kernels::common::PairRows8Bit(w.data(), k, n);
        ForEachSimdTarget([&](const std::string& target) {
          SCOPED_TRACE(target + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
                       (w_signed ? " int8" : " uint8"));
          std::vector<int32_t> got(static_cast<size_t>(n), 12345);
          kernels::common::Int32RowTimes8BitMatrix(q.data(), k, pairs.data(), w_signed, n,
                                                   got.data());
          EXPECT_EQ(got, want);
        });
      }
    }
  }
}

}  // namespace
}  // namespace onyx::testing
