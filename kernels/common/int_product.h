// Exact int32 products for the integer paths that have no oneDNN primitive (DynamicQuantizeLSTM's
// per-step products), on Highway with run-time dispatch.
#pragma once

#include <cstdint>

namespace onyx::kernels::common {

// acc[j] = sum over i < k of q[i] * w[i * n + j], for j < n, in int32, with w's 8-bit values
// read as int8 (`w_signed`) or uint8 (wrapping as the scalar loop does; callers keep the sums in
// range). Rows of q that are 0 are skipped. W stays 8-bit in memory: a quarter of an int32 copy's
// bytes, which is what a product of one row streaming a large W is bound by.
void Int32RowTimes8BitMatrix(const int32_t* q, int64_t k, const void* w, bool w_signed, int64_t n,
                             int32_t* acc);

}  // namespace onyx::kernels::common
