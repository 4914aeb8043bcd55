// Reference loops of the linear-algebra family: Det. Buffers are contiguous row-major.
// Element types: float, double, float16_t, bfloat16_t (computed in double).
#pragma once

#include <cstdint>

namespace onyx::kernels::reference {

// Determinants of `batch` square m x m matrices stored one after another in src; dst[b] is the
// determinant of matrix b (1 for m = 0). LU factorisation with partial pivoting in double, so the
// relative error is that of double LU rounded once to T. src and dst may not overlap.
template <typename T>
void Determinant(const T* src, T* dst, int64_t batch, int64_t m);

}  // namespace onyx::kernels::reference
