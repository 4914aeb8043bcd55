// Reference loops of Softmax/LogSoftmax/Hardmax, CumSum/CumProd and TopK (see reduction.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>

#include "kernels/element_types.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/reduction.h"

namespace onyx::kernels::reference {
namespace {

// Arithmetic type of a floating element type: double stays double, the rest compute in float.
template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

// One [n, inner] slab: softmax-family along n for each of the inner columns, through a buffer of
// the arithmetic type so float16/bfloat16 keep float precision until the final store.
template <typename T>
void SoftmaxSlab(SoftmaxKind kind, const T* src, T* dst, int64_t n, int64_t inner,
                 std::vector<Acc<T>>& buf, std::vector<Acc<T>>& mx, std::vector<Acc<T>>& sum) {
  using A = Acc<T>;
  buf.resize(static_cast<size_t>(n * inner));
  mx.assign(static_cast<size_t>(inner), -std::numeric_limits<A>::infinity());
  for (int64_t k = 0; k < n; ++k) {
    const T* s = src + k * inner;
    A* b = buf.data() + k * inner;
    for (int64_t i = 0; i < inner; ++i) {
      b[i] = static_cast<A>(s[i]);
      mx[i] = std::max(mx[i], b[i]);
    }
  }
  if (kind == SoftmaxKind::kHardmax) {
    // One-hot at the first index holding the maximum.
    std::vector<int64_t> arg(static_cast<size_t>(inner), -1);
    for (int64_t k = 0; k < n; ++k)
      for (int64_t i = 0; i < inner; ++i)
        if (arg[i] < 0 && buf[k * inner + i] == mx[i]) arg[i] = k;
    for (int64_t k = 0; k < n; ++k)
      for (int64_t i = 0; i < inner; ++i)
        dst[k * inner + i] = static_cast<T>(arg[i] == k ? 1.f : 0.f);
    return;
  }
  sum.assign(static_cast<size_t>(inner), A(0));
  for (int64_t k = 0; k < n; ++k) {
    A* b = buf.data() + k * inner;
    for (int64_t i = 0; i < inner; ++i) {
      b[i] = std::exp(b[i] - mx[i]);
      sum[i] += b[i];
    }
  }
  if (kind == SoftmaxKind::kSoftmax) {
    for (int64_t i = 0; i < inner; ++i) sum[i] = A(1) / sum[i];
    for (int64_t k = 0; k < n; ++k) {
      const A* b = buf.data() + k * inner;
      T* d = dst + k * inner;
      for (int64_t i = 0; i < inner; ++i) d[i] = static_cast<T>(b[i] * sum[i]);
    }
  } else {
    // log softmax = x - max - log(sum(exp(x - max))), computed from x, not from the rounded exp.
    for (int64_t i = 0; i < inner; ++i) sum[i] = mx[i] + std::log(sum[i]);
    for (int64_t k = 0; k < n; ++k) {
      const T* s = src + k * inner;
      T* d = dst + k * inner;
      for (int64_t i = 0; i < inner; ++i) d[i] = static_cast<T>(static_cast<A>(s[i]) - sum[i]);
    }
  }
}

// Strict weak order for TopK: "a ranks before b". NaN ranks above every number (as the largest).
template <typename C>
bool RanksBefore(C a, int64_t ia, C b, int64_t ib, bool largest) {
  if constexpr (std::is_floating_point_v<C>) {
    const bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) {
      if (na && nb) return ia < ib;
      return largest ? na : nb;
    }
  }
  if (a != b) return largest ? a > b : a < b;
  return ia < ib;
}

}  // namespace

// The common inner == 1 case: one contiguous row of n elements.
template <typename T>
void SoftmaxRow(SoftmaxKind kind, const T* src, T* dst, int64_t n, std::vector<Acc<T>>& buf) {
  using A = Acc<T>;
  buf.resize(static_cast<size_t>(n));
  A mx = -std::numeric_limits<A>::infinity();
  for (int64_t k = 0; k < n; ++k) {
    buf[k] = static_cast<A>(src[k]);
    mx = std::max(mx, buf[k]);
  }
  if (kind == SoftmaxKind::kHardmax) {
    int64_t arg = 0;  // first index holding the maximum; none (all zeros) when NaN hides it
    while (arg < n && !(buf[arg] == mx)) ++arg;
    for (int64_t k = 0; k < n; ++k) dst[k] = static_cast<T>(k == arg ? 1.f : 0.f);
    return;
  }
  A sum = 0;
  for (int64_t k = 0; k < n; ++k) {
    buf[k] = std::exp(buf[k] - mx);
    sum += buf[k];
  }
  if (kind == SoftmaxKind::kSoftmax) {
    const A inv = A(1) / sum;
    for (int64_t k = 0; k < n; ++k) dst[k] = static_cast<T>(buf[k] * inv);
  } else {
    const A shift = mx + std::log(sum);
    for (int64_t k = 0; k < n; ++k) dst[k] = static_cast<T>(static_cast<A>(src[k]) - shift);
  }
}

template <typename T>
void SoftmaxAxis(SoftmaxKind kind, const T* src, T* dst, int64_t outer, int64_t n, int64_t inner,
                 int threads) {
  if (n == 0 || inner == 0) return;
  ParallelFor(outer, n * inner, threads, [&](int64_t begin, int64_t end) {
    std::vector<Acc<T>> buf, mx, sum;
    if (inner == 1) {
      for (int64_t o = begin; o < end; ++o) SoftmaxRow(kind, src + o * n, dst + o * n, n, buf);
      return;
    }
    for (int64_t o = begin; o < end; ++o)
      SoftmaxSlab(kind, src + o * n * inner, dst + o * n * inner, n, inner, buf, mx, sum);
  });
}

// The accumulator of a scan: double for floating types; for integers an unsigned type at least
// as wide as int, whose wrap-around is defined (a signed int32 product that overflows is not:
// found by fuzz_run) and gives T's two's-complement result once converted back.
template <typename T, bool = std::is_integral_v<T>>
struct ScanAccumulator {
  using type = double;
};
template <typename T>
struct ScanAccumulator<T, true> {
  using type =
      std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
};

template <typename T>
void Cumulative(const T* src, T* dst, int64_t outer, int64_t n, int64_t inner, bool exclusive,
                bool reverse, bool product) {
  // Integers wrap around in their own width, floating types accumulate in double.
  using S = typename ScanAccumulator<T>::type;
  std::vector<S> acc(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    const T* s = src + o * n * inner;
    T* d = dst + o * n * inner;
    std::fill(acc.begin(), acc.end(), product ? S(1) : S(0));
    for (int64_t step = 0; step < n; ++step) {
      const int64_t k = reverse ? n - 1 - step : step;
      for (int64_t i = 0; i < inner; ++i) {
        const S v = static_cast<S>(s[k * inner + i]);
        if (exclusive) d[k * inner + i] = static_cast<T>(acc[i]);
        acc[i] = product ? static_cast<S>(acc[i] * v) : static_cast<S>(acc[i] + v);
        if (!exclusive) d[k * inner + i] = static_cast<T>(acc[i]);
      }
    }
  }
}

template <typename T>
void TopK(const T* src, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner,
          int64_t k, bool largest) {
  using C = std::conditional_t<std::is_integral_v<T>, T, double>;
  std::vector<C> col(static_cast<size_t>(n));
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T* s = src + o * n * inner + i;
      for (int64_t j = 0; j < n; ++j) col[j] = static_cast<C>(s[j * inner]);
      std::iota(order.begin(), order.end(), int64_t{0});
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
        return RanksBefore(col[a], a, col[b], b, largest);
      });
      for (int64_t j = 0; j < k; ++j) {
        const int64_t out = (o * k + j) * inner + i;
        values[out] = s[order[j] * inner];
        indices[out] = order[j];
      }
    }
  }
}

#define ONYX_INSTANTIATE_SOFTMAX(T) \
  template void SoftmaxAxis<T>(SoftmaxKind, const T*, T*, int64_t, int64_t, int64_t, int);
ONYX_INSTANTIATE_SOFTMAX(float)
ONYX_INSTANTIATE_SOFTMAX(double)
ONYX_INSTANTIATE_SOFTMAX(float16_t)
ONYX_INSTANTIATE_SOFTMAX(bfloat16_t)
#undef ONYX_INSTANTIATE_SOFTMAX

#define ONYX_INSTANTIATE_SORT_SCAN(T)                                                     \
  template void Cumulative<T>(const T*, T*, int64_t, int64_t, int64_t, bool, bool, bool); \
  template void TopK<T>(const T*, T*, int64_t*, int64_t, int64_t, int64_t, int64_t, bool);
ONYX_INSTANTIATE_SORT_SCAN(float)
ONYX_INSTANTIATE_SORT_SCAN(double)
ONYX_INSTANTIATE_SORT_SCAN(float16_t)
ONYX_INSTANTIATE_SORT_SCAN(bfloat16_t)
ONYX_INSTANTIATE_SORT_SCAN(int8_t)
ONYX_INSTANTIATE_SORT_SCAN(int16_t)
ONYX_INSTANTIATE_SORT_SCAN(int32_t)
ONYX_INSTANTIATE_SORT_SCAN(int64_t)
ONYX_INSTANTIATE_SORT_SCAN(uint8_t)
ONYX_INSTANTIATE_SORT_SCAN(uint16_t)
ONYX_INSTANTIATE_SORT_SCAN(uint32_t)
ONYX_INSTANTIATE_SORT_SCAN(uint64_t)
#undef ONYX_INSTANTIATE_SORT_SCAN

}  // namespace onyx::kernels::reference
