// Element type names, sizes and the bit-level conversions for float16, bfloat16, float8 and float4.
#include "onyx/dtype.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

namespace onyx {
namespace {

struct DTypeInfo {
  DType type;
  const char* name;
  size_t size;
};

constexpr DTypeInfo kInfos[] = {
    {DType::kUndefined, "undefined", 0},
    {DType::kFloat, "float", 4},
    {DType::kUInt8, "uint8", 1},
    {DType::kInt8, "int8", 1},
    {DType::kUInt16, "uint16", 2},
    {DType::kInt16, "int16", 2},
    {DType::kInt32, "int32", 4},
    {DType::kInt64, "int64", 8},
    {DType::kString, "string", sizeof(std::string)},
    {DType::kBool, "bool", 1},
    {DType::kFloat16, "float16", 2},
    {DType::kDouble, "double", 8},
    {DType::kUInt32, "uint32", 4},
    {DType::kUInt64, "uint64", 8},
    {DType::kComplex64, "complex64", 8},
    {DType::kComplex128, "complex128", 16},
    {DType::kBFloat16, "bfloat16", 2},
    {DType::kFloat8E4M3FN, "float8e4m3fn", 1},
    {DType::kFloat8E4M3FNUZ, "float8e4m3fnuz", 1},
    {DType::kFloat8E5M2, "float8e5m2", 1},
    {DType::kFloat8E5M2FNUZ, "float8e5m2fnuz", 1},
    {DType::kUInt4, "uint4", 1},
    {DType::kInt4, "int4", 1},
    {DType::kFloat4E2M1, "float4e2m1", 1},
    {DType::kFloat8E8M0, "float8e8m0", 1},
    {DType::kUInt2, "uint2", 1},
    {DType::kInt2, "int2", 1},
};

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A small float format described by its fields; decoded through a table of all codes.
struct MiniFloat {
  int exp_bits;
  int man_bits;
  int bias;
  bool has_inf;          // IEEE-style inf/NaN at the top exponent (E5M2)
  bool nan_is_0x80;      // FNUZ formats: 0x80 is the only NaN, no negative zero
  bool nan_is_all_ones;  // E4M3FN: S.1111.111 is NaN, no inf
};

MiniFloat FormatOf(DType t) {
  switch (t) {
    case DType::kFloat8E4M3FN:
      return {4, 3, 7, false, false, true};
    case DType::kFloat8E4M3FNUZ:
      return {4, 3, 8, false, true, false};
    case DType::kFloat8E5M2:
      return {5, 2, 15, true, false, false};
    case DType::kFloat8E5M2FNUZ:
      return {5, 2, 16, false, true, false};
    default:
      return {2, 1, 1, false, false, false};  // float4e2m1: no inf, no NaN
  }
}

float DecodeMini(const MiniFloat& f, uint8_t v) {
  const int total = 1 + f.exp_bits + f.man_bits;
  const uint32_t sign = (v >> (total - 1)) & 1;
  const uint32_t e = (v >> f.man_bits) & ((1u << f.exp_bits) - 1);
  const uint32_t m = v & ((1u << f.man_bits) - 1);
  if (f.nan_is_0x80 && v == 0x80) return std::numeric_limits<float>::quiet_NaN();
  if (f.nan_is_all_ones && e == (1u << f.exp_bits) - 1 && m == (1u << f.man_bits) - 1)
    return std::numeric_limits<float>::quiet_NaN();
  if (f.has_inf && e == (1u << f.exp_bits) - 1) {
    if (m == 0) return sign ? -INFINITY : INFINITY;
    return std::numeric_limits<float>::quiet_NaN();
  }
  float mag;
  if (e == 0) {
    mag = std::ldexp(static_cast<float>(m), 1 - f.bias - f.man_bits);
  } else {
    mag = std::ldexp(static_cast<float>(m + (1u << f.man_bits)),
                     static_cast<int>(e) - f.bias - f.man_bits);
  }
  return sign ? -mag : mag;
}

// Positive finite codes of a format sorted by value, for nearest-value encoding.
struct MiniTable {
  std::vector<std::pair<float, uint8_t>> positives;
  float max_finite = 0;
  uint8_t nan_code = 0;
  int total_bits = 0;
};

const MiniTable& TableFor(DType t) {
  static const auto build = [](DType type) {
    MiniTable tab;
    MiniFloat f = FormatOf(type);
    tab.total_bits = 1 + f.exp_bits + f.man_bits;
    const int half = 1 << (tab.total_bits - 1);
    for (int c = 0; c < half; ++c) {
      float v = DecodeMini(f, static_cast<uint8_t>(c));
      if (std::isfinite(v)) tab.positives.push_back({v, static_cast<uint8_t>(c)});
    }
    std::sort(tab.positives.begin(), tab.positives.end());
    tab.max_finite = tab.positives.back().first;
    tab.nan_code = f.nan_is_0x80 ? 0x80 : (f.has_inf ? 0x7F : (f.nan_is_all_ones ? 0x7F : 0));
    return tab;
  };
  static const MiniTable e4m3fn = build(DType::kFloat8E4M3FN);
  static const MiniTable e4m3fnuz = build(DType::kFloat8E4M3FNUZ);
  static const MiniTable e5m2 = build(DType::kFloat8E5M2);
  static const MiniTable e5m2fnuz = build(DType::kFloat8E5M2FNUZ);
  static const MiniTable e2m1 = build(DType::kFloat4E2M1);
  switch (t) {
    case DType::kFloat8E4M3FN:
      return e4m3fn;
    case DType::kFloat8E4M3FNUZ:
      return e4m3fnuz;
    case DType::kFloat8E5M2:
      return e5m2;
    case DType::kFloat8E5M2FNUZ:
      return e5m2fnuz;
    default:
      return e2m1;
  }
}

// Round-to-nearest-even onto the table; `overflow_code` when |x| rounds past the largest value.
uint8_t EncodeMini(DType t, float x, bool saturate) {
  const MiniTable& tab = TableFor(t);
  MiniFloat f = FormatOf(t);
  const uint8_t sign_bit = static_cast<uint8_t>(1u << (tab.total_bits - 1));
  // NaN keeps its sign where the format has signed NaNs (Cast spec: -NaN -> -NaN for E4M3FN and
  // E5M2); FNUZ formats have the single NaN 0x80. E5M2 gets the quiet NaN S.11111.10, as ml_dtypes
  // (the ONNX reference) does; float4 has no NaN and gives 0x8, ml_dtypes' code for +NaN.
  if (std::isnan(x)) {
    if (t == DType::kFloat4E2M1) return 0x8;
    if (f.nan_is_0x80) return 0x80;
    const uint8_t nan = f.has_inf ? 0x7E : 0x7F;
    return std::signbit(x) ? static_cast<uint8_t>(nan | sign_bit) : nan;
  }
  const bool neg = std::signbit(x);
  const float a = std::fabs(x);
  auto with_sign = [&](uint8_t code) -> uint8_t {
    if (!neg) return code;
    if (f.nan_is_0x80 && code == 0) return 0;  // no negative zero in FNUZ formats
    return static_cast<uint8_t>(code | sign_bit);
  };
  // What an out-of-range magnitude becomes: the largest finite value when saturating (float4
  // always saturates), inf where the format has one, else NaN.
  uint8_t overflow;
  bool overflow_is_nan = false;
  if (saturate || t == DType::kFloat4E2M1) {
    overflow = tab.positives.back().second;
  } else if (f.has_inf) {
    overflow = static_cast<uint8_t>(((1u << f.exp_bits) - 1) << f.man_bits);  // inf
  } else {
    overflow = tab.nan_code;
    overflow_is_nan = true;
  }
  auto overflowed = [&]() -> uint8_t {
    if (overflow_is_nan) return f.nan_is_0x80 ? tab.nan_code : with_sign(tab.nan_code);
    return with_sign(overflow);
  };
  if (std::isinf(a)) return overflowed();
  const auto& p = tab.positives;
  if (a > tab.max_finite) {
    // Values within half an ulp above the max round down to it (IEEE round-to-nearest).
    const float prev = p[p.size() - 2].first;
    const float half_ulp = (tab.max_finite - prev) / 2;
    if (a < tab.max_finite + half_ulp || saturate) return with_sign(p.back().second);
    if (a == tab.max_finite + half_ulp && (p.back().second & 1) == 0)
      return with_sign(p.back().second);
    return overflowed();
  }
  auto it = std::lower_bound(p.begin(), p.end(), std::make_pair(a, uint8_t{0}));
  if (it == p.end()) return with_sign(p.back().second);
  if (it->first == a || it == p.begin()) return with_sign(it->second);
  auto lo = it - 1;
  const float dl = a - lo->first, dh = it->first - a;
  if (dl < dh) return with_sign(lo->second);
  if (dh < dl) return with_sign(it->second);
  return with_sign((lo->second & 1) == 0 ? lo->second : it->second);
}

}  // namespace

size_t DTypeSize(DType t) {
  const int v = static_cast<int>(t);
  if (v < 0 || v > kMaxDType) return 0;
  return kInfos[v].size;
}

const char* DTypeName(DType t) {
  const int v = static_cast<int>(t);
  if (v < 0 || v > kMaxDType) return "unknown";
  return kInfos[v].name;
}

DType DTypeFromName(const std::string& name) {
  for (const auto& i : kInfos)
    if (name == i.name) return i.type;
  if (name == "float32") return DType::kFloat;
  if (name == "float64") return DType::kDouble;
  return DType::kUndefined;
}

bool IsKnownDType(int32_t v) {
  return v >= 1 && v <= kMaxDType;
}

bool IsFloatingPoint(DType t) {
  switch (t) {
    case DType::kFloat:
    case DType::kDouble:
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
    case DType::kFloat4E2M1:
    case DType::kFloat8E8M0:
      return true;
    default:
      return false;
  }
}

bool IsSignedInteger(DType t) {
  switch (t) {
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kInt4:
    case DType::kInt2:
      return true;
    default:
      return false;
  }
}

bool IsUnsignedInteger(DType t) {
  switch (t) {
    case DType::kUInt8:
    case DType::kUInt16:
    case DType::kUInt32:
    case DType::kUInt64:
    case DType::kUInt4:
    case DType::kUInt2:
      return true;
    default:
      return false;
  }
}

bool IsPackedFloat(DType t) {
  return IsFloatingPoint(t) && t != DType::kFloat && t != DType::kDouble;
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t man = h & 0x3FF;
  if (exp == 0x1F) return BitsFloat(sign | 0x7F800000u | (man << 13));  // inf / NaN
  if (exp == 0) {
    if (man == 0) return BitsFloat(sign);
    // Subnormal: value = man * 2^-24.
    float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  }
  return BitsFloat(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t FloatToHalf(float f) {
  const uint32_t u = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7C00 | (abs > 0x7F800000u ? 0x200 : 0));
  }
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00);  // rounds to inf
  if (abs < 0x38800000u) {
    // Subnormal half (or zero): scale so the integer part is the half mantissa, round half even.
    const float a = BitsFloat(abs);
    const float scaled = a * 16777216.0f;  // 2^24
    float r = std::nearbyint(scaled);      // default rounding mode: nearest even
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(r));
  }
  // Normal: rebias exponent, round mantissa from 23 to 10 bits, nearest even.
  uint32_t mant = abs & 0x7FFFFF;
  uint32_t exp = (abs >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // carry may bump the exponent
  return static_cast<uint16_t>(sign | h);
}

float BFloat16ToFloat(uint16_t b) {
  return BitsFloat(static_cast<uint32_t>(b) << 16);
}

uint16_t FloatToBFloat16(float f) {
  uint32_t u = FloatBits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
  const uint32_t rounding = 0x7FFF + ((u >> 16) & 1);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

float Float8ToFloat(DType t, uint8_t v) {
  if (t == DType::kFloat8E8M0) {
    if (v == 0xFF) return std::numeric_limits<float>::quiet_NaN();
    return std::ldexp(1.0f, static_cast<int>(v) - 127);
  }
  return DecodeMini(FormatOf(t), v);
}

uint8_t FloatToFloat8(DType t, float f, bool saturate) {
  if (t == DType::kFloat8E8M0) {
    // Exponent-only: round to the nearest power of two (ties up), NaN/neg → 0xFF / saturate.
    if (std::isnan(f)) return 0xFF;
    if (f <= 0 || std::isinf(f)) return f > 0 ? (saturate ? 0xFE : 0xFF) : 0xFF;
    int e;
    float m = std::frexp(f, &e);  // f = m * 2^e, m in [0.5, 1)
    int biased = e - 1 + 127;
    if (m > 0.75f) ++biased;  // closer to the next power of two
    if (biased < 0) return 0;
    if (biased > 254) return saturate ? 0xFE : 0xFF;
    return static_cast<uint8_t>(biased);
  }
  return EncodeMini(t, f, saturate);
}

float Float4E2M1ToFloat(uint8_t v) {
  return DecodeMini(FormatOf(DType::kFloat4E2M1), v & 0xF);
}
uint8_t FloatToFloat4E2M1(float f) {
  return EncodeMini(DType::kFloat4E2M1, f, true);
}

double LoadAsDouble(DType t, const void* data, int64_t i) {
  switch (t) {
    case DType::kFloat:
      return static_cast<const float*>(data)[i];
    case DType::kDouble:
      return static_cast<const double*>(data)[i];
    case DType::kFloat16:
      return HalfToFloat(static_cast<const uint16_t*>(data)[i]);
    case DType::kBFloat16:
      return BFloat16ToFloat(static_cast<const uint16_t*>(data)[i]);
    case DType::kInt8:
    case DType::kInt4:
    case DType::kInt2:
      return static_cast<const int8_t*>(data)[i];
    case DType::kInt16:
      return static_cast<const int16_t*>(data)[i];
    case DType::kInt32:
      return static_cast<const int32_t*>(data)[i];
    case DType::kInt64:
      return static_cast<double>(static_cast<const int64_t*>(data)[i]);
    case DType::kUInt8:
    case DType::kUInt4:
    case DType::kUInt2:
    case DType::kBool:
      return static_cast<const uint8_t*>(data)[i];
    case DType::kUInt16:
      return static_cast<const uint16_t*>(data)[i];
    case DType::kUInt32:
      return static_cast<const uint32_t*>(data)[i];
    case DType::kUInt64:
      return static_cast<double>(static_cast<const uint64_t*>(data)[i]);
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
    case DType::kFloat8E8M0:
      return Float8ToFloat(t, static_cast<const uint8_t*>(data)[i]);
    case DType::kFloat4E2M1:
      return Float4E2M1ToFloat(static_cast<const uint8_t*>(data)[i]);
    default:
      return 0;
  }
}

namespace {
template <typename T>
T ClampCast(double v) {
  if (std::isnan(v)) return T(0);
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::lowest());
  constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
  if (v <= lo) return std::numeric_limits<T>::lowest();
  if (v >= hi) return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

// The sub-byte integer types round to nearest and clamp to [lo, hi]; NaN stores 0, as ClampCast.
double RoundClamp(double v, double lo, double hi) {
  return std::isnan(v) ? 0.0 : std::clamp(std::nearbyint(v), lo, hi);
}
}  // namespace

void StoreFromDouble(DType t, void* data, int64_t i, double v) {
  switch (t) {
    case DType::kFloat:
      static_cast<float*>(data)[i] = static_cast<float>(v);
      break;
    case DType::kDouble:
      static_cast<double*>(data)[i] = v;
      break;
    case DType::kFloat16:
      static_cast<uint16_t*>(data)[i] = FloatToHalf(static_cast<float>(v));
      break;
    case DType::kBFloat16:
      static_cast<uint16_t*>(data)[i] = FloatToBFloat16(static_cast<float>(v));
      break;
    case DType::kInt8:
      static_cast<int8_t*>(data)[i] = ClampCast<int8_t>(v);
      break;
    case DType::kInt16:
      static_cast<int16_t*>(data)[i] = ClampCast<int16_t>(v);
      break;
    case DType::kInt32:
      static_cast<int32_t*>(data)[i] = ClampCast<int32_t>(v);
      break;
    case DType::kInt64:
      static_cast<int64_t*>(data)[i] = ClampCast<int64_t>(v);
      break;
    case DType::kUInt8:
      static_cast<uint8_t*>(data)[i] = ClampCast<uint8_t>(v);
      break;
    case DType::kUInt16:
      static_cast<uint16_t*>(data)[i] = ClampCast<uint16_t>(v);
      break;
    case DType::kUInt32:
      static_cast<uint32_t*>(data)[i] = ClampCast<uint32_t>(v);
      break;
    case DType::kUInt64:
      static_cast<uint64_t*>(data)[i] = ClampCast<uint64_t>(v);
      break;
    case DType::kBool:
      static_cast<uint8_t*>(data)[i] = v != 0;
      break;
    case DType::kInt4:
      static_cast<int8_t*>(data)[i] = static_cast<int8_t>(RoundClamp(v, -8.0, 7.0));
      break;
    case DType::kUInt4:
      static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(RoundClamp(v, 0.0, 15.0));
      break;
    case DType::kInt2:
      static_cast<int8_t*>(data)[i] = static_cast<int8_t>(RoundClamp(v, -2.0, 1.0));
      break;
    case DType::kUInt2:
      static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(RoundClamp(v, 0.0, 3.0));
      break;
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
    case DType::kFloat8E8M0:
      static_cast<uint8_t*>(data)[i] = FloatToFloat8(t, static_cast<float>(v), true);
      break;
    case DType::kFloat4E2M1:
      static_cast<uint8_t*>(data)[i] = FloatToFloat4E2M1(static_cast<float>(v));
      break;
    default:
      break;
  }
}

}  // namespace onyx
