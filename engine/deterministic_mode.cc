#include "engine/deterministic_mode.h"

#include <string>
#include <vector>

#include "kernels/op_registry.h"

namespace onyx::engine {
namespace {

// Dropout draws a mask only in training mode: its optional training_mode input (opset 12+)
// present and not a constant false.
bool DropoutMayTrain(const ir::Graph& g, const ir::Node& n) {
  if (n.inputs.size() < 3 || n.inputs[2].empty()) return false;
  auto it = g.initializers.find(n.inputs[2]);
  if (it == g.initializers.end() || it->second.numel() != 1 || it->second.dtype() != DType::kBool)
    return true;
  return it->second.data<bool>()[0];
}

void CollectUnseeded(const ir::Graph& g, std::vector<std::string>& out) {
  for (const auto& n : g.nodes) {
    const kernels::OpDef* op = kernels::OpRegistry::Global().Find(n.domain, n.op_type, n.opset);
    if (op && !op->deterministic && !n.attr("seed")) {
      const bool random = n.op_type != "Dropout" || n.domain != "" || DropoutMayTrain(g, n);
      if (random) out.push_back(n.Describe());
    }
    for (const auto& a : n.attributes) {
      if (a.g) CollectUnseeded(*a.g, out);
      for (const auto& sg : a.graphs) CollectUnseeded(*sg, out);
    }
  }
}

}  // namespace

Status CheckDeterministicMode(const ir::Graph& graph, const SessionOptions& options) {
  if (options.bf16)
    return InvalidArgument(
        "deterministic mode cannot be combined with bf16: oneDNN's bfloat16 products on AMX "
        "split their sums between threads by the thread count (docs/determinism.md)");
  std::vector<std::string> unseeded;
  CollectUnseeded(graph, unseeded);
  if (unseeded.empty()) return Status::Ok();
  std::string names;
  for (const std::string& s : unseeded) names += (names.empty() ? "" : "; ") + s;
  return InvalidArgument(
      "deterministic mode: ", names, unseeded.size() == 1 ? " draws" : " draw",
      " random values without a 'seed' attribute, so no two runs give the same outputs; give "
      "it a seed (each run then draws the same values) or create the session without "
      "deterministic mode (docs/determinism.md)");
}

}  // namespace onyx::engine
