// Exact int32 arithmetic for the integer paths: DynamicQuantizeLSTM's per-step products (no oneDNN
// primitive) and ConvInteger's corrections, on Highway with run-time dispatch.
#pragma once

#include <cstdint>
#include <vector>

namespace onyx::kernels::common {

// W [K, N] of 8-bit values (row-major) rearranged for Int32RowTimes8BitMatrix: rows in pairs,
// element (2i + r, j) at [(i * N + j) * 2 + r], a zero row added when K is odd. The pairs feed
// one 16-bit multiply-add of two rows at once (vpmaddwd on x86).
std::vector<uint8_t> PairRows8Bit(const uint8_t* w, int64_t k, int64_t n);

// acc[r][j] = sum over i < k of q[r][i] * w[i][j], for r < rows and j < n (q [rows, k] and acc
// [rows, n] row-major), exactly in int32, with `w_pairs` made by PairRows8Bit and its values read
// as int8 (`w_signed`) or uint8. q's values must fit in [-32767, 32767] (each pair of products
// is summed in int32 before accumulating). W stays 8-bit in memory, a quarter of an int32 copy's
// bytes, and is read once per four rows: a product streaming a large W is bound by its bytes.
void Int32RowsTimes8BitMatrix(const int32_t* q, int64_t rows, int64_t k, const uint8_t* w_pairs,
                              bool w_signed, int64_t n, int32_t* acc);

// y[i] -= ka * a[i] + kb * b[i] for i < n (b may be null), in int32 (ConvInteger's zero-point
// corrections).
void SubtractScaled(int32_t* y, int64_t n, int32_t ka, const int32_t* a, int32_t kb,
                    const int32_t* b);
// sums[i] += x[i] for i < n, x int8 (`x_signed`) or uint8.
void AddBytesToInt32(const void* x, bool x_signed, int64_t n, int32_t* sums);

}  // namespace onyx::kernels::common
