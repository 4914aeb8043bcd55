// Reference Resize (and Upsample): per-axis coordinate transforms and interpolation taps.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/element_types.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/image_signal.h"

namespace onyx::kernels::reference {

void StoreSaturated(DType t, void* dst, int64_t i, double v) {
  double lo = 0, hi = 0;
  switch (t) {
    case DType::kInt8:
      lo = -128, hi = 127;
      break;
    case DType::kUInt8:
      lo = 0, hi = 255;
      break;
    case DType::kInt16:
      lo = -32768, hi = 32767;
      break;
    case DType::kUInt16:
      lo = 0, hi = 65535;
      break;
    case DType::kInt32:
      lo = -2147483648.0, hi = 2147483647.0;
      break;
    case DType::kUInt32:
      lo = 0, hi = 4294967295.0;
      break;
    case DType::kInt64:
      lo = -9223372036854775808.0, hi = 9223372036854775807.0;
      break;
    case DType::kUInt64:
      lo = 0, hi = 18446744073709551615.0;
      break;
    default:
      StoreFromDouble(t, dst, i, v);
      return;
  }
  double r = std::isnan(v) ? 0.0 : std::nearbyint(v);
  StoreFromDouble(t, dst, i, std::clamp(r, lo, hi));
}

namespace {

// The interpolation of one axis: for each output position, `taps` input indices (already clamped
// into range) and their weights, or a flag that the position lies outside the crop box.
struct AxisTaps {
  int64_t taps = 1;
  std::vector<int64_t> index;  // [out, taps]
  std::vector<double> weight;  // [out, taps]
  std::vector<char> outside;   // [out]: tf_crop_and_resize extrapolation
};

// Keys cubic convolution kernel with parameter a, at distance x.
double CubicKernel(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// Source coordinate of output index `y` along one axis (the ONNX coordinate_transformation_mode
// formulas). `output_width` is scale * in and may be fractional (onnx.reference uses it, not the
// integer size, in align_corners and tf_crop_and_resize).
double SourceCoordinate(const ResizeParams& p, double y, double scale, int64_t in, int64_t out_int,
                        double roi_start, double roi_end) {
  const double output_width = scale * static_cast<double>(in);
  switch (p.coordinate_mode) {
    case ResizeCoordinateMode::kHalfPixel:
      return (y + 0.5) / scale - 0.5;
    case ResizeCoordinateMode::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(out_int) / output_width;
      const double center = static_cast<double>(in) / 2;
      const double offset = center * (1 - adjustment);
      return offset + (y + 0.5) / scale - 0.5;
    }
    case ResizeCoordinateMode::kPytorchHalfPixel:
      // The spec and ONNX Runtime map a length-1 output to 0 (onnx.reference uses -0.5).
      return out_int > 1 ? (y + 0.5) / scale - 0.5 : 0.0;
    case ResizeCoordinateMode::kAlignCorners:
      return output_width == 1 ? 0.0 : y * static_cast<double>(in - 1) / (output_width - 1);
    case ResizeCoordinateMode::kAsymmetric:
      return y / scale;
    case ResizeCoordinateMode::kTfCropAndResize: {
      const double span = static_cast<double>(in - 1);
      const double x = output_width == 1 ? (roi_end - roi_start) * span / 2
                                         : y * (roi_end - roi_start) * span / (output_width - 1);
      return x + roi_start * span;
    }
    case ResizeCoordinateMode::kTfHalfPixelForNn:
      return (y + 0.5) / scale;
  }
  return y;
}

// Keeps a source coordinate finite and within int64 range (roi or scales may be extreme); the
// indices derived from it are clamped into the input afterwards.
double SafeCoordinate(double x, int64_t in) {
  const double limit = static_cast<double>(in) + 1e6;
  if (std::isnan(x)) return 0;
  return std::clamp(x, -limit, limit);
}

int64_t NearestIndex(const ResizeParams& p, double x, double scale) {
  const double fl = std::floor(x);
  if (x == fl) return static_cast<int64_t>(x);
  const double frac = x - fl;
  switch (p.nearest_mode) {
    case ResizeNearestMode::kRoundPreferFloor:
      return static_cast<int64_t>(frac <= 0.5 ? fl : fl + 1);
    case ResizeNearestMode::kRoundPreferCeil:
      return static_cast<int64_t>(frac < 0.5 ? fl : fl + 1);
    case ResizeNearestMode::kFloor:
      return static_cast<int64_t>(fl);
    case ResizeNearestMode::kCeil:
      return static_cast<int64_t>(fl + 1);
    case ResizeNearestMode::kSimple:
      return static_cast<int64_t>(scale < 1 ? std::ceil(x) : std::trunc(x));
  }
  return static_cast<int64_t>(fl);
}

AxisTaps ComputeTaps(const ResizeParams& p, int64_t in, int64_t out, double scale, double roi_start,
                     double roi_end) {
  AxisTaps t;
  t.outside.assign(static_cast<size_t>(out), 0);
  const bool crop = p.coordinate_mode == ResizeCoordinateMode::kTfCropAndResize;
  if (p.mode == ResizeMode::kNearest) {
    t.taps = 1;
    t.index.resize(static_cast<size_t>(out));
    t.weight.assign(static_cast<size_t>(out), 1.0);
    for (int64_t y = 0; y < out; ++y) {
      const double x =
          SourceCoordinate(p, static_cast<double>(y), scale, in, out, roi_start, roi_end);
      if (crop && !(x >= 0 && x <= static_cast<double>(in - 1))) t.outside[y] = 1;
      t.index[y] = std::clamp<int64_t>(NearestIndex(p, SafeCoordinate(x, in), scale), 0, in - 1);
    }
    return t;
  }
  // Linear and cubic: weights at offsets [start, start + taps) from `base`, where base is the
  // pixel left of x (an integer x counts as ratio 1 from the pixel before it, as in
  // onnx.reference). Antialiasing stretches the kernel by 1/scale when downscaling.
  // An empty output axis needs no taps; its scale may be 0 (sizes of 0), and -support / 0
  // below would not convert to an integer.
  if (out == 0) return t;
  const double s = p.antialias ? std::min(scale, 1.0) : 1.0;
  const double support = p.mode == ResizeMode::kLinear ? 1.0 : 2.0;
  const int64_t start = static_cast<int64_t>(std::floor(-support / s)) + 1;
  t.taps = 2 - 2 * start;
  t.index.resize(static_cast<size_t>(out * t.taps));
  t.weight.resize(static_cast<size_t>(out * t.taps));
  for (int64_t y = 0; y < out; ++y) {
    const double x_raw =
        SourceCoordinate(p, static_cast<double>(y), scale, in, out, roi_start, roi_end);
    if (crop && !(x_raw >= 0 && x_raw <= static_cast<double>(in - 1))) t.outside[y] = 1;
    const double x = SafeCoordinate(x_raw, in);
    const double fl = std::floor(x);
    const double ratio = x == fl ? 1.0 : x - fl;
    const int64_t base = static_cast<int64_t>(x == fl ? fl - 1 : fl);
    double* w = t.weight.data() + y * t.taps;
    int64_t* idx = t.index.data() + y * t.taps;
    double sum = 0;
    for (int64_t k = 0; k < t.taps; ++k) {
      const double d = static_cast<double>(start + k) - ratio;  // signed distance to x
      if (p.mode == ResizeMode::kLinear) {
        w[k] = std::max(0.0, 1.0 - std::fabs(d * s));
      } else {
        w[k] = CubicKernel(d * s, p.cubic_coeff_a);
      }
      idx[k] = base + start + k;
      sum += w[k];
    }
    // Antialiased kernels are normalised to sum 1 (the plain ones already do, up to rounding).
    if (p.antialias && sum != 0)
      for (int64_t k = 0; k < t.taps; ++k) w[k] /= sum;
    if (p.exclude_outside) {
      double kept = 0;
      for (int64_t k = 0; k < t.taps; ++k) {
        if (idx[k] < 0 || idx[k] >= in) w[k] = 0;
        kept += w[k];
      }
      if (kept != 0)
        for (int64_t k = 0; k < t.taps; ++k) w[k] /= kept;
    }
    // Outside indices read the edge (edge padding).
    for (int64_t k = 0; k < t.taps; ++k) idx[k] = std::clamp<int64_t>(idx[k], 0, in - 1);
  }
  return t;
}

bool IsIdentityAxis(const ResizeParams& p, int64_t axis, int64_t in) {
  const bool roi_default =
      p.coordinate_mode != ResizeCoordinateMode::kTfCropAndResize ||
      (std::fabs(p.roi_start[axis]) < 1e-9 && std::fabs(p.roi_end[axis] - 1.0) < 1e-9);
  return std::fabs(p.scales[axis] - 1.0) < 1e-9 && p.output_shape[axis] == in && roi_default;
}

// Copies one output row of a nearest gather: dst[j] = src[offsets[j]], as elements of type E.
template <typename E>
void GatherRow(const char* src, const int64_t* offsets, int64_t n, char* dst) {
  const E* s = reinterpret_cast<const E*>(src);
  E* d = reinterpret_cast<E*>(dst);
  for (int64_t j = 0; j < n; ++j) d[j] = s[offsets[j]];
}

// Nearest: a gather over the output, one innermost row at a time, for every dtype (strings
// included). Per-axis source offsets are precomputed, so a row is a plain indexed copy.
void ResizeNearest(const Tensor& x, const ResizeParams& p, const std::vector<AxisTaps>& taps,
                   Tensor& y) {
  const int64_t rank = x.rank();
  if (y.numel() == 0) return;
  const DType dt = x.dtype();
  const size_t elem = DTypeSize(dt);
  const std::vector<int64_t> in_strides = ContiguousStrides(x.shape());
  // offsets[d][i]: element offset in x of output index i along axis d.
  std::vector<std::vector<int64_t>> offsets(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    offsets[d].resize(static_cast<size_t>(p.output_shape[d]));
    for (int64_t i = 0; i < p.output_shape[d]; ++i)
      offsets[d][i] = taps[d].index[i] * in_strides[d];
  }
  const int64_t row_len = rank > 0 ? p.output_shape[rank - 1] : 1;
  const std::vector<int64_t> scalar_offset = {0};
  const int64_t* row_offsets = rank > 0 ? offsets[rank - 1].data() : scalar_offset.data();
  const char* row_outside = rank > 0 ? taps[rank - 1].outside.data() : nullptr;
  const int64_t rows = y.numel() / row_len;
  std::vector<int64_t> pos(static_cast<size_t>(std::max<int64_t>(rank - 1, 0)), 0);
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(y.raw_data());
  for (int64_t r = 0; r < rows; ++r) {
    int64_t base = 0;
    bool outside = false;
    for (int64_t d = 0; d + 1 < rank; ++d) {
      base += offsets[d][pos[d]];
      outside = outside || taps[d].outside[pos[d]];
    }
    const int64_t out0 = r * row_len;
    if (dt == DType::kString) {
      for (int64_t j = 0; j < row_len; ++j) {
        const bool out_j = outside || (row_outside && row_outside[j]);
        y.strings()[out0 + j] = out_j ? std::string() : x.strings()[base + row_offsets[j]];
      }
    } else {
      const char* s = src + base * elem;
      char* d = dst + out0 * elem;
      switch (elem) {
        case 1:
          GatherRow<uint8_t>(s, row_offsets, row_len, d);
          break;
        case 2:
          GatherRow<uint16_t>(s, row_offsets, row_len, d);
          break;
        case 4:
          GatherRow<uint32_t>(s, row_offsets, row_len, d);
          break;
        case 8:
          GatherRow<uint64_t>(s, row_offsets, row_len, d);
          break;
        default:
          for (int64_t j = 0; j < row_len; ++j)
            std::copy(s + row_offsets[j] * elem, s + (row_offsets[j] + 1) * elem, d + j * elem);
      }
      // tf_crop_and_resize: positions outside the crop box take the extrapolation value.
      for (int64_t j = 0; j < row_len; ++j)
        if (outside || (row_outside && row_outside[j]))
          StoreSaturated(dt, dst, out0 + j, p.extrapolation_value);
    }
    for (int64_t d = rank - 1; d-- > 0;) {
      if (++pos[d] < p.output_shape[d]) break;
      pos[d] = 0;
    }
  }
}

// Linear/cubic along one axis: [outer, in, inner] -> [outer, out, inner], in the compute type C.
// Output rows are independent, so large tensors split them over TBB threads.
template <typename C>
std::vector<C> InterpolateAxis(const std::vector<C>& src, int64_t outer, int64_t in, int64_t inner,
                               int64_t out, const AxisTaps& t, double extrapolation_value) {
  std::vector<C> dst(static_cast<size_t>(outer * out * inner));
  auto rows = [&](int64_t begin, int64_t end) {
    int64_t o = begin / out, yo = begin % out;  // advanced incrementally below
    for (int64_t row = begin; row < end; ++row) {
      const C* s = src.data() + o * in * inner;
      C* d = dst.data() + row * inner;
      const int64_t* idx = t.index.data() + yo * t.taps;
      const double* w = t.weight.data() + yo * t.taps;
      if (t.outside[yo]) {
        std::fill(d, d + inner, static_cast<C>(extrapolation_value));
      } else if (inner == 1) {
        C acc = 0;  // innermost axis: a short dot product per output element
        for (int64_t k = 0; k < t.taps; ++k) acc += static_cast<C>(w[k]) * s[idx[k]];
        *d = acc;
      } else {
        std::fill(d, d + inner, C(0));
        for (int64_t k = 0; k < t.taps; ++k) {
          const C wk = static_cast<C>(w[k]);
          if (wk == 0) continue;
          const C* src_row = s + idx[k] * inner;
          for (int64_t i = 0; i < inner; ++i) d[i] += wk * src_row[i];
        }
      }
      if (++yo == out) yo = 0, ++o;
    }
  };
  constexpr int64_t kMinWorkPerTask = 1 << 14;  // output elements
  const int64_t total_rows = outer * out;
  const int64_t grain = std::max<int64_t>(1, kMinWorkPerTask / std::max<int64_t>(1, inner));
  if (total_rows * inner < 2 * kMinWorkPerTask) {
    rows(0, total_rows);
  } else {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, total_rows, grain),
                      [&](const tbb::blocked_range<int64_t>& r) { rows(r.begin(), r.end()); });
  }
  return dst;
}

// Separable linear/cubic resize computed in C: float for float/float16/bfloat16 inputs, double
// for double and integer inputs (integers round half to even and saturate at the end).
template <typename C>
void ResizeInterpolate(const Tensor& x, const ResizeParams& p, const std::vector<AxisTaps>& taps,
                       Tensor& y) {
  const int64_t rank = x.rank();
  std::vector<C> buf(static_cast<size_t>(x.numel()));
  VisitNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = x.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) buf[i] = static_cast<C>(src[i]);
  });
  Shape cur = x.shape();
  for (int64_t d = 0; d < rank; ++d) {
    if (IsIdentityAxis(p, d, x.dim(d))) continue;
    int64_t outer = 1, inner = 1;
    for (int64_t k = 0; k < d; ++k) outer *= cur[k];
    for (int64_t k = d + 1; k < rank; ++k) inner *= cur[k];
    buf = InterpolateAxis<C>(buf, outer, cur[d], inner, p.output_shape[d], taps[d],
                             p.extrapolation_value);
    cur[d] = p.output_shape[d];
  }
  VisitNumeric(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = y.data<T>();
    if constexpr (std::is_integral_v<T>) {
      for (int64_t i = 0; i < y.numel(); ++i) StoreSaturated(y.dtype(), dst, i, buf[i]);
    } else {
      for (int64_t i = 0; i < y.numel(); ++i) dst[i] = T(static_cast<float>(buf[i]));
    }
  });
}

}  // namespace

void Resize(const Tensor& x, const ResizeParams& p, Tensor& y) {
  // Nothing to write, and an empty output may still have a huge axis (found by fuzz_run: [0, 2^44]
  // from a scale asked 2^44 taps tables of it).
  if (y.numel() == 0) return;
  const int64_t rank = x.rank();
  std::vector<AxisTaps> taps(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    taps[d] =
        ComputeTaps(p, x.dim(d), p.output_shape[d], p.scales[d], p.roi_start[d], p.roi_end[d]);
  }
  if (p.mode == ResizeMode::kNearest) {
    // Identity axes map each index to itself already (every mode maps y to y at scale 1).
    for (int64_t d = 0; d < rank; ++d) {
      if (!IsIdentityAxis(p, d, x.dim(d))) continue;
      for (int64_t i = 0; i < x.dim(d); ++i) taps[d].index[i] = i;
      std::fill(taps[d].outside.begin(), taps[d].outside.end(), 0);
    }
    ResizeNearest(x, p, taps, y);
    return;
  }
  const DType t = x.dtype();
  if (t == DType::kFloat || t == DType::kFloat16 || t == DType::kBFloat16) {
    ResizeInterpolate<float>(x, p, taps, y);
  } else {
    ResizeInterpolate<double>(x, p, taps, y);
  }
}

}  // namespace onyx::kernels::reference
