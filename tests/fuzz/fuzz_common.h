// Shared settings of the libFuzzer harnesses: the ceilings every fuzzed session runs under, so
// that an input is judged by whether onyx refuses it cleanly, not by whether it fits the machine.
#pragma once

#include "onyx/session.h"

namespace onyx::fuzz {

// Low enough that a single input cannot approach libFuzzer's -rss_limit_mb (2 GB in CI), or its
// -timeout with legal work (a linear Resize of a 4x4 image to 13.5M floats, 54 MB, took 0.7 s in
// a Release build and over 15 s under ASan with coverage), high enough for every node test model.
inline SessionOptions FuzzSessionOptions() {
  SessionOptions options;
  options.intra_op_threads = 1;  // deterministic and cheap; threading is the TSan suite's job
  options.limits.max_tensor_bytes = 8ull << 20;
  options.limits.max_arena_bytes = 32ull << 20;
  options.limits.max_nodes = 10000;
  options.limits.max_nesting = 16;
  options.limits.max_initializers = 10000;
  return options;
}

}  // namespace onyx::fuzz
