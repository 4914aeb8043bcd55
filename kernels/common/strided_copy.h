// Byte-level copy helpers of the data-movement kernels (Transpose, Concat, Split, Slice, Gather):
// strided gathers into a contiguous buffer as memcpy runs, and a cache-blocked 2-D transpose.
// Elements are opaque: only their size (1, 2, 4 or 8 bytes) matters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "onyx/tensor.h"

namespace onyx::kernels::common {

// dst[i] = src[offset + sum_d idx_d(i) * strides[d]] for every row-major index i of `shape`
// (strides and offset in elements; strides may be 0 or negative). Size-1 dims are dropped and
// dims that continue each other merged, so contiguous inner runs become one memcpy each. dst is
// contiguous and must not overlap src. Runs in parallel on up to `threads` threads when large.
void StridedCopy(const void* src, int64_t offset, std::vector<int64_t> strides, Shape shape,
                 void* dst, size_t elem_size, int threads);

// dst[a * dst_stride + b] = src[a + b * src_stride] for a < rows, b < cols: one 2-D transpose
// (src read along a, dst written along b); 4- and 8-byte elements go through the Highway
// register-block transposes. elem_size is 1, 2, 4 or 8.
void Transpose2D(const void* src, int64_t src_stride, void* dst, int64_t dst_stride, int64_t rows,
                 int64_t cols, size_t elem_size);

}  // namespace onyx::kernels::common
