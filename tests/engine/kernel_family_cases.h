// Small models that each exercise one family of fast kernels (oneDNN convolutions, pooling and
// LRN, Winograd, matrix products with post-ops, attention, Highway elementwise and data
// movement, QDQ quantization, ConvInteger and lookup tables, block-sparse products), with
// deterministic inputs: shared by the tests that run them concurrently and at several thread
// counts.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "onyx/session.h"

namespace onyx::testing {

struct Case {
  std::string name;
  std::string model;
  std::map<std::string, Shape> inputs;  // float inputs and their shapes
  std::vector<std::string> impls;       // kernel impls the case is meant to exercise
  OptimizationLevel optimization = OptimizationLevel::kAll;
  // Steps of different threads that must overlap in time before the test stops adding rounds.
  int64_t wanted_overlaps = 20;
};

// Every case's name, for parameterised tests.
std::vector<std::string> KernelFamilyNames();
// The case of that name: cnn, winograd_onednn, winograd_f2, matmul, attention, highway, quantize,
// int8 or sparse.
Case KernelFamilyCase(const std::string& name);
// Inputs of the case from `seed` (values in [-1, 1), different for each seed).
NamedValues Feeds(const Case& c, uint64_t seed);
// Elements of `got` whose bits differ from `want` (every output, in order); -1 when shapes or
// counts differ.
int64_t BitDifferences(const NamedValues& want, const NamedValues& got);

}  // namespace onyx::testing
