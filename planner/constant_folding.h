// Constant folding: runs a node whose inputs are all known at plan time through its kernel and
// keeps the outputs as constants. Shape/Size of a statically shaped value fold without data.
#pragma once

#include <optional>
#include <vector>

#include "kernels/ir/graph.h"
#include "kernels/op_registry.h"

namespace onyx::planner {

// True when the node may be folded: deterministic, no subgraphs, every present input constant.
bool CanFold(const ir::Node& node, const kernels::OpDef& op,
             const std::vector<const Value*>& inputs);

// Runs the node's first kernel on constant inputs; returns one Value per output (undefined for
// omitted outputs).
StatusOr<std::vector<Value>> FoldNode(const ir::Node& node, const kernels::OpDef& op,
                                      const std::vector<const Value*>& inputs,
                                      const std::vector<TypeInfo>& input_types);

// Shape and Size need only the input's static shape. Returns nullopt when not foldable.
std::optional<Tensor> FoldShapeOp(const ir::Node& node, const TypeInfo& input);

}  // namespace onyx::planner
