// Input and output counts of every ONNX operator, checked once per node at load time, so that
// kernels and shape functions may index the inputs their schema requires without bounds checks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/ir/graph.h"
#include "onyx/status.h"

namespace onyx::kernels {

// Checks `node` against the ONNX schema in force at its opset (the greatest since_version <=
// node.opset for its domain and op type): input count within [min_input, max_input], no
// required input given as "", output count within [min_output, max_output]. Fails with
// kInvalidModel naming the node and the limit. Ops the schemas do not know (com.microsoft,
// onyx's own fused ops, an op older than its first version) pass: their kernels check.
// It also refuses an attribute the schema does not define, naming node, attribute and value.
Status CheckNodeArity(const ir::Node& node);

// A schema version inside a registered opset range whose interface differs from the version
// before it: attributes it adds, or its formal inputs when they changed.
struct SchemaChange {
  int since_version = 0;
  std::string added_attributes;  // ", "-separated; empty when none
  std::string inputs;            // the new formal inputs when they changed, else empty
};
// The schema versions in (since, until] of (domain, op_type) that add attributes or change the
// inputs relative to the version before them: a kernel registered for that whole range was
// written before them and may ignore what they added.
std::vector<SchemaChange> SchemaChangesWithin(const std::string& domain, const std::string& op_type,
                                              int64_t since, int64_t until);

}  // namespace onyx::kernels
