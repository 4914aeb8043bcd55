// Exact int32 products for the integer paths that have no oneDNN primitive (DynamicQuantizeLSTM's
// per-step products), on Highway with run-time dispatch.
#pragma once

#include <cstdint>
#include <vector>

namespace onyx::kernels::common {

// W [K, N] of 8-bit values (row-major) rearranged for Int32RowTimes8BitMatrix: rows in pairs,
// element (2i + r, j) at [(i * N + j) * 2 + r], a zero row added when K is odd. The pairs feed
// one 16-bit multiply-add of two rows at once (vpmaddwd on x86).
std::vector<uint8_t> PairRows8Bit(const uint8_t* w, int64_t k, int64_t n);

// acc[j] = sum over i < k of q[i] * w[i][j], for j < n, exactly in int32, with `w_pairs` made by
// PairRows8Bit and its values read as int8 (`w_signed`) or uint8. q's values must fit in
// [-32767, 32767] (each pair of products is summed in int32 before accumulating). Pairs of q that
// are both 0 are skipped. W stays 8-bit in memory: a quarter of an int32 copy's bytes, which is
// what a product of one row streaming a large W is bound by.
void Int32RowTimes8BitMatrix(const int32_t* q, int64_t k, const uint8_t* w_pairs, bool w_signed,
                             int64_t n, int32_t* acc);

}  // namespace onyx::kernels::common
