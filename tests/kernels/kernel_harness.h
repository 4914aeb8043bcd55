// Runs one registered kernel impl of one node directly (no model, no planner), so a fast impl can
// be compared with the reference impl of the same node on any inputs, with its output placed over
// input 0 (the planner's in-place reuse), and on every Highway target the CPU supports.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/ir/graph.h"
#include "kernels/op_registry.h"
#include "onyx/status.h"
#include "onyx/tensor.h"

namespace onyx::testing {

using ir::FloatAttr;  // attribute builders from kernels/ir/graph.h
using ir::FloatsAttr;
using ir::IntAttr;
using ir::IntsAttr;
using ir::StringAttr;
using ir::StringsAttr;

struct NodeSpec {
  NodeSpec(std::string op_type, int64_t op_opset, std::vector<ir::Attribute> attributes = {},
           int outputs = 1)
      : op(std::move(op_type)),
        opset(op_opset),
        attrs(std::move(attributes)),
        num_outputs(outputs) {}
  std::string op;
  int64_t opset;
  std::vector<ir::Attribute> attrs;
  int num_outputs;
  std::string domain;  // "" (ai.onnx) or "com.onyx"
};

struct RunOptions {
  int threads = 1;
  // Output 0 is given input 0's buffer (same dtype and element count), as the planner does for
  // ops marked in-place. Input 0 is copied first, so the caller's tensor is left alone.
  bool output_over_input0 = false;
  // Same for another input (the planner's OpDef::inplace_input); -1: none beyond the above.
  int output_over_input = -1;
  // Inputs handed to a plan-time kernel (create_with_info) as constants, as the planner does for
  // initializers; the others are seen only at run time.
  std::vector<int> constant_inputs;
  // Output buffers of one run are handed to the next (PreparedImpl::Run, the benchmarks), as the
  // plan's arena slots are; false: fresh buffers filled with a garbage pattern every run.
  bool reuse_outputs = false;
};

struct RunResult {
  Status status;
  std::string impl;             // the impl that ran
  std::string variant;          // its kernel's variant() ("" when it has none)
  std::vector<Tensor> outputs;  // one per node output (undefined when not written)
  // The impl declined the node (its `supports`, or kUnsupported from its creation, which makes
  // the planner try the next impl): `status` says why.
  bool declined = false;
};

// Runs the impl called `impl` of the node's OpDef ("" = the reference impl, the last one) on
// `inputs` (an undefined Tensor = an omitted optional input). Fails the status when the impl is
// not registered or its `supports` rejects the node.
RunResult RunImpl(const NodeSpec& spec, const std::vector<Tensor>& inputs, const std::string& impl,
                  const RunOptions& options = {});

// Same, for an impl the caller already holds (the enumerated grid test walks OpDef::impls).
RunResult RunImpl(const kernels::KernelImpl& impl, const NodeSpec& spec,
                  const std::vector<Tensor>& inputs, const RunOptions& options = {});

// One impl's kernel created for one node and its inputs, run as often as wanted (the grid
// benchmarks time Run()). A node the impl declines gives a RunResult with `declined` set.
class PreparedImpl {
 public:
  PreparedImpl(const kernels::KernelImpl& impl, const NodeSpec& spec, std::vector<Tensor> inputs,
               const RunOptions& options = {});
  ~PreparedImpl();
  PreparedImpl(const PreparedImpl&) = delete;
  PreparedImpl& operator=(const PreparedImpl&) = delete;
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  bool declined() const { return declined_; }
  RunResult Run();

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::string impl_, variant_;
  Status status_;
  bool declined_ = false;
};

// Expects `plan` (a Session::DescribePlan text) to run `impl` ("[impl]"). Under ONYX_ISA=scalar,
// where the planner takes no SIMD kernel, it expects the opposite: `impl` absent.
void ExpectPlanPicks(const std::string& plan, const std::string& impl,
                     const std::string& what = "");

// Names of the impls registered for the node's op and opset, first (tried first) to last.
std::vector<std::string> ImplNames(const std::string& op, int64_t opset);

// Highway targets to run a test on: every target compiled in and supported by this CPU. Calls
// f(target_name) with dispatch forced to that target, and restores normal dispatch afterwards.
void ForEachSimdTarget(const std::function<void(const std::string&)>& f);

// Shape of output 0 from the reference impl (for building a residual of the right shape).
Shape ReferenceOutputShape(const NodeSpec& spec, const std::vector<Tensor>& inputs);

// Runs `impl` on every Highway target, at 1 and 2 threads, with W and B (inputs 1 and 2) seen
// at run time and as plan-time constants, and expects it to run and its output 0 to match
// `expected` within CompareFloats(atol, rtol). `what` names the case in failure messages.
void ExpectImplMatches(const NodeSpec& spec, const std::vector<Tensor>& inputs,
                       const std::string& impl, const Tensor& expected, double atol, double rtol,
                       const std::string& what);

// ---- data ----
// Float tensor with values uniform in [lo, hi).
Tensor RandomFloats(const Shape& shape, std::mt19937& rng, float lo = -4.f, float hi = 4.f);
// Overwrites some elements with NaN, +-inf, -0.0, 0 and large/tiny values (fixed pattern).
void InjectSpecials(Tensor& t);
Tensor FloatTensor(const Shape& shape, const std::vector<float>& values);
Tensor Int64Tensor(const Shape& shape, const std::vector<int64_t>& values);

// Compares float tensors: same shape, NaN where expected NaN, equal infinities, and
// |a - e| <= atol + rtol * |e| elsewhere. Returns a description of the first mismatch, or "".
std::string CompareFloats(const Tensor& actual, const Tensor& expected, double atol, double rtol);
// Byte-for-byte comparison of any plain tensors (dtype, shape, contents).
std::string CompareBytes(const Tensor& actual, const Tensor& expected);

}  // namespace onyx::testing
