// Input and output counts of every ONNX operator, checked once per node at load time, so that
// kernels and shape functions may index the inputs their schema requires without bounds checks.
#pragma once

#include "kernels/ir/graph.h"
#include "onyx/status.h"

namespace onyx::kernels {

// Checks `node` against the ONNX schema in force at its opset (the greatest since_version <=
// node.opset for its domain and op type): input count within [min_input, max_input], no
// required input given as "", output count within [min_output, max_output]. Fails with
// kInvalidModel naming the node and the limit. Ops the schemas do not know (com.microsoft,
// onyx's own fused ops, an op older than its first version) pass: their kernels check.
Status CheckNodeArity(const ir::Node& node);

}  // namespace onyx::kernels
