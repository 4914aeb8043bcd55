// Reference loops of the normalization family (see normalization.h for the contracts).
#include "kernels/reference/normalization.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/element_types.h"
#include "kernels/op_helpers.h"

namespace onyx::kernels::reference {
namespace {

// Arithmetic type of an element type: double stays double, the rest compute in float.
template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

}  // namespace

template <typename T>
void ChannelAffine(const T* src, T* dst, int64_t batch, int64_t channels, int64_t inner,
                   const std::vector<double>& scale, const std::vector<double>& shift,
                   int threads) {
  using A = Acc<T>;
  ParallelFor(batch * channels, inner, threads, [&](int64_t begin, int64_t end) {
    for (int64_t bc = begin; bc < end; ++bc) {
      const int64_t c = bc % channels;
      const A a = static_cast<A>(scale[c]);
      const A b = static_cast<A>(shift[c]);
      const T* s = src + bc * inner;
      T* d = dst + bc * inner;
      for (int64_t i = 0; i < inner; ++i) d[i] = static_cast<T>(static_cast<A>(s[i]) * a + b);
    }
  });
}

template <typename T>
void RowMoments(const T* src, int64_t rows, int64_t cols, double* mean, double* var) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* s = src + r * cols;
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j) sum += static_cast<double>(s[j]);
    const double m = cols > 0 ? sum / static_cast<double>(cols) : 0.0;
    double sq = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const double d = static_cast<double>(s[j]) - m;
      sq += d * d;
    }
    mean[r] = m;
    var[r] = cols > 0 ? sq / static_cast<double>(cols) : 0.0;
  }
}

template <typename T>
void ChannelMoments(const T* src, int64_t batch, int64_t channels, int64_t inner, double* mean,
                    double* var) {
  const double count = static_cast<double>(batch * inner);
  for (int64_t c = 0; c < channels; ++c) {
    double sum = 0;
    for (int64_t n = 0; n < batch; ++n) {
      const T* s = src + (n * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i) sum += static_cast<double>(s[i]);
    }
    const double m = count > 0 ? sum / count : 0.0;
    double sq = 0;
    for (int64_t n = 0; n < batch; ++n) {
      const T* s = src + (n * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        const double d = static_cast<double>(s[i]) - m;
        sq += d * d;
      }
    }
    mean[c] = m;
    var[c] = count > 0 ? sq / count : 0.0;
  }
}

template <typename T>
void Lrn(const T* src, T* dst, int64_t batch, int64_t channels, int64_t inner, int64_t size,
         double alpha, double beta, double bias) {
  using A = Acc<T>;
  // Window [c - before, c + after] (inclusive), from the ONNX LRN formula.
  const int64_t before = (size - 1) / 2;
  const int64_t after = size - 1 - before;
  const A scale = static_cast<A>(alpha / static_cast<double>(size));
  const A k = static_cast<A>(bias);
  const A neg_beta = static_cast<A>(-beta);
  const bool three_quarters = beta == 0.75;  // the AlexNet/GoogLeNet value
  std::vector<A> squares(static_cast<size_t>(channels * inner));
  std::vector<A> window(static_cast<size_t>(inner));
  for (int64_t n = 0; n < batch; ++n) {
    const T* s = src + n * channels * inner;
    T* d = dst + n * channels * inner;
    for (int64_t i = 0; i < channels * inner; ++i) {
      const A v = static_cast<A>(s[i]);
      squares[i] = v * v;
    }
    for (int64_t c = 0; c < channels; ++c) {
      std::fill(window.begin(), window.end(), A(0));
      const int64_t lo = std::max<int64_t>(0, c - before);
      const int64_t hi = std::min<int64_t>(channels - 1, c + after);
      for (int64_t cc = lo; cc <= hi; ++cc) {
        const A* sq = squares.data() + cc * inner;
        for (int64_t i = 0; i < inner; ++i) window[i] += sq[i];
      }
      const T* sc = s + c * inner;
      T* dc = d + c * inner;
      if (three_quarters) {
        // base^-0.75 = r * sqrt(r) with r = base^-0.5: two square roots instead of a pow.
        for (int64_t i = 0; i < inner; ++i) {
          const A r = A(1) / std::sqrt(k + scale * window[i]);
          dc[i] = static_cast<T>(static_cast<A>(sc[i]) * r * std::sqrt(r));
        }
      } else {
        for (int64_t i = 0; i < inner; ++i)
          dc[i] = static_cast<T>(static_cast<A>(sc[i]) * std::pow(k + scale * window[i], neg_beta));
      }
    }
  }
}

template <typename T>
void LayerNorm(const T* src, T* dst, int64_t rows, int64_t cols, const std::vector<double>& scale,
               const std::vector<double>& bias, double epsilon, double* mean_out,
               double* inv_std_out) {
  using A = Acc<T>;
  std::vector<A> w(scale.begin(), scale.end());
  std::vector<A> b(static_cast<size_t>(cols), A(0));
  if (!bias.empty()) std::copy(bias.begin(), bias.end(), b.begin());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    RowMoments(src + r * cols, 1, cols, &mean, &var);
    const double inv_std = 1.0 / std::sqrt(var + epsilon);
    const T* s = src + r * cols;
    T* d = dst + r * cols;
    const A m = static_cast<A>(mean);
    const A is = static_cast<A>(inv_std);
    for (int64_t j = 0; j < cols; ++j)
      d[j] = static_cast<T>((static_cast<A>(s[j]) - m) * is * w[j] + b[j]);
    if (mean_out) mean_out[r] = mean;
    if (inv_std_out) inv_std_out[r] = inv_std;
  }
}

template <typename T>
void RmsNorm(const T* src, T* dst, int64_t rows, int64_t cols, const std::vector<double>& scale,
             double epsilon) {
  using A = Acc<T>;
  std::vector<A> w(scale.begin(), scale.end());
  for (int64_t r = 0; r < rows; ++r) {
    const T* s = src + r * cols;
    T* d = dst + r * cols;
    double sq = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const double v = static_cast<double>(s[j]);
      sq += v * v;
    }
    const double mean_sq = cols > 0 ? sq / static_cast<double>(cols) : 0.0;
    const A inv_rms = static_cast<A>(1.0 / std::sqrt(mean_sq + epsilon));
    for (int64_t j = 0; j < cols; ++j) d[j] = static_cast<T>(static_cast<A>(s[j]) * inv_rms * w[j]);
  }
}

template <typename T>
void LpNorm(const T* src, T* dst, int64_t outer, int64_t n, int64_t inner, int64_t p) {
  using A = Acc<T>;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T* s = src + o * n * inner + i;
      T* d = dst + o * n * inner + i;
      double acc = 0;
      for (int64_t k = 0; k < n; ++k) {
        const double v = static_cast<double>(s[k * inner]);
        acc += p == 1 ? std::fabs(v) : v * v;
      }
      const double norm = p == 1 ? acc : std::sqrt(acc);
      for (int64_t k = 0; k < n; ++k) {
        d[k * inner] =
            norm == 0 ? T(0)
                      : static_cast<T>(static_cast<A>(static_cast<double>(s[k * inner]) / norm));
      }
    }
  }
}

template <typename T>
void MeanVarianceNorm(const T* src, T* dst, const ReduceGeometry& g, double epsilon) {
  using A = Acc<T>;
  const int64_t n = static_cast<int64_t>(g.offsets.size());
  for (size_t o = 0; o < g.base.size(); ++o) {
    const T* s = src + g.base[o];
    T* d = dst + g.base[o];
    double sum = 0, sq = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double v = static_cast<double>(s[g.offsets[j]]);
      sum += v;
      sq += v * v;
    }
    const double mean = sum / static_cast<double>(n);
    const double var = std::max(0.0, sq / static_cast<double>(n) - mean * mean);
    const A m = static_cast<A>(mean);
    const A inv = static_cast<A>(1.0 / (std::sqrt(var) + epsilon));
    for (int64_t j = 0; j < n; ++j)
      d[g.offsets[j]] = static_cast<T>((static_cast<A>(s[g.offsets[j]]) - m) * inv);
  }
}

#define ONYX_INSTANTIATE_NORMALIZATION(T)                                                         \
  template void ChannelAffine<T>(const T*, T*, int64_t, int64_t, int64_t,                         \
                                 const std::vector<double>&, const std::vector<double>&, int);    \
  template void RowMoments<T>(const T*, int64_t, int64_t, double*, double*);                      \
  template void ChannelMoments<T>(const T*, int64_t, int64_t, int64_t, double*, double*);         \
  template void Lrn<T>(const T*, T*, int64_t, int64_t, int64_t, int64_t, double, double, double); \
  template void LayerNorm<T>(const T*, T*, int64_t, int64_t, const std::vector<double>&,          \
                             const std::vector<double>&, double, double*, double*);               \
  template void RmsNorm<T>(const T*, T*, int64_t, int64_t, const std::vector<double>&, double);   \
  template void LpNorm<T>(const T*, T*, int64_t, int64_t, int64_t, int64_t);                      \
  template void MeanVarianceNorm<T>(const T*, T*, const ReduceGeometry&, double);

ONYX_INSTANTIATE_NORMALIZATION(float)
ONYX_INSTANTIATE_NORMALIZATION(double)
ONYX_INSTANTIATE_NORMALIZATION(float16_t)
ONYX_INSTANTIATE_NORMALIZATION(bfloat16_t)
#undef ONYX_INSTANTIATE_NORMALIZATION

}  // namespace onyx::kernels::reference
