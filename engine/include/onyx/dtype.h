// Element types: the ONNX TensorProto.DataType numbers, their in-memory size in onyx, and the
// conversions for the types C++ has no arithmetic for (float16, bfloat16, float8, float4, int4,
// int2).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace onyx {

// Values equal ONNX TensorProto.DataType, so a proto's data_type casts straight to DType.
enum class DType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUInt4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUInt2 = 25,
  kInt2 = 26,
};
constexpr int32_t kMaxDType = 26;

// Bytes one element takes in an onyx tensor. Sub-byte types (int4, uint4, float4, int2, uint2) are
// unpacked to one byte per element in memory; they are packed only in TensorProto files.
size_t DTypeSize(DType t);
// ONNX spelling: "float", "int64", "float16", "bfloat16", "float8e4m3fn", ...
const char* DTypeName(DType t);
// Parses DTypeName() back; kUndefined when unknown.
DType DTypeFromName(const std::string& name);
bool IsKnownDType(int32_t v);
bool IsFloatingPoint(DType t);  // float, double, float16, bfloat16, float8*, float4
bool IsSignedInteger(DType t);
bool IsUnsignedInteger(DType t);
inline bool IsInteger(DType t) {
  return IsSignedInteger(t) || IsUnsignedInteger(t);
}
// True for types stored as raw bits that need FloatFrom*/FloatTo* to do arithmetic.
bool IsPackedFloat(DType t);

// IEEE half <-> float, round to nearest even.
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
// bfloat16 <-> float, round to nearest even (NaN stays NaN).
float BFloat16ToFloat(uint16_t b);
uint16_t FloatToBFloat16(float f);
// float8/float4 formats. `saturate` follows ONNX Cast: out-of-range finite values clamp to the
// largest finite value instead of becoming inf/NaN.
float Float8ToFloat(DType t, uint8_t v);
uint8_t FloatToFloat8(DType t, float f, bool saturate);
float Float4E2M1ToFloat(uint8_t v);
uint8_t FloatToFloat4E2M1(float f);

// Reads element i of a buffer of type t as double (strings excluded); writes the reverse.
// Slow but exact enough for every type; reference kernels use it for the rare types.
double LoadAsDouble(DType t, const void* data, int64_t i);
void StoreFromDouble(DType t, void* data, int64_t i, double v);

}  // namespace onyx
