// Shape and type inference for one node: calls its OpDef's infer function with the input types
// and constant values known at plan time. Shapes flow forward only, in schedule order.
#pragma once

#include <functional>
#include <vector>

#include "kernels/ir/graph.h"
#include "kernels/op_registry.h"

namespace onyx::planner {

// Infers a subgraph attribute's output types from its input types (If/Loop/Scan).
using SubgraphInferFn = std::function<StatusOr<std::vector<TypeInfo>>(
    const ir::Graph& graph, const std::vector<TypeInfo>& inputs)>;

// Fills `outputs` (one per node output; kUnknown where nothing is known). Errors name the node.
Status InferNode(const ir::Node& node, const kernels::OpDef& op,
                 const std::vector<TypeInfo>& input_types,
                 const std::vector<const Tensor*>& input_constants,
                 const SubgraphInferFn& infer_subgraph, std::vector<TypeInfo>* outputs);

// Keeps what inference knows and fills gaps from the model's declared type (value_info).
TypeInfo MergeDeclared(const TypeInfo& inferred, const TypeInfo* declared);

}  // namespace onyx::planner
