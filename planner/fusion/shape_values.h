// Shape values: what the planner can say about the elements of a small int64 tensor computed from
// shapes (Shape -> Gather -> Unsqueeze -> Concat, as exporters write `x.size()[:2] + (heads, d)`).
// Each element is a known number or "dim i of tensor T", which the fusion pass uses to replace a
// chain of shape arithmetic by a constant Reshape target or by one DimsOf step.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "planner/fusion/fusion_graph.h"

namespace onyx::planner::fusion {

// One element: a known number (slot < 0), or dim `value` (>= 0) of slot `slot`'s tensor.
struct DimAtom {
  int slot = -1;
  int64_t value = 0;
  bool known() const { return slot < 0; }
  bool operator==(const DimAtom& o) const { return slot == o.slot && value == o.value; }
};

struct ShapeValue {
  std::vector<DimAtom> atoms;
  bool scalar = false;  // a 0-d tensor (one atom); otherwise 1-d
};

// Shape values longer than this are not traced (shapes have a handful of dims).
constexpr size_t kMaxShapeValueAtoms = 16;

// The elements of int64 value `slot` when every one is a known number or a dim of a tensor:
// traced back through Shape, Gather, Unsqueeze, Squeeze, Concat, Slice, Cast, Identity and
// com.onyx DimsOf over 0-d and 1-d values, from int64 constants and Shape's inputs. nullopt
// when any element is something else (arithmetic, data) or the chain is not one of these.
std::optional<ShapeValue> TraceShapeValue(const FusionGraph& g, int slot);

// Whether `op_type` (ai.onnx) or com.onyx DimsOf is one TraceShapeValue reads through.
bool IsShapeValueOp(const FusionNode& n);

}  // namespace onyx::planner::fusion
