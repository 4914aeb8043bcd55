// Highway loops of the float32 reductions over contiguous rows and over columns (the reduced axis
// outside the kept contiguous one); see simd_kernels.h for the contracts.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/common/simd_kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/common/reduce_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/common/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::kernels::common::HWY_NAMESPACE {
namespace {

// Columns per block of the column reductions: the double accumulators (32 KB) stay in L1/L2
// while whole input rows stream through (2048-8192 measured alike; 1024 and below lose).
constexpr size_t kColumnBlock = static_cast<size_t>(kReduceColumnBlock);

bool Squares(ReduceKind kind) {
  return kind == ReduceKind::kSumSquare || kind == ReduceKind::kL2;
}

// Max/Min step that keeps the first extremum and lets a NaN stick once seen (as the reference).
template <bool kMax, class V>
HWY_INLINE V Extremum(V acc, V v) {
  const auto better = kMax ? hn::Gt(v, acc) : hn::Lt(v, acc);
  return hn::IfThenElse(hn::Or(better, hn::IsNaN(v)), v, acc);
}
template <bool kMax>
HWY_INLINE float ExtremumScalar(float acc, float v) {
  return (kMax ? v > acc : v < acc) || std::isnan(v) ? v : acc;
}

// Sum of src[0, n) (or of the squares) in double.
template <bool kSquare>
double RowSum(const float* src, size_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;  // as many floats as dd has doubles
  const size_t lanes = hn::Lanes(dd);
  auto a0 = hn::Zero(dd), a1 = hn::Zero(dd), a2 = hn::Zero(dd), a3 = hn::Zero(dd);
  auto step = [](auto acc, auto v) { return kSquare ? hn::MulAdd(v, v, acc) : hn::Add(acc, v); };
  size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    a0 = step(a0, hn::PromoteTo(dd, hn::LoadU(df, src + i)));
    a1 = step(a1, hn::PromoteTo(dd, hn::LoadU(df, src + i + lanes)));
    a2 = step(a2, hn::PromoteTo(dd, hn::LoadU(df, src + i + 2 * lanes)));
    a3 = step(a3, hn::PromoteTo(dd, hn::LoadU(df, src + i + 3 * lanes)));
  }
  for (; i + lanes <= n; i += lanes) a0 = step(a0, hn::PromoteTo(dd, hn::LoadU(df, src + i)));
  double s = hn::GetLane(hn::SumOfLanes(dd, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < n; ++i) {
    const double v = src[i];
    s += kSquare ? v * v : v;
  }
  return s;
}

template <bool kMax>
float RowExtremum(const float* src, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  float r = src[0];
  size_t i = 0;
  if (n >= lanes) {
    auto acc = hn::LoadU(d, src);
    i = lanes;
    if (n >= 4 * lanes) {
      // Four independent chains: one compare-and-select per vector ran latency-bound (ReduceMax
      // of 150K floats: 29 us against ONNX Runtime's 15).
      auto a1 = hn::LoadU(d, src + lanes), a2 = hn::LoadU(d, src + 2 * lanes);
      auto a3 = hn::LoadU(d, src + 3 * lanes);
      for (i = 4 * lanes; i + 4 * lanes <= n; i += 4 * lanes) {
        acc = Extremum<kMax>(acc, hn::LoadU(d, src + i));
        a1 = Extremum<kMax>(a1, hn::LoadU(d, src + i + lanes));
        a2 = Extremum<kMax>(a2, hn::LoadU(d, src + i + 2 * lanes));
        a3 = Extremum<kMax>(a3, hn::LoadU(d, src + i + 3 * lanes));
      }
      acc = Extremum<kMax>(Extremum<kMax>(Extremum<kMax>(acc, a1), a2), a3);
    }
    for (; i + lanes <= n; i += lanes) acc = Extremum<kMax>(acc, hn::LoadU(d, src + i));
    HWY_ALIGN float buf[kMaxLanesF32];
    hn::Store(acc, d, buf);
    r = buf[0];
    for (size_t j = 1; j < lanes; ++j) r = ExtremumScalar<kMax>(r, buf[j]);
  } else {
    i = 1;
  }
  for (; i < n; ++i) r = ExtremumScalar<kMax>(r, src[i]);
  return r;
}

void ReduceRowsF32Impl(ReduceKind kind, const float* src, float* dst, int64_t rows, int64_t count) {
  const size_t n = static_cast<size_t>(count);
  for (int64_t r = 0; r < rows; ++r) {
    const float* s = src + r * count;
    switch (kind) {
      case ReduceKind::kMax:
        dst[r] = RowExtremum<true>(s, n);
        break;
      case ReduceKind::kMin:
        dst[r] = RowExtremum<false>(s, n);
        break;
      default:
        dst[r] =
            ReduceFinish(kind, Squares(kind) ? RowSum<true>(s, n) : RowSum<false>(s, n), count);
        break;
    }
  }
}

double ReduceRowPartF64Impl(ReduceKind kind, const float* src, int64_t count) {
  const size_t n = static_cast<size_t>(count);
  switch (kind) {
    case ReduceKind::kMax:
      return RowExtremum<true>(src, n);
    case ReduceKind::kMin:
      return RowExtremum<false>(src, n);
    default:
      return Squares(kind) ? RowSum<true>(src, n) : RowSum<false>(src, n);
  }
}

// acc[i] (+)= sum over the kRows rows r of rows[r][i] (or its square), in double, for i < len;
// `first` initialises acc. Several rows per pass keep several input streams going and cut the
// accumulator traffic.
template <bool kSquare, size_t kRows>
void AccumulateColumns(const float* const* rows, double* acc, size_t len, bool first) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const size_t lanes = hn::Lanes(dd);
  size_t i = 0;
  for (; i + lanes <= len; i += lanes) {
    auto sum = first ? hn::Zero(dd) : hn::LoadU(dd, acc + i);
    for (size_t r = 0; r < kRows; ++r) {
      const auto v = hn::PromoteTo(dd, hn::LoadU(df, rows[r] + i));
      sum = kSquare ? hn::MulAdd(v, v, sum) : hn::Add(sum, v);
    }
    hn::StoreU(sum, dd, acc + i);
  }
  for (; i < len; ++i) {
    double sum = first ? 0.0 : acc[i];
    for (size_t r = 0; r < kRows; ++r) {
      const double v = rows[r][i];
      sum += kSquare ? v * v : v;
    }
    acc[i] = sum;
  }
}

template <bool kMax, size_t kRows>
void ExtremumColumns(const float* const* rows, float* acc, size_t len) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= len; i += lanes) {
    auto m = hn::LoadU(d, acc + i);
    for (size_t r = 0; r < kRows; ++r) m = Extremum<kMax>(m, hn::LoadU(d, rows[r] + i));
    hn::StoreU(m, d, acc + i);
  }
  for (; i < len; ++i)
    for (size_t r = 0; r < kRows; ++r) acc[i] = ExtremumScalar<kMax>(acc[i], rows[r][i]);
}

// Rows folded into the accumulators per pass.
constexpr size_t kRowsPerPass = 4;

template <bool kSquare>
void SumColumns(const float* src, size_t n, size_t pitch, double* acc, size_t len) {
  size_t k = 0;
  for (; k + kRowsPerPass <= n; k += kRowsPerPass) {
    const float* rows[kRowsPerPass] = {src + k * pitch, src + (k + 1) * pitch,
                                       src + (k + 2) * pitch, src + (k + 3) * pitch};
    AccumulateColumns<kSquare, kRowsPerPass>(rows, acc, len, k == 0);
  }
  for (; k < n; ++k) {
    const float* row = src + k * pitch;
    AccumulateColumns<kSquare, 1>(&row, acc, len, k == 0);
  }
}

template <bool kMax>
void ExtremumOfColumns(const float* src, size_t n, size_t pitch, float* acc, size_t len) {
  std::copy(src, src + len, acc);
  size_t k = 1;
  for (; k + kRowsPerPass <= n; k += kRowsPerPass) {
    const float* rows[kRowsPerPass] = {src + k * pitch, src + (k + 1) * pitch,
                                       src + (k + 2) * pitch, src + (k + 3) * pitch};
    ExtremumColumns<kMax, kRowsPerPass>(rows, acc, len);
  }
  for (; k < n; ++k) {
    const float* row = src + k * pitch;
    ExtremumColumns<kMax, 1>(&row, acc, len);
  }
}

void ReduceColumnsF32Impl(ReduceKind kind, const float* src, float* dst, int64_t count,
                          int64_t cols, int64_t stride, double* scratch) {
  const size_t n = static_cast<size_t>(count);
  const size_t inner = static_cast<size_t>(cols);
  const size_t pitch = static_cast<size_t>(stride);
  for (size_t i0 = 0; i0 < inner; i0 += kColumnBlock) {
    const size_t len = std::min(kColumnBlock, inner - i0);
    switch (kind) {
      case ReduceKind::kMax:
        // dst is the accumulator: it never overlaps src (reductions do not run in place).
        ExtremumOfColumns<true>(src + i0, n, pitch, dst + i0, len);
        break;
      case ReduceKind::kMin:
        ExtremumOfColumns<false>(src + i0, n, pitch, dst + i0, len);
        break;
      default:
        if (Squares(kind)) {
          SumColumns<true>(src + i0, n, pitch, scratch, len);
        } else {
          SumColumns<false>(src + i0, n, pitch, scratch, len);
        }
        for (size_t i = 0; i < len; ++i)
          dst[i0 + i] = ReduceFinish(kind, scratch[i], static_cast<int64_t>(n));
        break;
    }
  }
}

}  // namespace
}  // namespace onyx::kernels::common::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace onyx::kernels::common {

HWY_EXPORT(ReduceRowsF32Impl);
HWY_EXPORT(ReduceRowPartF64Impl);
HWY_EXPORT(ReduceColumnsF32Impl);

void ReduceRowsF32(ReduceKind kind, const float* src, float* dst, int64_t rows, int64_t n) {
  if (rows > 0 && n > 0) HWY_DYNAMIC_DISPATCH(ReduceRowsF32Impl)(kind, src, dst, rows, n);
}

float ReduceFinish(ReduceKind kind, double acc, int64_t n) {
  switch (kind) {
    case ReduceKind::kMean:
      return static_cast<float>(acc / static_cast<double>(n));
    case ReduceKind::kL2:
      return static_cast<float>(std::sqrt(acc));
    default:
      return static_cast<float>(acc);
  }
}

double ReduceRowPartF64(ReduceKind kind, const float* src, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(ReduceRowPartF64Impl)(kind, src, n);
}

void ReduceColumnsF32(ReduceKind kind, const float* src, float* dst, int64_t n, int64_t cols,
                      int64_t stride, double* scratch) {
  if (n > 0 && cols > 0)
    HWY_DYNAMIC_DISPATCH(ReduceColumnsF32Impl)(kind, src, dst, n, cols, stride, scratch);
}

}  // namespace onyx::kernels::common
#endif  // HWY_ONCE
