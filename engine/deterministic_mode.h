// Session-creation checks of deterministic mode (SessionOptions::deterministic,
// docs/determinism.md): what no kernel choice can make repeatable is refused with an error.
#pragma once

#include "kernels/ir/graph.h"
#include "onyx/session.h"
#include "onyx/status.h"

namespace onyx::engine {

// Fails for bf16 (oneDNN's AMX bfloat16 products split their sums by the thread count) and for
// each random operator (subgraphs included) without a `seed` attribute, naming the node; Dropout
// only when it may run in training mode. Ok otherwise.
Status CheckDeterministicMode(const ir::Graph& graph, const SessionOptions& options);

}  // namespace onyx::engine
