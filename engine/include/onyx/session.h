// The public C++ API: load a model once, run it many times (from several threads if you like).
//
//   onyx::Session session("model.onnx", {.intra_op_threads = 2});
//   auto outputs = session.Run({{"x", onyx::Tensor::Borrow(onyx::DType::kFloat, {1, 3}, data)}});
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "onyx/limits.h"
#include "onyx/status.h"
#include "onyx/tensor.h"
#include "onyx/value.h"

namespace onyx {

namespace ir {
struct Model;
}

enum class OptimizationLevel { kNone = 0, kBasic = 1, kAll = 2 };
// "none" | "basic" | "all"; error for anything else.
StatusOr<OptimizationLevel> ParseOptimizationLevel(const std::string& s);

// Changes made to a model as it is loaded (onnxruntime's SessionOptions.add_initializer,
// add_external_initializers, add_free_dimension_override_by_name / _by_denotation).
struct ModelEdits {
  // Main-graph initializers replaced by these values (an initializer is added for a graph input
  // that has none); an initializer whose external data is missing may be given this way.
  std::vector<std::pair<std::string, Tensor>> initializers;
  // Symbolic dims of the graph inputs fixed to a value, by dim_param or by denotation.
  std::map<std::string, int64_t> dims_by_name;
  std::map<std::string, int64_t> dims_by_denotation;
  // External-data files given in memory (name as in the initializers' "location" -> bytes, not
  // owned: they must outlive the session's creation); read instead of files on disk.
  std::map<std::string, std::string_view> external_files;
};

struct SessionOptions {
  int intra_op_threads = 0;  // 0: one per core
  OptimizationLevel optimization = OptimizationLevel::kAll;
  // Run every op on its reference kernel (no SIMD or oneDNN): the oracle for testing fast kernels.
  bool reference_kernels = false;
  // Let 3x3 stride-1 convolutions use Winograd's algorithm where it is faster (x86: onyx's own
  // F(2x2, 3x3) on any ISA, oneDNN's with AVX-512): 1.1-2x the speed, with float32 rounding errors
  // a few times those of direct summation (relative 1e-6 instead of 1e-7 on typical CNNs).
  // false: direct convolution only.
  bool winograd = true;
  // Precision of convolutions and matrix products: float32 (the default, exact as always), or
  // bfloat16 operands with float32 accumulation and outputs, where the CPU computes bfloat16
  // natively (AVX512-BF16 or AMX; elsewhere session creation fails). About 3 significant digits
  // per operand: outputs differ from float32 by ~1e-2 relative (docs/quantization.md).
  bool bf16 = false;
  // Let 1x1 convolutions and products with constant weights whose blocks of 16 output channels
  // are mostly zero (pruned models) run on block-sparse kernels (docs/sparsity.md).
  // false, or ONYX_SPARSE_KERNELS=0: dense kernels only.
  bool sparse_kernels = true;
  // The highest ISA level kernels may use: "scalar", "sse4", "avx2", "avx512", "avx512_vnni",
  // "avx512_bf16", "amx" (x86-64) or "neon", "dotprod", "i8mm", "sve", "sve2" (AArch64), or
  // "native". Empty: ONYX_ISA's, else the machine's. It can only lower ONYX_ISA's cap; a name
  // that is unknown or above what the CPU has fails session creation (docs/isa.md).
  std::string max_isa;
  // Let a run use fewer than intra_op_threads threads when recent runs of its plan finished
  // sooner that way: on a host whose other processes hold cores, a parallel region waits for
  // descheduled workers (docs/threading.md). Runs now and then try a neighbouring count of
  // intra_op_threads, /2, ..., 1. false, or ONYX_ADAPT_THREADS=0: always intra_op_threads.
  // The benchmark models' outputs are bit-identical at every count (docs/threading.md).
  bool adapt_threads = true;
  // Deterministic mode (docs/determinism.md): outputs bitwise identical across runs and across
  // thread counts (1, 2, 3, 4, ...) on one machine. Only kernels audited as thread-count invariant
  // run (others give way to the next kernel, ultimately the reference); kernels whose algorithm
  // depends on the thread count or on the shapes run before (oneDNN's Winograd, a first run on a
  // different product) use a fixed one. Session creation fails for a random operator without a
  // `seed` attribute and for bf16.
  bool deterministic = false;
  // Ceilings on tensor and arena bytes, node count, nesting and initializers, checked before
  // anything is allocated; zeros take the ONYX_MAX_* environment variables or the defaults
  // (onyx/limits.h).
  Limits limits;
  ModelEdits edits;
};

// Called after each step with every value it produced (for per-node dumps).
using ValueObserver = std::function<void(const std::string& name, const Value& value)>;

// One executed kernel step, reported to RunOptions::step_observer (the profiler's hook). The
// views point into the plan and are valid only during the call.
struct StepEvent {
  std::string_view node_name;
  std::string_view op_type;
  std::string_view domain;  // "" for ai.onnx
  std::string_view impl;    // the kernel implementation the planner picked
  std::chrono::steady_clock::time_point start;
  std::chrono::nanoseconds duration{0};  // the kernel's Run() alone
  std::thread::id thread;                // the thread that ran the step
  int depth = 0;                         // 0: main graph; n: inside n levels of subgraphs
  int fused_nodes = 0;                   // model nodes folded into this step by the planner
  std::vector<Shape> output_shapes;      // tensor outputs (empty shape for others)
};
using StepObserver = std::function<void(const StepEvent& event)>;

struct RunOptions {
  ValueObserver observer;      // optional
  StepObserver step_observer;  // optional; when empty, steps are not timed at all
  // Set to true from any thread to stop the run between operators and between Loop/Scan
  // iterations: Run() then fails with ErrorCode::kCancelled ("run cancelled") and the session
  // stays usable. Not owned; null: not cancellable this way.
  const std::atomic<bool>* terminate = nullptr;
  // Stops the run the same way once it has taken this long; 0: no limit.
  int64_t timeout_ms = 0;
  // Run on at most this many threads (and without the session's adaptive choice); 0: the
  // session's intra_op_threads, or fewer when SessionOptions::adapt_threads finds that faster.
  int max_threads = 0;
  // Caller memory for graph outputs (name -> a tensor borrowing the caller's buffer; not owned).
  // The kernel that makes such an output writes it there when it allocates exactly that element
  // type and shape and the buffer is 64-byte aligned (as onyx's own buffers, which kernels may
  // assume); the returned Value then borrows the caller's buffer. Otherwise the output is made as
  // usual (the caller copies it). Not for string tensors.
  const std::map<std::string, Tensor>* output_buffers = nullptr;
};

struct IoInfo {
  std::string name;
  TypeInfo type;  // element type and symbolic shape as the model declares them
};

using NamedValues = std::vector<std::pair<std::string, Value>>;

// How a session's shape specialisations stand (docs/dynamic_shapes.md): one plan per distinct set
// of input shapes, in a cache bounded by Limits::max_shape_plans and max_shape_plan_bytes.
struct ShapePlanStats {
  size_t plans = 0;       // plans cached now (the one for the declared shapes included)
  size_t plan_bytes = 0;  // shape-specific constants they hold
  size_t builds = 0;      // plans built for new input shapes since creation
  size_t hits = 0;        // runs that found their plan cached, or being built by another run
  size_t evictions = 0;   // plans dropped for the limits
  size_t generic_runs =
      0;  // runs of a new shape on the shape-generic plan (Limits::specialize_after_runs)
  size_t packed_weight_bytes = 0;    // weights in kernels' layouts: one copy for all plans
  size_t shared_constant_bytes = 0;  // constants derived from weights: one copy for all plans
  size_t free_arena_bytes = 0;       // run arenas kept for the next runs
};

class Session;
namespace testing {
// Tests only: `hook` runs on the thread that builds a plan for a new input-shape signature,
// before it builds (tests/engine/shape_plan_test.cc uses it to hold a build open).
void SetBeforePlanBuild(const Session& session, std::function<void(const std::string&)> hook);
}  // namespace testing

class Session {
 public:
  // Loads, validates and plans a model file. Throws onyx::Error with a message naming the model,
  // the node and the input when anything is wrong or unsupported.
  explicit Session(const std::string& path, SessionOptions options = {});
  // From serialized ModelProto bytes (external data is not available then).
  static Session FromBytes(const std::string& bytes, SessionOptions options = {});
  // Non-throwing creation.
  static StatusOr<Session> Create(const std::string& path, SessionOptions options = {});
  static StatusOr<Session> CreateFromBytes(const std::string& bytes, SessionOptions options = {});

  // Graph inputs the caller may feed (initializer-backed ones included, IR < 4) and outputs.
  const std::vector<IoInfo>& inputs() const;
  const std::vector<IoInfo>& outputs() const;
  // Inputs that must be fed (no initializer default).
  std::vector<std::string> required_inputs() const;

  // Runs the model. Feeds are checked (names, kinds, element types, ranks, known dims) before any
  // kernel runs. Returns the graph outputs in declaration order. Thread-safe. Throws onyx::Error.
  NamedValues Run(const NamedValues& feeds, const RunOptions& options = {}) const;
  // Same, reporting errors as a Status.
  Status Run(const NamedValues& feeds, const RunOptions& options, NamedValues* outputs) const;

  // The plan for the given input shapes (missing inputs: declared shape, symbolic dims = 1):
  // a readable schedule or a JSON object (nodes, schedule, arena_bytes, no_reuse_bytes,
  // max_live_bytes).
  // `why`: the text lists under each step the impls passed over and why (the JSON always does).
  StatusOr<std::string> DescribePlan(const std::map<std::string, Shape>& shapes, bool json,
                                     bool why = false) const;
  // The plan made at creation for the declared input types, which new input shapes run on
  // (docs/dynamic_shapes.md), and whether they do.
  std::string DescribeGenericPlan(bool json) const;

  // Model facts for `onyx info`.
  int64_t ir_version() const;
  std::map<std::string, int64_t> opsets() const;
  std::map<std::string, int> operator_counts() const;  // "domain:Op" → count (subgraphs included)
  std::string model_name() const;
  // The ceilings in force (SessionOptions::limits resolved against the environment).
  const Limits& limits() const;
  // Threads the session runs kernels on (SessionOptions::intra_op_threads resolved).
  int intra_op_threads() const;
  // Runs so far by the thread count they ran at (adapt_threads), all plans together.
  std::map<int, int64_t> runs_by_threads() const;
  // False when a node (subgraphs included) uses a random operator, seeded or not: outputs then
  // vary by run, or (seeded) differ from other runtimes' generators. Not the same thing as
  // SessionOptions::deterministic, the thread-count contract, which deterministic_mode() reports.
  bool deterministic() const;
  // Whether the session runs in deterministic mode (SessionOptions::deterministic).
  bool deterministic_mode() const;
  // Bytes of weights held only in kernels' packed layouts: a model whose inputs all have static
  // shapes is planned once, and its original weight values are released after packing.
  size_t released_weight_bytes() const;
  ShapePlanStats shape_plan_stats() const;

  struct Impl;
  friend void testing::SetBeforePlanBuild(const Session&, std::function<void(const std::string&)>);

 private:
  static StatusOr<Session> CreateFromModel(ir::Model model, SessionOptions options);
  explicit Session(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

// Reports which nodes of a model onyx cannot run, without throwing (for `onyx info`).
StatusOr<std::vector<std::string>> UnsupportedNodes(const std::string& path);

}  // namespace onyx
