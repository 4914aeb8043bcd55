// Reference loops of Reduce* and ArgMax/ArgMin (see reduction.h for the contracts).
#include "kernels/reference/reduction.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/element_types.h"
#include "kernels/op_helpers.h"

namespace onyx::kernels::reference {
namespace {

template <typename T>
constexpr bool kIsInt = std::is_integral_v<T>;  // bool included

// Accumulator of sums and products: 64-bit integers for integers (wrap-around like ONNX Runtime),
// double for floating types. Unsigned even for signed types: a signed int64 sum that overflows is
// undefined (an element converts to its two's-complement value modulo 2^64, and back).
template <typename T>
using SumAcc = std::conditional_t<kIsInt<T>, uint64_t, double>;

// An integer accumulator as the signed or unsigned number it stands for (for Mean).
template <typename T>
double AccValue(SumAcc<T> acc) {
  if constexpr (kIsInt<T> && std::is_signed_v<T>)
    return static_cast<double>(static_cast<int64_t>(acc));
  else
    return static_cast<double>(acc);
}

// |v| in the accumulator type; for signed integers computed unsigned, so |INT64_MIN| is defined.
template <typename T>
SumAcc<T> AbsAcc(T v) {
  if constexpr (kIsInt<T> && std::is_signed_v<T>) {
    const auto u = static_cast<uint64_t>(static_cast<int64_t>(v));
    return v < 0 ? uint64_t{0} - u : u;
  } else if constexpr (kIsInt<T>) {
    return static_cast<uint64_t>(v);
  } else {
    const double d = static_cast<double>(v);
    return d < 0 ? -d : d;
  }
}
// Comparison type of Max/Min: the integer itself, or double for floating types.
template <typename T>
using CmpType = std::conditional_t<kIsInt<T>, T, double>;

// double -> T, saturating for integers (numpy's astype is undefined there; saturation is at least
// deterministic) and NaN -> 0.
template <typename T>
T CastFromDouble(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (kIsInt<T>) {
    if (std::isnan(v)) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest()))
      return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

// Reduces n elements read through get(j).
template <typename T, typename Get>
T ReduceOne(ReduceOp op, int64_t n, Get get) {
  using S = SumAcc<T>;
  using C = CmpType<T>;
  switch (op) {
    case ReduceOp::kSum: {
      S acc = 0;
      for (int64_t j = 0; j < n; ++j) acc += static_cast<S>(get(j));
      return static_cast<T>(acc);
    }
    case ReduceOp::kMean: {
      S acc = 0;
      for (int64_t j = 0; j < n; ++j) acc += static_cast<S>(get(j));
      return CastFromDouble<T>(AccValue<T>(acc) / static_cast<double>(n));
    }
    case ReduceOp::kProd: {
      S acc = 1;
      for (int64_t j = 0; j < n; ++j) acc *= static_cast<S>(get(j));
      return static_cast<T>(acc);
    }
    case ReduceOp::kL1: {
      S acc = 0;
      for (int64_t j = 0; j < n; ++j) acc += AbsAcc<T>(get(j));
      return static_cast<T>(acc);
    }
    case ReduceOp::kSumSquare: {
      S acc = 0;
      for (int64_t j = 0; j < n; ++j) {
        const S v = static_cast<S>(get(j));
        acc += v * v;
      }
      return static_cast<T>(acc);
    }
    case ReduceOp::kL2: {
      double acc = 0;
      for (int64_t j = 0; j < n; ++j) {
        const double v = static_cast<double>(get(j));
        acc += v * v;
      }
      return CastFromDouble<T>(std::sqrt(acc));
    }
    case ReduceOp::kLogSum: {
      double acc = 0;
      for (int64_t j = 0; j < n; ++j) acc += static_cast<double>(get(j));
      return CastFromDouble<T>(std::log(acc));
    }
    case ReduceOp::kLogSumExp: {
      // log(sum(exp(x))) = m + log(sum(exp(x - m))) with m the max, so large inputs do not
      // overflow.
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < n; ++j) {
        const double v = static_cast<double>(get(j));
        if (v > m || std::isnan(v)) m = v;
      }
      if (!std::isfinite(m)) return CastFromDouble<T>(m);
      double acc = 0;
      for (int64_t j = 0; j < n; ++j) acc += std::exp(static_cast<double>(get(j)) - m);
      return CastFromDouble<T>(m + std::log(acc));
    }
    case ReduceOp::kMax:
    case ReduceOp::kMin: {
      const bool is_max = op == ReduceOp::kMax;
      C acc;
      if constexpr (kIsInt<T>) {
        acc = is_max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
      } else {
        acc = is_max ? -std::numeric_limits<double>::infinity()
                     : std::numeric_limits<double>::infinity();
      }
      for (int64_t j = 0; j < n; ++j) {
        const C v = static_cast<C>(get(j));
        if constexpr (!kIsInt<T>) {
          if (std::isnan(v)) return static_cast<T>(v);  // NaN propagates, as in numpy
        }
        if (is_max ? v > acc : v < acc) acc = v;
      }
      return static_cast<T>(acc);
    }
  }
  return T();
}

}  // namespace

ReduceGeometry MakeReduceGeometry(const Shape& shape, const std::vector<bool>& reduced) {
  const size_t rank = shape.size();
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  // Enumerates sum(idx[d] * strides[d]) over the selected dims in row-major order.
  auto enumerate = [&](bool want_reduced) {
    std::vector<size_t> dims;
    int64_t count = 1;
    for (size_t d = 0; d < rank; ++d) {
      if (reduced[d] == want_reduced) {
        dims.push_back(d);
        count *= shape[d];
      }
    }
    std::vector<int64_t> out;
    out.reserve(static_cast<size_t>(count));
    std::vector<int64_t> idx(dims.size(), 0);
    int64_t off = 0;
    for (int64_t i = 0; i < count; ++i) {
      out.push_back(off);
      for (size_t k = dims.size(); k-- > 0;) {
        const size_t d = dims[k];
        off += strides[d];
        if (++idx[k] < shape[d]) break;
        off -= strides[d] * shape[d];
        idx[k] = 0;
      }
    }
    return out;
  };
  ReduceGeometry g;
  g.base = enumerate(false);
  g.offsets = enumerate(true);
  g.contiguous = true;
  for (size_t j = 0; j < g.offsets.size(); ++j) {
    if (g.offsets[j] != static_cast<int64_t>(j)) {
      g.contiguous = false;
      break;
    }
  }
  return g;
}

template <typename T>
void Reduce(ReduceOp op, const T* src, T* dst, const ReduceGeometry& g, int threads) {
  const int64_t outputs = static_cast<int64_t>(g.base.size());
  const int64_t n = static_cast<int64_t>(g.offsets.size());
  ParallelFor(outputs, n, threads, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const T* s = src + g.base[o];
      if (g.contiguous) {
        dst[o] = ReduceOne<T>(op, n, [s](int64_t j) { return s[j]; });
      } else {
        const int64_t* off = g.offsets.data();
        dst[o] = ReduceOne<T>(op, n, [s, off](int64_t j) { return s[off[j]]; });
      }
    }
  });
}

template <typename T>
void ArgReduce(const T* src, int64_t* dst, int64_t outer, int64_t n, int64_t inner, bool is_max,
               bool select_last) {
  using C = CmpType<T>;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const T* s = src + o * n * inner + i;
      C best = static_cast<C>(s[0]);
      int64_t best_k = 0;
      for (int64_t k = 1; k < n; ++k) {
        const C v = static_cast<C>(s[k * inner]);
        const bool better = is_max ? v > best : v < best;
        if (better || (select_last && v == best)) {
          best = v;
          best_k = k;
        }
      }
      dst[o * inner + i] = best_k;
    }
  }
}

#define ONYX_INSTANTIATE_REDUCE(T)                                             \
  template void Reduce<T>(ReduceOp, const T*, T*, const ReduceGeometry&, int); \
  template void ArgReduce<T>(const T*, int64_t*, int64_t, int64_t, int64_t, bool, bool);

ONYX_INSTANTIATE_REDUCE(float)
ONYX_INSTANTIATE_REDUCE(double)
ONYX_INSTANTIATE_REDUCE(float16_t)
ONYX_INSTANTIATE_REDUCE(bfloat16_t)
ONYX_INSTANTIATE_REDUCE(int8_t)
ONYX_INSTANTIATE_REDUCE(int16_t)
ONYX_INSTANTIATE_REDUCE(int32_t)
ONYX_INSTANTIATE_REDUCE(int64_t)
ONYX_INSTANTIATE_REDUCE(uint8_t)
ONYX_INSTANTIATE_REDUCE(uint16_t)
ONYX_INSTANTIATE_REDUCE(uint32_t)
ONYX_INSTANTIATE_REDUCE(uint64_t)
ONYX_INSTANTIATE_REDUCE(bool)
#undef ONYX_INSTANTIATE_REDUCE

}  // namespace onyx::kernels::reference
