// A shared blocked GEMM for float and double: the engine under Conv, ConvTranspose, Gemm, MatMul
// and Einsum. Plain C++ written so that -O3 vectorises the micro-kernel at the SSE2 baseline;
// faster ISA-specific kernels (oneDNN) are a later issue.
#pragma once

#include <cstdint>

namespace onyx::kernels {

// C = alpha * op(A) * op(B) + beta * C, all row-major.
//   op(A) is m x k: A[i*lda + p] (trans_a = false) or A[p*lda + i] (trans_a = true).
//   op(B) is k x n: B[p*ldb + j] (trans_b = false) or B[j*ldb + p] (trans_b = true).
//   C is m x n with row stride ldc.
// beta == 0 makes C write-only: its old contents (NaNs included) are ignored, as BLAS does.
// `parallel` lets the routine split the work over TBB threads; pass false when the caller already
// runs many GEMMs in parallel. C must not alias A or B. Results may differ from a naive loop by
// summation order (a few ULP), never by more.
template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc, bool parallel = true);

extern template void Gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*,
                                 int64_t, const float*, int64_t, float, float*, int64_t, bool);
extern template void Gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*,
                                  int64_t, const double*, int64_t, double, double*, int64_t, bool);

// Naive C = alpha * op(A) * op(B) + beta * C for integer (and any other) element types,
// accumulating in Acc. Same argument conventions as Gemm; beta == 0 ignores C's old contents.
template <typename T, typename Acc = T>
void GemmNaive(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, Acc alpha, const T* a,
               int64_t lda, const T* b, int64_t ldb, Acc beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      Acc sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        const Acc av = static_cast<Acc>(trans_a ? a[p * lda + i] : a[i * lda + p]);
        const Acc bv = static_cast<Acc>(trans_b ? b[j * ldb + p] : b[p * ldb + j]);
        sum += av * bv;
      }
      Acc out = alpha * sum;
      if (beta != Acc(0)) out += beta * static_cast<Acc>(c[i * ldc + j]);
      c[i * ldc + j] = static_cast<T>(out);
    }
  }
}

}  // namespace onyx::kernels
