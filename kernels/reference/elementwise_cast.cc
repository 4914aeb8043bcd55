// Reference Cast/CastLike: every pair of onyx element types. Native C++ types convert through a
// typed loop; float8/float4/int4/uint4/int2/uint2 and strings go through one scalar at a time.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "kernels/op_helpers.h"
#include "kernels/reference/elementwise.h"
#include "kernels/reference/elementwise_loops.h"

namespace onyx::kernels::reference {
namespace {

constexpr double kTwo63 = 9223372036854775808.0;   // 2^63
constexpr double kTwo64 = 18446744073709551616.0;  // 2^64

// Float -> integer: truncate toward zero, then keep the low bits like a two's complement
// narrowing (ONNX leaves out-of-range undefined; this matches numpy on x86 for moderate values:
// 300.0 -> int8 44). NaN and values beyond int64 give INT64_MIN's low bits (x86 cvttsd2si).
template <typename D>
D FloatToInt(double v) {
  if constexpr (std::is_same_v<D, uint64_t>) {
    if (v >= kTwo63 && v < kTwo64) return static_cast<uint64_t>(v);
  }
  int64_t i = std::numeric_limits<int64_t>::min();
  if (v > -kTwo63 - 1.0 && v < kTwo63) i = static_cast<int64_t>(v);
  return static_cast<D>(i);
}

// One element between two native types (numeric or bool), with ONNX Cast rules.
template <typename S, typename D>
D ConvertNative(S s) {
  using CS = ComputeT<S>;
  const CS v = static_cast<CS>(s);
  if constexpr (std::is_same_v<D, bool>) {
    return v != CS(0);  // NaN is nonzero: true
  } else if constexpr (std::is_same_v<S, bool>) {
    return static_cast<D>(v ? 1 : 0);
  } else if constexpr (std::is_floating_point_v<CS> && std::is_integral_v<D>) {
    return FloatToInt<D>(static_cast<double>(v));
  } else {
    return static_cast<D>(v);
  }
}

// A scalar in transit for the generic path: exact for every integer and float source.
struct Scalar {
  enum Kind { kSigned, kUnsigned, kFloating } kind = kFloating;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
};

Scalar LoadScalar(DType t, const void* data, int64_t k) {
  Scalar s;
  switch (t) {
    case DType::kInt64:
      s.kind = Scalar::kSigned;
      s.i = static_cast<const int64_t*>(data)[k];
      return s;
    case DType::kUInt64:
      s.kind = Scalar::kUnsigned;
      s.u = static_cast<const uint64_t*>(data)[k];
      return s;
    default:
      break;
  }
  const double v = LoadAsDouble(t, data, k);
  if (IsSignedInteger(t)) {
    s.kind = Scalar::kSigned;
    s.i = static_cast<int64_t>(v);
  } else if (IsUnsignedInteger(t) || t == DType::kBool) {
    s.kind = Scalar::kUnsigned;
    s.u = static_cast<uint64_t>(v);
  } else {
    s.f = v;
  }
  return s;
}

double ScalarAsDouble(const Scalar& s) {
  switch (s.kind) {
    case Scalar::kSigned:
      return static_cast<double>(s.i);
    case Scalar::kUnsigned:
      return static_cast<double>(s.u);
    default:
      return s.f;
  }
}

// Integer value with the wrap rules (floats truncate first).
uint64_t ScalarAsIntBits(const Scalar& s) {
  switch (s.kind) {
    case Scalar::kSigned:
      return static_cast<uint64_t>(s.i);
    case Scalar::kUnsigned:
      return s.u;
    default:
      return FloatToInt<uint64_t>(s.f);
  }
}

// float -> float8e8m0 on the float32 bits, as onnx.numpy_helper.to_float8e8m0: the exponent
// field, rounded by `round_mode`; NaN/inf -> 0xFF; saturate keeps 0xFE from rounding to NaN.
uint8_t FloatToE8M0(float x, bool saturate, const std::string& round_mode) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  uint32_t exp = (bits >> 23) & 0xFF;
  if (exp == 0xFF) return 0xFF;
  bool round_up = false;
  if (round_mode == "up") {
    round_up = (bits & 0x7FFFFF) != 0;
  } else if (round_mode == "nearest") {
    const bool g = bits & 0x400000, r = bits & 0x200000, s = (bits & 0x1FFFFF) != 0;
    round_up = g && (r || s || exp > 0);
  }
  if (round_up && !(saturate && exp == 0xFE)) ++exp;
  return static_cast<uint8_t>(exp);
}

// double -> float rounded to odd (truncate, then set the lowest mantissa bit when inexact). The
// float8/float4 encoders take a float; rounding to odd first keeps their round-to-nearest-even
// from double-rounding a double input (float has far more than the 2 extra bits this needs).
float ToFloatRoundToOdd(double x) {
  float f = static_cast<float>(x);
  if (!std::isfinite(f) || static_cast<double>(f) == x) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(x)) f = std::nextafter(f, 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits |= 1;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Stores a scalar into element k of a buffer of type t (every non-string type).
void StoreScalar(DType t, void* data, int64_t k, const Scalar& s, bool saturate,
                 const std::string& round_mode) {
  auto int_bits = [&]() { return ScalarAsIntBits(s); };
  switch (t) {
    case DType::kBool:
      static_cast<bool*>(data)[k] = s.kind == Scalar::kFloating
                                        ? s.f != 0
                                        : (s.kind == Scalar::kSigned ? s.i != 0 : s.u != 0);
      return;
    case DType::kInt8:
      static_cast<int8_t*>(data)[k] = static_cast<int8_t>(int_bits());
      return;
    case DType::kUInt8:
      static_cast<uint8_t*>(data)[k] = static_cast<uint8_t>(int_bits());
      return;
    case DType::kInt16:
      static_cast<int16_t*>(data)[k] = static_cast<int16_t>(int_bits());
      return;
    case DType::kUInt16:
      static_cast<uint16_t*>(data)[k] = static_cast<uint16_t>(int_bits());
      return;
    case DType::kInt32:
      static_cast<int32_t*>(data)[k] = static_cast<int32_t>(int_bits());
      return;
    case DType::kUInt32:
      static_cast<uint32_t*>(data)[k] = static_cast<uint32_t>(int_bits());
      return;
    case DType::kInt64:
      static_cast<int64_t*>(data)[k] = static_cast<int64_t>(int_bits());
      return;
    case DType::kUInt64:
      static_cast<uint64_t*>(data)[k] = int_bits();
      return;
    case DType::kInt4: {
      // Keep the low 4 bits and sign-extend (unpacked, one byte per element).
      const int v = static_cast<int>(int_bits() & 0xF);
      static_cast<int8_t*>(data)[k] = static_cast<int8_t>(v >= 8 ? v - 16 : v);
      return;
    }
    case DType::kUInt4:
      static_cast<uint8_t*>(data)[k] = int_bits() & 0xF;
      return;
    case DType::kInt2: {
      const int v = static_cast<int>(int_bits() & 0x3);
      static_cast<int8_t*>(data)[k] = static_cast<int8_t>(v >= 2 ? v - 4 : v);
      return;
    }
    case DType::kUInt2:
      static_cast<uint8_t*>(data)[k] = int_bits() & 0x3;
      return;
    case DType::kFloat:
      static_cast<float*>(data)[k] = static_cast<float>(ScalarAsDouble(s));
      return;
    case DType::kDouble:
      static_cast<double*>(data)[k] = ScalarAsDouble(s);
      return;
    case DType::kFloat16:
      static_cast<uint16_t*>(data)[k] = FloatToHalf(static_cast<float>(ScalarAsDouble(s)));
      return;
    case DType::kBFloat16:
      static_cast<uint16_t*>(data)[k] = FloatToBFloat16(static_cast<float>(ScalarAsDouble(s)));
      return;
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
      static_cast<uint8_t*>(data)[k] =
          FloatToFloat8(t, ToFloatRoundToOdd(ScalarAsDouble(s)), saturate);
      return;
    case DType::kFloat8E8M0:
      static_cast<uint8_t*>(data)[k] =
          FloatToE8M0(static_cast<float>(ScalarAsDouble(s)), saturate, round_mode);
      return;
    case DType::kFloat4E2M1:
      static_cast<uint8_t*>(data)[k] = FloatToFloat4E2M1(ToFloatRoundToOdd(ScalarAsDouble(s)));
      return;
    default:
      return;
  }
}

// ---- strings ----

// Significant digits that round-trip a value of `t` (shortest first), as numpy prints floats.
std::string ShortestDigits(double v, DType t, int* exp10) {
  char buf[64];
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof(buf), "%.*e", p - 1, v);
    const double back = std::strtod(buf, nullptr);
    bool same;
    switch (t) {
      case DType::kFloat:
        same = static_cast<float>(back) == static_cast<float>(v);
        break;
      case DType::kFloat16:
        same = FloatToHalf(static_cast<float>(back)) == FloatToHalf(static_cast<float>(v));
        break;
      case DType::kBFloat16:
        same = FloatToBFloat16(static_cast<float>(back)) == FloatToBFloat16(static_cast<float>(v));
        break;
      default:
        same = back == v;
        break;
    }
    if (same || p == 17) break;
  }
  // buf is "d.ddde[+-]xx": split into digits and exponent.
  std::string s(buf);
  const size_t e = s.find('e');
  *exp10 = std::atoi(s.c_str() + e + 1);
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (std::isdigit(static_cast<unsigned char>(s[i]))) digits += s[i];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  return digits;
}

// numpy str() of a float: positional for 1e-4 <= |v| < 1e16 ("100.0", "0.001"), else
// scientific ("1e-05", "1.5e+20"); "nan", "inf", "-inf".
std::string FormatFloat(double v, DType t) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  const std::string sign = std::signbit(v) ? "-" : "";
  const double a = std::fabs(v);
  if (a == 0) return sign + "0.0";
  int e;
  const std::string d = ShortestDigits(a, t, &e);
  if (a >= 1e-4 && a < 1e16) {
    std::string out;
    if (e >= 0) {
      std::string int_part = d.substr(0, std::min<size_t>(d.size(), e + 1));
      while (static_cast<int>(int_part.size()) < e + 1) int_part += '0';
      std::string frac = d.size() > static_cast<size_t>(e + 1) ? d.substr(e + 1) : "0";
      out = int_part + "." + frac;
    } else {
      out = "0." + std::string(static_cast<size_t>(-e - 1), '0') + d;
    }
    return sign + out;
  }
  std::string mant = d.substr(0, 1);
  if (d.size() > 1) mant += "." + d.substr(1);
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
  return sign + mant + exp_buf;
}

std::string ToText(DType t, const void* data, int64_t k) {
  switch (t) {
    case DType::kBool:
      return static_cast<const bool*>(data)[k] ? "True" : "False";
    case DType::kInt64:
      return std::to_string(static_cast<const int64_t*>(data)[k]);
    case DType::kUInt64:
      return std::to_string(static_cast<const uint64_t*>(data)[k]);
    default:
      break;
  }
  if (IsInteger(t)) return std::to_string(static_cast<int64_t>(LoadAsDouble(t, data, k)));
  const DType shortest_as =
      t == DType::kDouble || t == DType::kFloat16 || t == DType::kBFloat16 ? t : DType::kFloat;
  return FormatFloat(LoadAsDouble(t, data, k), shortest_as);
}

// Parses a number the way the Cast spec describes: plain or scientific notation, and
// case-insensitive "INF", "+INF", "-INF", "NaN". Integers parse exactly when they can.
Scalar ParseText(const std::string& text) {
  Scalar s;
  size_t b = 0, e = text.size();
  while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
  std::string t = text.substr(b, e - b);
  // Python's float() (the ONNX reference) accepts '_' between digits: "1_000".
  if (t.find('_') != std::string::npos) {
    std::string digits;
    for (size_t i = 0; i < t.size(); ++i) {
      const bool between = i > 0 && i + 1 < t.size() &&
                           std::isdigit(static_cast<unsigned char>(t[i - 1])) &&
                           std::isdigit(static_cast<unsigned char>(t[i + 1]));
      if (t[i] != '_' || !between) digits += t[i];
    }
    t = digits;
  }
  if (!t.empty()) {
    errno = 0;
    char* end = nullptr;
    if (t[0] == '-') {
      const long long v = std::strtoll(t.c_str(), &end, 10);
      // "-0" is parsed as a float so that casting it to a float type keeps the sign of zero.
      if (end && *end == '\0' && errno == 0 && v != 0) {
        s.kind = Scalar::kSigned;
        s.i = v;
        return s;
      }
    } else {
      const unsigned long long v = std::strtoull(t.c_str(), &end, 10);
      if (end && *end == '\0' && errno == 0) {
        s.kind = Scalar::kUnsigned;
        s.u = v;
        return s;
      }
    }
  }
  s.kind = Scalar::kFloating;
  s.f = t.empty() ? 0.0 : std::strtod(t.c_str(), nullptr);  // handles inf/nan in any case
  return s;
}

}  // namespace

Status CastElements(DType from, const void* src, DType to, void* dst, int64_t n, bool saturate,
                    const std::string& round_mode) {
  if (n <= 0) return Status::Ok();
  if (from == to) {
    CopyElements(from, src, 0, dst, 0, n);
    return Status::Ok();
  }
  if (to == DType::kString) {
    std::string* out = static_cast<std::string*>(dst);
    for (int64_t k = 0; k < n; ++k) out[k] = ToText(from, src, k);
    return Status::Ok();
  }
  if (from == DType::kString) {
    const std::string* in = static_cast<const std::string*>(src);
    if (to == DType::kBool) {
      // As numpy's astype(bool) on strings (the ONNX reference): non-empty is true.
      bool* out = static_cast<bool*>(dst);
      for (int64_t k = 0; k < n; ++k) out[k] = !in[k].empty();
      return Status::Ok();
    }
    for (int64_t k = 0; k < n; ++k) StoreScalar(to, dst, k, ParseText(in[k]), saturate, round_mode);
    return Status::Ok();
  }
  // Native pairs: a typed loop.
  bool done = false;
  VisitNumericOrBool(from, [&](auto stag) {
    using S = typename decltype(stag)::type;
    done = VisitNumericOrBool(to, [&](auto dtag) {
      using D = typename decltype(dtag)::type;
      const S* s = static_cast<const S*>(src);
      D* d = static_cast<D*>(dst);
      for (int64_t k = 0; k < n; ++k) d[k] = ConvertNative<S, D>(s[k]);
    });
  });
  if (done) return Status::Ok();
  // Everything else (float8, float4, 4- and 2-bit integers on either side): one scalar at a time.
  for (int64_t k = 0; k < n; ++k)
    StoreScalar(to, dst, k, LoadScalar(from, src, k), saturate, round_mode);
  return Status::Ok();
}

namespace {
StatusOr<DType> TargetType(const NodeView& node) {
  const ir::Attribute* a = node.node().attr("to");
  if (!a) return node.Invalid("attribute 'to' is missing");
  if (a->type == ir::AttrType::kString) {  // opset < 6: the type's name, upper case
    std::string lower;
    for (char c : a->s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const DType t = DTypeFromName(lower);
    if (t == DType::kUndefined)
      return node.NotSupported("attribute 'to' names unknown type ", a->s);
    return t;
  }
  if (!IsKnownDType(static_cast<int32_t>(a->i)))
    return node.NotSupported("attribute 'to' is ", a->i, ", not a known type");
  return static_cast<DType>(a->i);
}

Status CastTo(KernelContext& ctx, DType to) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  auto castable = [](DType t) {
    return IsKnownDType(static_cast<int32_t>(t)) && t != DType::kComplex64 &&
           t != DType::kComplex128;
  };
  if (!castable(x.dtype()))
    return node.NotSupported("input 0 has type ", DTypeName(x.dtype()), ", which ", node.op_type(),
                             " does not support");
  if (!castable(to))
    return node.NotSupported("target type ", DTypeName(to), " is not supported by ",
                             node.op_type());
  // saturate (opset 19+) defaults to 1, which is also the pre-19 behaviour for float8.
  const bool saturate = node.attr_int("saturate", 1) != 0;
  const std::string round_mode = node.attr_string("round_mode", "up");
  if (round_mode != "up" && round_mode != "down" && round_mode != "nearest")
    return node.Invalid("attribute round_mode is '", round_mode,
                        "'; expected 'up', 'down' or 'nearest'");
  Tensor y = ctx.Output(0, to, x.shape());
  return CastElements(x.dtype(), x.raw_data(), to, y.raw_data(), x.numel(), saturate, round_mode);
}
}  // namespace

Status CastRef(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.node().Invalid("input 0 'input' is missing");
  ONYX_ASSIGN_OR_RETURN(DType to, TargetType(ctx.node()));
  return CastTo(ctx, to);
}

Status CastLikeRef(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.has_input(1))
    return ctx.node().Invalid("expected inputs 'input' and 'target_type'");
  return CastTo(ctx, ctx.input(1).dtype());
}

}  // namespace onyx::kernels::reference
