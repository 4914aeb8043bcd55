// The bounds `onyx check` holds each optimised step to, in one place (docs/check.md): which model
// ops are exact, which have a magnitude rule (so a step made only of them is bounded by
// c*K*u*S with S the same nodes evaluated on magnitudes), and the constants.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/ir/graph.h"
#include "onyx/value.h"

namespace onyx::check {

constexpr double kUnitRoundoff = 0x1p-24;  // u: float32's unit roundoff

enum class BoundKind {
  kExact,      // data movement, selection, Relu: fast and reference agree bit for bit
  kMagnitude,  // |fast - ref| <= c*K*u*S elementwise; S = the nodes evaluated on |inputs|
  kNormwise,   // |fast - ref| <= c*K*u*max|ref| over the value (transcendental, normalisation)
};
const char* BoundKindName(BoundKind k);

struct Bound {
  BoundKind kind = BoundKind::kExact;
  double c = 0;      // the constant in front of K*u
  int64_t k = 0;     // K: the longest sum in the nodes, plus one per node (each rounds once more)
  std::string text;  // printed in the report, e.g. "|d| <= 2*K*u*S, K=577"
  // Integer outputs: the largest difference allowed, in integer units. 1 for steps that quantize
  // (QuantizeLinear, QLinear*): fast and reference round reals that differ by float rounding, and
  // one near a half-integer may round either way. 0 elsewhere (integer arithmetic is exact).
  int64_t integer_tolerance = 0;
  // kMagnitude steps with a transcendental function (Sigmoid, Tanh, Erf, ...): each kernel may
  // be a few ulp off the function's exact value, so `r`*u*|ref| more is allowed; 0 elsewhere.
  double r = 0;
  // The largest difference allowed for one element: `s` its magnitude (kMagnitude), `ref` its
  // reference value, `ref_max` the largest |ref| over the value (kNormwise).
  double Element(double s, double ref, double ref_max) const;
};

// How an input of a node enters the magnitude evaluation.
enum class MagnitudeInput { kKeep, kAbs, kNegAbs };

// The node that computes magnitudes in place of `n`, and how each of its inputs is taken; false
// when `n` has no magnitude rule (the step is then bounded normwise).
bool MagnitudeRule(const ir::Node& n, ir::Node* out, std::vector<MagnitudeInput>* inputs);

// The magnitude of a convolution that a Winograd kernel computes: S_patch of
// docs/semantics/conv.md [CONV-12], |B| + sum_c P_c * sum_t |W[m, c, t]| with P_c the largest |X|
// of channel c over the window widened by 3 on every side. Fills `nodes` (a MaxPool of the input
// magnitudes and a 1x1 Conv, reading conv's input names and `wsum_name`) and `wsum` (sum_t |W|,
// [M, C, 1, 1]); false when conv is not a 2-D group-1 convolution with explicit pads.
bool WinogradMagnitude(const ir::Node& conv, const Tensor& w, const std::string& wsum_name,
                       std::vector<ir::Node>* nodes, Tensor* wsum);

// The bound for a step standing for `nodes` (model nodes, in order). `types` holds the types of
// their inputs and outputs; `winograd`: the step's kernel runs Winograd's algorithm.
Bound BoundFor(const std::vector<const ir::Node*>& nodes,
               const std::map<std::string, TypeInfo>& types, bool winograd);

}  // namespace onyx::check
