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
  // The largest difference allowed for one element: `s` its magnitude (kMagnitude), `ref_max`
  // the largest |ref| over the value (kNormwise).
  double Element(double s, double ref_max) const;
};

// How an input of a node enters the magnitude evaluation.
enum class MagnitudeInput { kKeep, kAbs, kNegAbs };

// The node that computes magnitudes in place of `n`, and how each of its inputs is taken; false
// when `n` has no magnitude rule (the step is then bounded normwise).
bool MagnitudeRule(const ir::Node& n, ir::Node* out, std::vector<MagnitudeInput>* inputs);

// The bound for a step standing for `nodes` (model nodes, in order). `types` holds the types of
// their inputs and outputs; `winograd`: the step's kernel runs Winograd's algorithm.
Bound BoundFor(const std::vector<const ir::Node*>& nodes,
               const std::map<std::string, TypeInfo>& types, bool winograd);

}  // namespace onyx::check
