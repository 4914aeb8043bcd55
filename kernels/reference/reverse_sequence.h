// Reference loop of ReverseSequence. Buffers are contiguous row-major.
// Element types: every dtype (elements are copied as bytes of DTypeSize, strings deep-copied).
#pragma once

#include <cstdint>

#include "onyx/dtype.h"

namespace onyx::kernels::reference {

// src is viewed as [dim0, dim1, inner]; the time axis is 0 when time_major, else 1, and the other
// of the two is the batch axis. For batch b, time steps t < lens[b] read step lens[b] - 1 - t; the
// rest are copied unchanged. Contract: 0 <= lens[b] <= time length for every b (the caller
// validates). dst must not overlap src.
void ReverseSequence(DType dtype, const void* src, void* dst, int64_t dim0, int64_t dim1,
                     int64_t inner, bool time_major, const int64_t* lens);

}  // namespace onyx::kernels::reference
