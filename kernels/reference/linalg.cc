// Reference loops of the linear-algebra family (see linalg.h for the contracts).
#include "kernels/reference/linalg.h"

#include <cmath>
#include <utility>
#include <vector>

#include "kernels/element_types.h"

namespace onyx::kernels::reference {

namespace {

// Determinant of the m x m matrix in a (overwritten by its LU factors).
double LuDeterminant(double* a, int64_t m) {
  double det = 1.0;
  for (int64_t k = 0; k < m; ++k) {
    // Partial pivoting: the largest magnitude in column k at or below the diagonal.
    int64_t pivot = k;
    for (int64_t i = k + 1; i < m; ++i)
      if (std::fabs(a[i * m + k]) > std::fabs(a[pivot * m + k])) pivot = i;
    if (pivot != k) {
      for (int64_t j = 0; j < m; ++j) std::swap(a[k * m + j], a[pivot * m + j]);
      det = -det;
    }
    const double diag = a[k * m + k];
    det *= diag;
    if (diag == 0.0) return det;  // singular (keeps the sign of a signed zero / NaN propagation)
    for (int64_t i = k + 1; i < m; ++i) {
      const double f = a[i * m + k] / diag;
      if (f == 0.0) continue;
      for (int64_t j = k + 1; j < m; ++j) a[i * m + j] -= f * a[k * m + j];
    }
  }
  return det;
}

}  // namespace

template <typename T>
void Determinant(const T* src, T* dst, int64_t batch, int64_t m) {
  const int64_t size = m * m;
  std::vector<double> a(static_cast<size_t>(size));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < size; ++i) a[i] = static_cast<double>(src[b * size + i]);
    dst[b] = static_cast<T>(LuDeterminant(a.data(), m));
  }
}

template void Determinant<float>(const float*, float*, int64_t, int64_t);
template void Determinant<double>(const double*, double*, int64_t, int64_t);
template void Determinant<float16_t>(const float16_t*, float16_t*, int64_t, int64_t);
template void Determinant<bfloat16_t>(const bfloat16_t*, bfloat16_t*, int64_t, int64_t);

}  // namespace onyx::kernels::reference
