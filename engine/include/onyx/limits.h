// Ceilings that keep a hostile model or feed from exhausting the machine (DESIGN contract 8).
// Every field left at 0 takes its default, which the environment variable named beside it
// overrides (a plain decimal number; sizes may end in K, M, G or T for powers of 1024).
#pragma once

#include <cstdint>

namespace onyx {

struct Limits {
  // Bytes of any single tensor: an initializer, a feed, a kernel's output or scratch.
  // ONYX_MAX_TENSOR_BYTES; default: the machine's physical memory.
  uint64_t max_tensor_bytes = 0;
  // Bytes of one plan's arena (all intermediates of one run). ONYX_MAX_ARENA_BYTES; default:
  // the machine's physical memory.
  uint64_t max_arena_bytes = 0;
  // Nodes of a model after model-local functions are inlined, subgraphs included.
  // ONYX_MAX_NODES; default 1,000,000.
  int64_t max_nodes = 0;
  // Depth of nested subgraphs (If/Loop/Scan bodies) and of function calls within calls.
  // ONYX_MAX_NESTING; default 64.
  int64_t max_nesting = 0;
  // Initializers of a model, subgraphs included. ONYX_MAX_INITIALIZERS; default 1,000,000.
  int64_t max_initializers = 0;
  // The cache of shape specialisations (one plan per distinct set of input shapes, sharing the
  // session's packed weights; docs/dynamic_shapes.md): least recently used plans are dropped
  // beyond this many plans, ONYX_MAX_SHAPE_PLANS, default 16; or beyond these bytes of
  // shape-specific constants, ONYX_MAX_SHAPE_PLAN_BYTES, default 256 MiB.
  int64_t max_shape_plans = 0;
  uint64_t max_shape_plan_bytes = 0;
  // A model with symbolic input dims first runs new shapes on its shape-generic plan (planned
  // once, for the declared types) when that plan's weight-heavy operators all have fast
  // kernels; a shape gets a plan of its own (arena, shape-specific kernels) on this many-th run.
  // ONYX_SPECIALIZE_AFTER_RUNS, default 8; 1 plans every new shape at once.
  int64_t specialize_after_runs = 0;
};

// `requested` with every 0 replaced by the environment variable, or else the default. An
// environment variable that is not a positive number is ignored with a warning on stderr.
Limits ResolveLimits(const Limits& requested = {});

}  // namespace onyx
