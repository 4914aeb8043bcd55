// Reference loops of the loss family (see loss.h for the contracts).
#include "kernels/reference/loss.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/element_types.h"

namespace onyx::kernels::reference {

template <typename S, typename T>
void NegativeLogLikelihood(const S* src, const int64_t* target, const T* weight, T* dst, int64_t n,
                           int64_t c, int64_t d, IgnoreIndex ignore, LossReduction reduction) {
  double loss_sum = 0.0;
  double weight_sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) {
      const int64_t k = i * d + j;
      const int64_t cls = target[k];
      double loss = 0.0;
      double w = 0.0;
      if (!ignore.Matches(cls)) {
        w = weight != nullptr ? static_cast<double>(weight[cls]) : 1.0;
        loss = -static_cast<double>(src[(i * c + cls) * d + j]) * w;
      }
      if (reduction == LossReduction::kNone) {
        dst[k] = static_cast<T>(loss);
      } else {
        loss_sum += loss;
        weight_sum += w;
      }
    }
  }
  if (reduction == LossReduction::kSum) dst[0] = static_cast<T>(loss_sum);
  if (reduction == LossReduction::kMean) dst[0] = static_cast<T>(loss_sum / weight_sum);
}

template <typename T>
void LogSoftmaxClasses(const T* src, double* dst, int64_t n, int64_t c, int64_t d) {
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) {
      const int64_t base = i * c * d + j;
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < c; ++k) max = std::max(max, static_cast<double>(src[base + k * d]));
      double sum = 0.0;
      for (int64_t k = 0; k < c; ++k) sum += std::exp(static_cast<double>(src[base + k * d]) - max);
      const double log_sum = std::log(sum);
      for (int64_t k = 0; k < c; ++k)
        dst[base + k * d] = static_cast<double>(src[base + k * d]) - max - log_sum;
    }
  }
}

#define ONYX_INSTANTIATE_LOSS(T)                                                              \
  template void NegativeLogLikelihood<T, T>(const T*, const int64_t*, const T*, T*, int64_t,  \
                                            int64_t, int64_t, IgnoreIndex, LossReduction);    \
  template void NegativeLogLikelihood<double, T>(const double*, const int64_t*, const T*, T*, \
                                                 int64_t, int64_t, int64_t, IgnoreIndex,      \
                                                 LossReduction);                              \
  template void LogSoftmaxClasses<T>(const T*, double*, int64_t, int64_t, int64_t);
ONYX_INSTANTIATE_LOSS(float)
ONYX_INSTANTIATE_LOSS(float16_t)
ONYX_INSTANTIATE_LOSS(bfloat16_t)
#undef ONYX_INSTANTIATE_LOSS
template void NegativeLogLikelihood<double, double>(const double*, const int64_t*, const double*,
                                                    double*, int64_t, int64_t, int64_t, IgnoreIndex,
                                                    LossReduction);
template void LogSoftmaxClasses<double>(const double*, double*, int64_t, int64_t, int64_t);

}  // namespace onyx::kernels::reference
