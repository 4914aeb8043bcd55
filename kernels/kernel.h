// The kernel interface: what a kernel sees at run time (KernelContext) and at plan time
// (InferContext), and the Kernel object a node's OpDef creates once per plan.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/node_view.h"
#include "onyx/status.h"
#include "onyx/tensor.h"
#include "onyx/value.h"

namespace onyx::ir {
struct SparseConstant;
}

namespace onyx::kernels {

// Run-time view of one node's inputs and outputs. Implemented by the executor.
class KernelContext {
 public:
  virtual ~KernelContext() = default;
  virtual const NodeView& node() const = 0;

  // Inputs as declared on the node; an omitted optional input ("" or past the end) is absent.
  virtual int num_inputs() const = 0;
  virtual bool has_input(int i) const = 0;
  virtual const Value& input_value(int i) const = 0;
  const Tensor& input(int i) const { return input_value(i).tensor(); }

  virtual int num_outputs() const = 0;
  virtual bool has_output(int i) const = 0;
  // A buffer for output i: the planned arena slot when it fits, else a fresh heap buffer.
  // Contents are unspecified (not zeroed) either way: the kernel writes every element.
  virtual Tensor Output(int i, DType dtype, const Shape& shape) = 0;
  // Sets output i to x's elements under `shape` (the same count) without a copy, sharing x's
  // buffer, where that is safe: x owns its buffer and output i is a heap value that is not a graph
  // output (nothing writes into those in place). False: the kernel writes output i itself.
  virtual bool OutputView(int i, const Tensor& x, const Shape& shape) {
    (void)i, (void)x, (void)shape;
    return false;
  }
  // Sets output i to a value the kernel built itself (sequences, optionals, heap tensors).
  // Tensors passed here must own their buffer (never an input's arena memory).
  virtual void SetOutput(int i, Value value) = 0;

  // Runs the graph attribute `attr` with `inputs` bound to its inputs in order; outer-scope names
  // resolve to the enclosing frame. Outputs come back owning their buffers.
  virtual StatusOr<std::vector<Value>> RunSubgraph(const std::string& attr,
                                                   const std::vector<Value>& inputs) = 0;
  // Same, for a graph held by the caller (e.g. a Loop body passed through).
  virtual int intra_op_threads() const = 0;
  // Kernels that loop for long (Loop, Scan, sequence ops) call this between iterations and
  // return its error as it is: Cancelled once RunOptions::terminate is set or the run's timeout
  // has passed (DESIGN contract 8).
  virtual Status CheckCancelled() const { return Status::Ok(); }
};

// A prepared kernel: created at plan time (attributes parsed, weights packed), run many times.
// Run() may be called from several threads at once; it must not mutate the kernel.
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual Status Run(KernelContext& ctx) const = 0;
  // The algorithm the kernel chose when it was created, when its impl has several (for example
  // "winograd"); plans and profiles show it after the impl name.
  virtual std::string variant() const { return {}; }
  // True when the kernel copied constant input `i` into its own layout at creation (oneDNN's
  // packed weights) and reads only that input's shape when it runs: the planner may then drop
  // the original values (PlanOptions::release_packed_constants).
  virtual bool packed_input(size_t i) const {
    (void)i;
    return false;
  }
};

using KernelFn = Status (*)(KernelContext& ctx);

// Wraps a stateless function as a Kernel: the reference kernels that parse attributes per run.
class FunctionKernel : public Kernel {
 public:
  explicit FunctionKernel(KernelFn fn) : fn_(fn) {}
  Status Run(KernelContext& ctx) const override { return fn_(ctx); }

 private:
  KernelFn fn_;
};

// Plan-time view for shape and type inference. Implemented by the planner.
class InferContext {
 public:
  virtual ~InferContext() = default;
  virtual const NodeView& node() const = 0;
  virtual int num_inputs() const = 0;
  virtual bool has_input(int i) const = 0;
  // The input's type; kind kUnknown when nothing is known.
  virtual const TypeInfo& input_type(int i) const = 0;
  // The input's value when it is a constant (initializer or folded), else nullptr.
  virtual const Tensor* input_constant(int i) const = 0;
  virtual int num_outputs() const = 0;
  virtual bool has_output(int i) const = 0;
  virtual void SetOutputType(int i, TypeInfo type) = 0;
  // Infers the outputs of the graph attribute `attr` given its input types (for If/Loop/Scan).
  virtual StatusOr<std::vector<TypeInfo>> InferSubgraph(const std::string& attr,
                                                        const std::vector<TypeInfo>& inputs) = 0;
};

// Shape-and-type function of an op. Returns an error for inputs the op rejects (naming node and
// input), kUnsupported for types onyx does not implement.
using InferFn = Status (*)(InferContext& ctx);
// Creates the kernel for one node at plan time. `types` are the inferred input types.
using CreateFn = std::function<StatusOr<std::unique_ptr<Kernel>>(
    const NodeView& node, const std::vector<TypeInfo>& input_types)>;

// What a kernel that prepares work at plan time (packed weights, oneDNN primitives) may know.
class WeightCache;

struct KernelCreateInfo {
  std::vector<const Tensor*> constants;  // per input: its value when constant in the plan
  // Per input (same length as `constants`): the COO form when that constant is a
  // sparse_initializer read unchanged (no pass rewrote it), else null. Valid during creation only;
  // a kernel keeps what it needs (ir::SparseConstant: flat int64 indices, values).
  std::vector<const ir::SparseConstant*> sparse_constants;
  int threads = 1;  // the session's intra-op threads
  // Whether 3x3 convolutions may use Winograd's algorithm: about twice as fast, with rounding
  // errors a few times those of direct summation (SessionOptions::winograd).
  bool winograd = true;
  // Convolutions and matrix products may take bfloat16 operands (float32 accumulation and
  // output) where the CPU computes bfloat16 natively (SessionOptions::bf16).
  bool bf16 = false;
  // 1x1 convolutions and products may run on block-sparse kernels when their constant weights
  // are sparse enough (SessionOptions::sparse_kernels).
  bool sparse = true;
  // Deterministic mode (SessionOptions::deterministic): the kernel must compute each output the
  // same way at every thread count and whatever ran before (no algorithm chosen from the thread
  // count, none chosen from the shapes seen so far).
  bool deterministic = false;
  // Where packed constant weights are shared across the session's shape specialisations
  // (kernels/weight_cache.h); null: each kernel packs a private copy.
  WeightCache* weights = nullptr;
};
using CreateWithInfoFn = std::function<StatusOr<std::unique_ptr<Kernel>>(
    const NodeView& node, const std::vector<TypeInfo>& input_types, const KernelCreateInfo& info)>;

}  // namespace onyx::kernels
