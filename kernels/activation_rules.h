// The activation table: one row per elementwise activation with its ai.onnx name, its typed
// parameters (attribute and default), whether the fusion pass may fold it into its producer, and
// the hooks of the fast paths (its Highway loop here; its oneDNN post-op is mapped in
// kernels/x86/onednn_context.cc, switched on ActivationKind). Below the table, the one scalar
// definition of each activation, used by every reference loop (the ai.onnx reference kernels and
// the epilogue of the com.onyx fused ops). Every place that parses or evaluates an activation by
// name goes through here.
//
// Adding an activation: its kind, its row (kernels/activation_rules.cc: it is then registered as an
// ai.onnx operator, parsed, fused and printed from there), its ActivationScalar and
// VisitActivationKind cases; for speed, a Highway loop (kernels/common/elementwise_hwy.cc) and,
// when fusable, a oneDNN post-op (kernels/x86/onednn_context.cc).
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kernels/common/unary_op.h"
#include "kernels/node_view.h"
#include "kernels/reference/elementwise_loops.h"
#include "onyx/status.h"

namespace onyx::kernels {

enum class ActivationKind {
  kNone,
  // Fusable: folded into a producer's epilogue by the fusion pass.
  kRelu,
  kLeakyRelu,  // alpha
  kClip,       // min = alpha, max = beta
  kSigmoid,
  kTanh,
  kHardSigmoid,  // max(0, min(1, alpha * x + beta))
  kHardSwish,
  kElu,       // alpha
  kGelu,      // erf form
  kGeluTanh,  // tanh approximation
  kSoftplus,
  kMish,
  // Reference and Highway only.
  kSelu,             // alpha, gamma
  kCelu,             // alpha (not 0)
  kSoftsign,         //
  kThresholdedRelu,  // alpha
  kSwish,            // alpha
};

// An activation with its parameters (what alpha / beta / gamma mean is per kind, see above).
struct Activation {
  ActivationKind kind = ActivationKind::kNone;
  float alpha = 0;
  float beta = 0;
  float gamma = 0;
};

// One parameter: the ai.onnx attribute it is read from and its default (attr null: unused).
struct ActivationParam {
  const char* attr = nullptr;
  float default_value = 0;
};

struct ActivationRule {
  ActivationKind kind;
  const char* op_type;  // the ai.onnx operator, also the fused ops' `activation` value
  int64_t since;        // the opset it appeared in; 0: registered elsewhere (Clip, Gelu's tanh row)
  int64_t changed;      // an opset where its meaning changed (a definition of its own), or 0
  ActivationParam alpha, beta, gamma;
  bool fusable;   // the fusion pass folds it into Conv / MatMul / Gemm / ChannelAffine
  bool in_place;  // output 0 may take input 0's buffer (OpDef::inplace_input)
  bool cheap;     // a few flops per element, no transcendental function
  bool has_unary_op;
  common::UnaryOp unary_op;  // its Highway loop (UnaryF32) when has_unary_op
};

// Every row, in table order.
const std::vector<ActivationRule>& ActivationRules();
// The row of `kind`, or null for kNone.
const ActivationRule* FindActivationRule(ActivationKind kind);
// The row of ai.onnx operator `op_type` (Gelu: the erf row), or null.
const ActivationRule* FindActivationRule(std::string_view op_type);
// "Relu|LeakyRelu|..." over the fusable rows: the activation alternative of the fusion patterns.
const std::string& FusableActivationOps();

// Reads and checks the activation of an ai.onnx node (an operator of the table): its attributes
// with the defaults of the node's opset (Selu before 6 documented shorter constants), Gelu's
// `approximate` ("none" | "tanh") choosing kGelu or kGeluTanh, Celu's alpha not 0. Clip's bounds
// are attributes before opset 11 and optional inputs from 11: from 11 this gives the float range
// and the caller reads the inputs. An operator outside the table is an error naming the node.
StatusOr<Activation> ParseActivation(const NodeView& node);

// The fused form on com.onyx ops: the `activation` (string) and `activation_params` (floats)
// attributes. "" is none; a fusable row's name takes its parameters in order (alpha, beta), Gelu
// takes [0] (erf) or [1] (tanh). An unknown name, a row that is not fusable or a wrong parameter
// count is an error naming the node and attribute.
StatusOr<Activation> ParseFusedActivation(const NodeView& node);
// The attribute values that ParseFusedActivation reads back as `a`.
std::string ActivationName(ActivationKind kind);
std::vector<float> ActivationParams(const Activation& a);

// ---- the scalar definitions ----
// C is float or double (the 16-bit floats compute in float); Relu also takes integers. Written
// branch-free so the reference loops over them vectorise (float exp is ExpClampedF32).

namespace activation_math {

using reference::ExpClampedF32;
using reference::Select;

template <typename C>
ONYX_ELEMENT_INLINE C Exp(C v) {
  if constexpr (std::is_same_v<C, float>) {
    return ExpClampedF32(v);
  } else {
    return std::exp(v);
  }
}

template <typename C>
ONYX_ELEMENT_INLINE C Sigmoid(C v) {
  // e = exp(-|v|) never overflows; sigmoid(v) = 1/(1+e) for v >= 0, e/(1+e) below.
  const C e = Exp(-std::fabs(v));
  const C s = C(1) / (C(1) + e);
  return Select(v >= C(0), s, e * s);
}

template <typename C>
ONYX_ELEMENT_INLINE C Tanh(C v) {
  if constexpr (std::is_same_v<C, float>) {
    // Cephes tanhf: an odd polynomial below 0.625, 1 - 2/(exp(2|v|)+1) above; both computed and
    // selected so the loop stays branch-free. NaN propagates through both.
    const C a = std::fabs(v);
    const C z = v * v;
    C p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    const C small = p * z * v + v;
    const C big = C(1) - C(2) / (ExpClampedF32(C(2) * a) + C(1));
    return Select(a < C(0.625), small, std::copysign(big, v));
  } else {
    return std::tanh(v);
  }
}

template <typename C>
ONYX_ELEMENT_INLINE C Softplus(C v) {
  // log(1 + exp(v)) = max(v, 0) + log1p(exp(-|v|)): no overflow for large v (it is v there).
  // libm's exp, not the clamped one: log1p is a libm call anyway, and far below 0 the result is
  // exp(v) itself (3.7e-44 at -100), which the clamp would hold at 1e-38.
  return Select(v > C(0), v, C(0)) + std::log1p(std::exp(-std::fabs(v)));
}

}  // namespace activation_math

// act(v) with the parameters already converted to C.
template <ActivationKind K, typename C>
ONYX_ELEMENT_INLINE C ActivationScalar(C v, C alpha, C beta, C gamma) {
  using namespace activation_math;
  if constexpr (K == ActivationKind::kNone) {
    return v;
  } else if constexpr (K == ActivationKind::kRelu) {
    return Select(v < C(0), C(0), v);  // NaN passes through
  } else if constexpr (K == ActivationKind::kLeakyRelu) {
    return Select(v < C(0), alpha * v, v);
  } else if constexpr (K == ActivationKind::kClip) {
    // max then min: when min > max every element becomes max, as the spec says. NaN stays NaN.
    const C t = Select(v < alpha, alpha, v);
    return Select(beta < t, beta, t);
  } else if constexpr (K == ActivationKind::kSigmoid) {
    return Sigmoid(v);
  } else if constexpr (K == ActivationKind::kTanh) {
    return Tanh(v);
  } else if constexpr (K == ActivationKind::kHardSigmoid) {
    const C r = Select(alpha * v + beta < C(0), C(0), alpha * v + beta);
    return Select(r > C(1), C(1), r);
  } else if constexpr (K == ActivationKind::kHardSwish) {
    // x * HardSigmoid(x) with alpha = 1/6, beta = 0.5.
    const C h = v / C(6) + C(0.5);
    return v * Select(h > C(1), C(1), Select(h < C(0), C(0), h));
  } else if constexpr (K == ActivationKind::kElu) {
    return Select(v < C(0), alpha * (Exp(v) - C(1)), v);
  } else if constexpr (K == ActivationKind::kGelu) {
    const C kSqrtHalf = static_cast<C>(0.7071067811865476);
    return C(0.5) * v * (C(1) + std::erf(v * kSqrtHalf));
  } else if constexpr (K == ActivationKind::kGeluTanh) {
    const C kSqrt2OverPi = static_cast<C>(0.7978845608028654);
    const C kCoeff = static_cast<C>(0.044715);
    return C(0.5) * v * (C(1) + Tanh(kSqrt2OverPi * (v + kCoeff * v * v * v)));
  } else if constexpr (K == ActivationKind::kSoftplus) {
    return Softplus(v);
  } else if constexpr (K == ActivationKind::kMish) {
    if constexpr (std::is_same_v<C, float>) {
      // tanh(log(1 + n)) = n(n + 2) / (n(n + 2) + 2) with n = e^v: no log, so it vectorises.
      // Above 20 the ratio is 1 in float (and n(n + 2) would overflow). At -inf the formula is
      // -inf * tanh(softplus(-inf)) = -inf * 0 = NaN, as the reference evaluator and ONNX Runtime
      // give; the clamped exp would otherwise return -inf.
      const C n = ExpClampedF32(v);
      const C m = n * (n + C(2));
      const C r = Select(v > C(20), v, v * m / (m + C(2)));
      return Select(v < -std::numeric_limits<C>::max(), v * C(0), r);
    } else {
      return v * std::tanh(Softplus(v));
    }
  } else if constexpr (K == ActivationKind::kSelu) {
    return Select(v > C(0), gamma * v, gamma * (alpha * Exp(v) - alpha));
  } else if constexpr (K == ActivationKind::kCelu) {
    // max(0, x) + min(0, a(exp(x/a) - 1)) is x for x > 0 and the second term otherwise; picking
    // by x keeps NaN inputs NaN (summing two clamps turned them into 0).
    return Select(v > C(0), v, alpha * (Exp(v / alpha) - C(1)));
  } else if constexpr (K == ActivationKind::kSoftsign) {
    return v / (C(1) + std::fabs(v));
  } else if constexpr (K == ActivationKind::kThresholdedRelu) {
    return Select(v > alpha, v, C(0));
  } else if constexpr (K == ActivationKind::kSwish) {
    return v * Sigmoid(alpha * v);
  }
}

// Calls f(std::integral_constant<ActivationKind, K>{}) for the runtime `kind`: one switch for
// every loop that instantiates ActivationScalar per kind.
template <typename F>
decltype(auto) VisitActivationKind(ActivationKind kind, F&& f) {
  switch (kind) {
#define ONYX_ACTIVATION_KIND_CASE(K) \
  case ActivationKind::K:            \
    return f(std::integral_constant<ActivationKind, ActivationKind::K>{});
    ONYX_ACTIVATION_KIND_CASE(kRelu)
    ONYX_ACTIVATION_KIND_CASE(kLeakyRelu)
    ONYX_ACTIVATION_KIND_CASE(kClip)
    ONYX_ACTIVATION_KIND_CASE(kSigmoid)
    ONYX_ACTIVATION_KIND_CASE(kTanh)
    ONYX_ACTIVATION_KIND_CASE(kHardSigmoid)
    ONYX_ACTIVATION_KIND_CASE(kHardSwish)
    ONYX_ACTIVATION_KIND_CASE(kElu)
    ONYX_ACTIVATION_KIND_CASE(kGelu)
    ONYX_ACTIVATION_KIND_CASE(kGeluTanh)
    ONYX_ACTIVATION_KIND_CASE(kSoftplus)
    ONYX_ACTIVATION_KIND_CASE(kMish)
    ONYX_ACTIVATION_KIND_CASE(kSelu)
    ONYX_ACTIVATION_KIND_CASE(kCelu)
    ONYX_ACTIVATION_KIND_CASE(kSoftsign)
    ONYX_ACTIVATION_KIND_CASE(kThresholdedRelu)
    ONYX_ACTIVATION_KIND_CASE(kSwish)
#undef ONYX_ACTIVATION_KIND_CASE
    case ActivationKind::kNone:
      break;
  }
  return f(std::integral_constant<ActivationKind, ActivationKind::kNone>{});
}

}  // namespace onyx::kernels
