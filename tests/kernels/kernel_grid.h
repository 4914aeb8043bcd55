// The shared grid of kernel cases: per operator, named one-node cases (attributes, input shapes
// and types, which inputs are constant initializers, how each input is filled) chosen to hit odd
// sizes, vector tails, broadcasting, non-finite values and in-place outputs, and a named
// tolerance per operator. The enumerated kernel test (kernel_grid_test.cc) runs every registered
// non-reference impl on every case it accepts against its operator's reference impl; the grid
// benchmark (bench/kernels/bench_grid.cc) times the same cases. A new kernel for an operator that
// has cases gets its test and benchmark with no code; one whose operator has none fails the test.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/ir/graph.h"
#include "onyx/tensor.h"
#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {

// How an input's values are made (from the case's seed).
enum class Fill {
  kUniform,   // uniform in [lo, hi): floats, or integers for integer types
  kSpecials,  // uniform, then NaN, +-inf, -0, huge and tiny values spread over it
  kValues,    // exactly `values` (converted to the dtype)
  kSparse,    // uniform floats with 16-wide blocks of each row zeroed (block-sparse weights)
};

struct GridInput {
  DType dtype = DType::kUndefined;  // kUndefined: an omitted optional input
  Shape shape;
  Fill fill = Fill::kUniform;
  double lo = -4, hi = 4;
  std::vector<double> values;
  // An initializer in a model: handed to plan-time kernels (KernelCreateInfo::constants).
  bool constant = false;
};

// Input builders.
GridInput F32(const Shape& shape, double lo = -4, double hi = 4);       // uniform float32
GridInput Specials(const Shape& shape);                                 // float32 with non-finites
GridInput Ints(DType dtype, const Shape& shape, double lo, double hi);  // uniform integers
GridInput Values(DType dtype, const Shape& shape, const std::vector<double>& values);
GridInput SparseF32(const Shape& shape);  // constant block-sparse float32 weights
GridInput Const(GridInput in);            // the same input as a constant initializer
GridInput Omitted();

struct GridCase {
  std::string name;  // unique within its operator: "tail_33", "broadcast_c", ...
  std::string domain;
  std::string op;
  // The case is valid for these opsets; it runs against every definition of the op whose range
  // overlaps, at the first opset of that range it is valid for.
  int64_t min_opset = 1;
  int64_t max_opset = 1000;
  std::vector<ir::Attribute> attrs;
  std::vector<GridInput> inputs;
  int outputs = 1;
  // Graph inputs a benchmark may enlarge: when set, the grid benchmark's --grid_scale multiplies
  // dim `scale_dim` of every non-constant input of input 0's rank (set only on cases where that
  // stays a valid node).
  int scale_dim = -1;
};

// How a fast impl's outputs may differ from the reference impl's: |a - e| <= atol + rtol * |e|
// per element after both are converted to double (NaN where the reference has NaN, the same
// infinities). atol = rtol = 0 is exact equality.
struct Tolerance {
  std::string name;  // "exact", "transcendental", "float_sum", ...
  double atol = 0;
  double rtol = 0;
  // Where the reference gives NaN any value is accepted (the fast kernel's max ignores NaN).
  bool nan_unordered = false;
};

// Every case of the grid, grouped by operator.
const std::vector<GridCase>& KernelGrid();
// The tolerance of an operator (the grid's named classes, see kernel_grid.cc).
Tolerance ToleranceFor(const std::string& domain, const std::string& op);
// The node of a case at `opset`.
NodeSpec SpecOf(const GridCase& c, int64_t opset);
// The inputs of a case (deterministic in `seed`); `scale` > 1 enlarges dim `scale_dim`.
std::vector<Tensor> InputsOf(const GridCase& c, uint32_t seed, int scale = 1);
// Indices of the case's constant inputs (RunOptions::constant_inputs).
std::vector<int> ConstantInputsOf(const GridCase& c);
// Compares every output of `got` with `want` under `tol`; "" when they match, else the first
// difference (output index, element, values).
std::string CompareOutputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                           const Tolerance& tol);

}  // namespace onyx::testing
