// Float32 loops of the portable SIMD kernels, written with Highway and dispatched at run time to
// the best target the CPU supports (AVX-512, AVX2, SSE4, NEON, SVE, ... or scalar). Every function
// is single-threaded; the op-level kernels split the work across threads.
//
// Contract shared by all: buffers are contiguous float32, no alignment is required, nothing is
// read or written outside the ranges given. Where "in-place safe" is stated, dst may equal src
// (the loops read a vector before writing the same vector).
#pragma once

#include <cstdint>

namespace onyx::kernels::common {

// ---- unary (elementwise_hwy.cc) ----
enum class UnaryOp : int {
  kRelu,
  kLeakyRelu,  // alpha
  kClip,       // alpha = min, beta = max (max wins when min > max; NaN stays NaN)
  kSigmoid,
  kTanh,
  kErf,
  kGelu,         // 0.5 x (1 + erf(x / sqrt(2)))
  kGeluTanh,     // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
  kHardSigmoid,  // max(0, min(1, alpha x + beta))
  kHardSwish,
  kElu,  // alpha
  kSoftplus,
  kExp,
  kLog,
  kSqrt,
  kNeg,
  kAbs,
  kReciprocal,
  kMish,     // x tanh(softplus(x))
  kSquare,   // Pow(x, 2)
  kCube,     // Pow(x, 3)
  kPowHalf,  // Pow(x, 0.5): sqrt, except pow(-0, 0.5) = +0 and pow(-inf, 0.5) = +inf
};
struct UnaryParams {
  float alpha = 0;
  float beta = 0;
};
// dst[i] = op(src[i]) for i < n. In-place safe. NaN propagates (Relu(NaN) = NaN, Clip(NaN) = NaN).
// Exact (bitwise equal to the reference) for Relu, LeakyRelu, Clip, Neg, Abs, Sqrt, Reciprocal;
// about 2 ulp for the transcendental ones, 4.3e-7 absolute for Erf.
void UnaryF32(UnaryOp op, const UnaryParams& params, const float* src, float* dst, int64_t n);

// ---- binary (elementwise_hwy.cc) ----
enum class BinaryOp : int {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMax,  // NaN in either operand gives NaN (numpy maximum)
  kMin,
};
// How the two operands of one contiguous run are laid out.
enum class Operands : int {
  kVecVec,     // a[i], b[i]
  kVecScalar,  // a[i], b[0]
  kScalarVec,  // a[0], b[i]
};
// dst[i] = a op b for i < n. IEEE results, bitwise equal to the reference. In-place safe for dst ==
// a or dst == b where that operand is a vector.
void BinaryF32(BinaryOp op, Operands layout, const float* a, const float* b, float* dst, int64_t n);

// ---- softmax (softmax_hwy.cc) ----
enum class SoftmaxKind : int { kSoftmax, kLogSoftmax };
// Softmax or LogSoftmax of each of `rows` contiguous rows of n elements, with the row max
// subtracted first. In-place safe. A row holding NaN or +inf gives NaN, like the reference.
void SoftmaxRowsF32(SoftmaxKind kind, const float* src, float* dst, int64_t rows, int64_t n);
// The same along the middle axis of one [n, cols] slab whose rows start `stride` elements apart
// (a column block of a wider [n, stride] slab), vectorised across the columns. `scratch` holds
// 2 * cols floats. In-place safe.
void SoftmaxSlabF32(SoftmaxKind kind, const float* src, float* dst, int64_t n, int64_t cols,
                    int64_t stride, float* scratch);

// ---- reductions (reduce_hwy.cc) ----
enum class ReduceKind : int { kSum, kMean, kSumSquare, kL2, kMax, kMin };
// dst[r] = reduce(src[r * n, r * n + n)) for r < rows; n >= 1. Sums accumulate in double, as the
// reference does; Max/Min propagate NaN.
void ReduceRowsF32(ReduceKind kind, const float* src, float* dst, int64_t rows, int64_t n);
// Columns ReduceColumnsF32 accumulates at a time (its scratch size).
constexpr int64_t kReduceColumnBlock = 4096;
// dst[i] = reduce over k < n of src[k * stride + i] for i < cols; n >= 1. `scratch` holds
// min(cols, kReduceColumnBlock) doubles. dst must not overlap src.
void ReduceColumnsF32(ReduceKind kind, const float* src, float* dst, int64_t n, int64_t cols,
                      int64_t stride, double* scratch);

// ---- normalization (normalization_hwy.cc) ----
// LayerNormalization over `rows` rows of `cols` elements: y = (x - mean) * inv_std * scale + bias
// with the population mean and variance computed in double (two passes) and
// inv_std = 1 / sqrt(var + epsilon). bias, mean_out and inv_std_out may be null. In-place safe.
void LayerNormRowsF32(const float* src, float* dst, int64_t rows, int64_t cols, const float* scale,
                      const float* bias, double epsilon, float* mean_out, float* inv_std_out);
// dst[b, c, i] = src[b, c, i] * scale[c] + shift[c] over [batch, channels, inner] (inference
// BatchNormalization after folding, or any fused per-channel scale and shift). In-place safe.
void ChannelAffineF32(const float* src, float* dst, int64_t batch, int64_t channels, int64_t inner,
                      const float* scale, const float* shift);
// The same with the channels last: dst[r, c] = src[r, c] * scale[c] + shift[c] over [rows,
// channels] (channels-last activations). In-place safe.
void ChannelAffineLastF32(const float* src, float* dst, int64_t rows, int64_t channels,
                          const float* scale, const float* shift);

// ---- data movement (transpose_hwy.cc) ----
// dst[a * dst_stride + b] = src[a + b * src_stride] for a < rows, b < cols: one 2-D transpose of
// 4-byte (or 8-byte) elements, moved as bits. dst must not overlap src.
void Transpose2D32(const uint32_t* src, int64_t src_stride, uint32_t* dst, int64_t dst_stride,
                   int64_t rows, int64_t cols);
void Transpose2D64(const uint64_t* src, int64_t src_stride, uint64_t* dst, int64_t dst_stride,
                   int64_t rows, int64_t cols);

}  // namespace onyx::kernels::common
