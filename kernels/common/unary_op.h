// The unary float32 operations of the Highway loops (UnaryF32 in simd_kernels.h), in a header of
// their own so that the activation table (kernels/activation_rules.h) can name the loop of each
// activation without pulling in Highway.
#pragma once

namespace onyx::kernels::common {

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
  kNanTo,    // alpha where x is NaN, else x (com.onyx ReplaceNaN)
};
struct UnaryParams {
  float alpha = 0;
  float beta = 0;
};

}  // namespace onyx::kernels::common
