// Reference kernels for QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear.
#include "kernels/reference/quantization.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/element_types.h"

namespace onyx::kernels::reference {
namespace {

// Rounds v to the nearest value of float type `t` (the precision a division happens in).
double RoundToPrecision(DType t, double v) {
  switch (t) {
    case DType::kDouble:
      return v;
    case DType::kFloat16:
      return HalfToFloat(FloatToHalf(static_cast<float>(v)));
    case DType::kBFloat16:
      return BFloat16ToFloat(FloatToBFloat16(static_cast<float>(v)));
    default:
      return static_cast<float>(v);
  }
}

// Integer range of the quantized integer types; false for float types.
bool IntegerRange(DType t, double* lo, double* hi) {
  switch (t) {
    case DType::kUInt8:
      *lo = 0, *hi = 255;
      return true;
    case DType::kInt8:
      *lo = -128, *hi = 127;
      return true;
    case DType::kUInt16:
      *lo = 0, *hi = 65535;
      return true;
    case DType::kInt16:
      *lo = -32768, *hi = 32767;
      return true;
    case DType::kUInt4:
      *lo = 0, *hi = 15;
      return true;
    case DType::kInt4:
      *lo = -8, *hi = 7;
      return true;
    case DType::kUInt2:
      *lo = 0, *hi = 3;
      return true;
    case DType::kInt2:
      *lo = -2, *hi = 1;
      return true;
    case DType::kInt32:
      *lo = -2147483648.0, *hi = 2147483647.0;
      return true;
    default:
      return false;
  }
}

void StoreInteger(DType t, void* dst, int64_t i, double v) {
  switch (t) {
    case DType::kUInt8:
    case DType::kUInt4:
    case DType::kUInt2:
      static_cast<uint8_t*>(dst)[i] = static_cast<uint8_t>(v);
      break;
    case DType::kInt8:
    case DType::kInt4:
    case DType::kInt2:
      static_cast<int8_t*>(dst)[i] = static_cast<int8_t>(v);
      break;
    case DType::kUInt16:
      static_cast<uint16_t*>(dst)[i] = static_cast<uint16_t>(v);
      break;
    case DType::kInt16:
      static_cast<int16_t*>(dst)[i] = static_cast<int16_t>(v);
      break;
    case DType::kInt32:
      static_cast<int32_t*>(dst)[i] = static_cast<int32_t>(v);
      break;
    default:
      break;
  }
}

}  // namespace

void QuantizeLinear(const Tensor& x, const Tensor& scale, const Tensor* zero_point,
                    const QuantLayout& layout, DType precision, bool saturate, Tensor& y) {
  const DType yt = y.dtype();
  double lo = 0, hi = 0;
  const bool is_integer = IntegerRange(yt, &lo, &hi);
  const bool is_float8 = yt == DType::kFloat8E4M3FN || yt == DType::kFloat8E4M3FNUZ ||
                         yt == DType::kFloat8E5M2 || yt == DType::kFloat8E5M2FNUZ;
  // Scales and zero points are few; decode them once.
  const int64_t num_scales = scale.numel();
  std::vector<double> s(num_scales), zp(num_scales, 0.0);
  for (int64_t k = 0; k < num_scales; ++k) {
    s[k] = RoundToPrecision(precision, LoadAsDouble(scale.dtype(), scale.raw_data(), k));
    if (zero_point) zp[k] = LoadAsDouble(zero_point->dtype(), zero_point->raw_data(), k);
  }
  const void* src = x.raw_data();
  void* dst = y.raw_data();
  int64_t idx = 0;
  for (int64_t o = 0; o < layout.outer; ++o) {
    for (int64_t a = 0; a < layout.axis_len; ++a) {
      for (int64_t i = 0; i < layout.inner; ++i, ++idx) {
        const int64_t k = layout.ScaleIndex(o, a, i);
        const double xv = RoundToPrecision(precision, LoadAsDouble(x.dtype(), src, idx));
        const double q = RoundToPrecision(precision, xv / s[k]);
        if (is_integer) {
          // Round half to even (the default rounding mode), add the zero point, saturate.
          double r = std::nearbyint(q) + zp[k];
          if (std::isnan(r)) r = 0;
          StoreInteger(yt, dst, idx, std::clamp(r, lo, hi));
        } else if (is_float8) {
          // The zero point of float types is 0 by convention; adding it only when non-zero keeps
          // the sign of -0.
          const double v = zp[k] != 0 ? q + zp[k] : q;
          static_cast<uint8_t*>(dst)[idx] = FloatToFloat8(yt, static_cast<float>(v), saturate);
        } else {  // float4e2m1 (saturates by definition: it has no inf or NaN)
          const double v = zp[k] != 0 ? q + zp[k] : q;
          static_cast<uint8_t*>(dst)[idx] = FloatToFloat4E2M1(static_cast<float>(v));
        }
      }
    }
  }
}

void DequantizeLinear(const Tensor& x, const Tensor& scale, const Tensor* zero_point,
                      const QuantLayout& layout, Tensor& y) {
  const int64_t num_scales = scale.numel();
  std::vector<double> s(num_scales), zp(num_scales, 0.0);
  for (int64_t k = 0; k < num_scales; ++k) {
    s[k] = LoadAsDouble(scale.dtype(), scale.raw_data(), k);
    if (zero_point) zp[k] = LoadAsDouble(zero_point->dtype(), zero_point->raw_data(), k);
  }
  const void* src = x.raw_data();
  void* dst = y.raw_data();
  const DType xt = x.dtype();
  const DType yt = y.dtype();
  int64_t idx = 0;
  for (int64_t o = 0; o < layout.outer; ++o) {
    for (int64_t a = 0; a < layout.axis_len; ++a) {
      for (int64_t i = 0; i < layout.inner; ++i, ++idx) {
        const int64_t k = layout.ScaleIndex(o, a, i);
        const double v = (LoadAsDouble(xt, src, idx) - zp[k]) * s[k];
        StoreFromDouble(yt, dst, idx, v);
      }
    }
  }
}

void DynamicQuantizeLinear(const float* x, int64_t n, uint8_t* y, float* scale,
                           uint8_t* zero_point) {
  constexpr float kQMin = 0.0f;
  constexpr float kQMax = 255.0f;
  // The range is widened to include 0 so that 0 is exactly representable.
  float max_x = 0.0f, min_x = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    max_x = std::max(max_x, x[i]);
    min_x = std::min(min_x, x[i]);
  }
  const float range = max_x == min_x ? 1.0f : max_x - min_x;
  const float s = range / (kQMax - kQMin);
  const float initial_zp = kQMin - min_x / s;
  const float zp = std::nearbyint(std::clamp(initial_zp, kQMin, kQMax));
  for (int64_t i = 0; i < n; ++i) {
    float q = std::nearbyint(x[i] / s) + zp;
    if (std::isnan(q)) q = 0;
    y[i] = static_cast<uint8_t>(std::clamp(q, kQMin, kQMax));
  }
  *scale = s;
  // A -inf in x makes the scale inf and the zero point NaN; NaN has no uint8 value (converting
  // it is undefined), so it becomes 0, as NaN elements do above.
  *zero_point = std::isnan(zp) ? 0 : static_cast<uint8_t>(zp);
}

}  // namespace onyx::kernels::reference
