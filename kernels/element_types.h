// C++ element types for ONNX types C++ lacks: float16 and bfloat16 as bit-holding structs that
// convert to and from float, so templated reference kernels compute them through float.
#pragma once

#include <complex>
#include <cstdint>
#include <string>

#include "onyx/dtype.h"

namespace onyx {

struct float16_t {
  uint16_t bits = 0;
  float16_t() = default;
  float16_t(float f) : bits(FloatToHalf(f)) {}          // NOLINT: implicit like a builtin float
  operator float() const { return HalfToFloat(bits); }  // NOLINT
  static float16_t FromBits(uint16_t b) {
    float16_t h;
    h.bits = b;
    return h;
  }
};

struct bfloat16_t {
  uint16_t bits = 0;
  bfloat16_t() = default;
  bfloat16_t(float f) : bits(FloatToBFloat16(f)) {}         // NOLINT
  operator float() const { return BFloat16ToFloat(bits); }  // NOLINT
  static bfloat16_t FromBits(uint16_t b) {
    bfloat16_t h;
    h.bits = b;
    return h;
  }
};

// The C++ type of each DType (for the types kernels template over).
template <DType D>
struct CppType;
#define ONYX_CPP_TYPE(D, T)  \
  template <>                \
  struct CppType<DType::D> { \
    using type = T;          \
  }
ONYX_CPP_TYPE(kFloat, float);
ONYX_CPP_TYPE(kDouble, double);
ONYX_CPP_TYPE(kFloat16, float16_t);
ONYX_CPP_TYPE(kBFloat16, bfloat16_t);
ONYX_CPP_TYPE(kInt8, int8_t);
ONYX_CPP_TYPE(kInt16, int16_t);
ONYX_CPP_TYPE(kInt32, int32_t);
ONYX_CPP_TYPE(kInt64, int64_t);
ONYX_CPP_TYPE(kUInt8, uint8_t);
ONYX_CPP_TYPE(kUInt16, uint16_t);
ONYX_CPP_TYPE(kUInt32, uint32_t);
ONYX_CPP_TYPE(kUInt64, uint64_t);
ONYX_CPP_TYPE(kBool, bool);
ONYX_CPP_TYPE(kString, std::string);
#undef ONYX_CPP_TYPE

template <typename T>
struct TypeTag {
  using type = T;
};

// Visitors: call f(TypeTag<T>{}) for the C++ type of `t` if it is in the set; return false if not.
//   bool ok = VisitFloat(x.dtype(), [&](auto tag) { using T = typename decltype(tag)::type; ... });
template <typename F>
bool VisitFloat(DType t, F&& f) {
  switch (t) {
    case DType::kFloat:
      f(TypeTag<float>{});
      return true;
    case DType::kDouble:
      f(TypeTag<double>{});
      return true;
    case DType::kFloat16:
      f(TypeTag<float16_t>{});
      return true;
    case DType::kBFloat16:
      f(TypeTag<bfloat16_t>{});
      return true;
    default:
      return false;
  }
}

template <typename F>
bool VisitInteger(DType t, F&& f) {
  switch (t) {
    case DType::kInt8:
      f(TypeTag<int8_t>{});
      return true;
    case DType::kInt16:
      f(TypeTag<int16_t>{});
      return true;
    case DType::kInt32:
      f(TypeTag<int32_t>{});
      return true;
    case DType::kInt64:
      f(TypeTag<int64_t>{});
      return true;
    case DType::kUInt8:
      f(TypeTag<uint8_t>{});
      return true;
    case DType::kUInt16:
      f(TypeTag<uint16_t>{});
      return true;
    case DType::kUInt32:
      f(TypeTag<uint32_t>{});
      return true;
    case DType::kUInt64:
      f(TypeTag<uint64_t>{});
      return true;
    default:
      return false;
  }
}

template <typename F>
bool VisitNumeric(DType t, F&& f) {
  return VisitFloat(t, f) || VisitInteger(t, f);
}

// Numeric types plus bool.
template <typename F>
bool VisitNumericOrBool(DType t, F&& f) {
  if (t == DType::kBool) {
    f(TypeTag<bool>{});
    return true;
  }
  return VisitNumeric(t, f);
}

// Every type with a C++ element type, strings included. Types stored as raw bytes (float8, int4,
// ...) are not visited: data-movement kernels should copy bytes by DTypeSize instead.
template <typename F>
bool VisitAll(DType t, F&& f) {
  if (t == DType::kString) {
    f(TypeTag<std::string>{});
    return true;
  }
  return VisitNumericOrBool(t, f);
}

}  // namespace onyx
