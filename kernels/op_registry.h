// The operator registry: (domain, op type, opset range) → OpDef with its shape function and its
// ordered kernel implementations (most specialised first, reference last).
#pragma once

#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/kernel.h"

namespace onyx::kernels {

constexpr int64_t kLatestOpset = 1000;

// The ISA an implementation runs at: the lowest level it needs, and for kernels on a library
// that picks its code at run time (Highway, oneDNN) the level that library dispatches to in this
// process (capped by ONYX_ISA). The planner skips impls whose RunsAt is above the session's cap.
struct KernelIsa {
  IsaLevel min = IsaLevel::kScalar;
  IsaLevel (*dispatch)() = nullptr;  // null: runs at `min` exactly
  const char* library = "";          // "highway", "onednn": shown by `onyx plan --why`
  IsaLevel RunsAt() const { return dispatch ? IsaMax(min, dispatch()) : min; }
  bool unset() const { return min == IsaLevel::kScalar && !dispatch; }
};

// One implementation of an op. `supports` says why it cannot take a node (empty Status = can).
struct KernelImpl {
  std::string name;  // "<op>_<dtype>_<isa>", printed by `onyx plan`
  std::function<Status(const NodeView&, const std::vector<TypeInfo>&)> supports;  // null = any
  CreateFn create;
  CreateWithInfoFn create_with_info;  // used instead of `create` when set
  // create_with_info reads KernelCreateInfo::sparse_constants: sparse initializers this op reads
  // keep their COO form until the plan is built (planner::DensifySparseInitializers).
  bool reads_sparse_constants = false;
  // Audited to compute every output element the same way at every thread count (no partial
  // results combined in an order the thread count decides): set by MarkThreadInvariantKernels
  // from the audit table (kernels/thread_invariance.cc, docs/determinism.md). Deterministic mode
  // runs only such impls; a new one is refused there until it is audited.
  bool thread_invariant = false;
  // Default (scalar): a reference or plain C++ kernel.
  KernelIsa isa;
};

struct ActivationRule;  // kernels/activation_rules.h

// How the layout pass (planner/layout.cc) may run an ai.onnx op on channels-last storage as it is.
enum class LayoutTrait {
  kNone,
  kUnaryElementwise,      // Y[i] = f(X[i]); other inputs are scalars (Clip's bounds)
  kBroadcastElementwise,  // Y[i] from element i of each input after numpy broadcasting
  kConcatAxis,            // joins its inputs along attribute `axis`, remapped to the stored dim
};

struct OpDef;

// One line of an operator's kernel list (kernels/kernel_lists.cc): makes the impl for each
// definition (opset range) of the operator it serves. Most wrap that definition's reference
// kernel (its last impl) as the fallback for the run-time cases they do not cover.
struct KernelEntry {
  std::function<KernelImpl(const OpDef& def)> make;
  int64_t since = 1;  // the opsets it serves: definitions overlapping [since, until]
  int64_t until = kLatestOpset;
  // An impl that needs nothing from the definition (the oneDNN kernels, the convolutions).
  KernelEntry(KernelImpl impl);  // NOLINT(google-explicit-constructor): list lines stay short
  explicit KernelEntry(std::function<KernelImpl(const OpDef&)> make_impl, int64_t since_opset = 1,
                       int64_t until_opset = kLatestOpset);
};

struct OpDef {
  std::string domain;  // "" for ai.onnx
  std::string op_type;
  int64_t since = 1;              // first opset version this definition covers
  int64_t until = kLatestOpset;   // last opset version it covers (inclusive)
  InferFn infer = nullptr;        // null: output types unknown until run time
  std::vector<KernelImpl> impls;  // ordered
  bool deterministic = true;      // false for random ops: never constant-folded
  // Output 0 may be written over input `inplace_input`'s buffer (same dtype and size) because
  // the kernel reads input element i before it writes output element i; -1 = never.
  int inplace_input = -1;
  LayoutTrait layout = LayoutTrait::kNone;
  // The activation table's row when the op is one of its activations (fusable or not).
  const ActivationRule* activation = nullptr;
};

// The definitions one AddRanges call made, to declare their traits where the op is registered:
//   AddRanges(r, "Abs", {1}, InferUnary, AbsRef).InPlace().Layout(LayoutTrait::kUnaryElementwise);
class OpDefs {
 public:
  explicit OpDefs(std::vector<OpDef*> defs) : defs_(std::move(defs)) {}
  // Output 0 may take input `input`'s buffer (OpDef::inplace_input).
  OpDefs& InPlace(int input = 0);
  OpDefs& Layout(LayoutTrait layout);
  OpDefs& Activation(const ActivationRule* rule);
  const std::vector<OpDef*>& defs() const { return defs_; }

 private:
  std::vector<OpDef*> defs_;
};

class OpRegistry {
 public:
  // The process-wide registry, filled once by RegisterAllOps() in a fixed order.
  static const OpRegistry& Global();

  // Adds a definition covering opsets [since, until]. A stateless reference kernel:
  //   r.Add("", "Relu", 6, kLatestOpset, InferSameAsInput0, ReluRef);
  OpDef& Add(const std::string& domain, const std::string& op_type, int64_t since, int64_t until,
             InferFn infer, KernelFn reference_fn, const std::string& impl_name = "");
  OpDef& AddDef(OpDef def);

  // The definition covering `opset` (the model's import for the domain), or nullptr.
  const OpDef* Find(const std::string& domain, const std::string& op_type, int64_t opset) const;
  // Every opset range registered for an op, for error messages ("found opsets 13..21").
  std::vector<std::pair<int64_t, int64_t>> Ranges(const std::string& domain,
                                                  const std::string& op_type) const;
  std::vector<const OpDef*> All() const;
  // Sets KernelImpl::thread_invariant on every impl that `invariant(impl name, is last)` accepts
  // (the last impl of a definition is its reference kernel).
  void MarkImpls(const std::function<bool(const std::string&, bool)>& invariant);
  // Sets the operator's kernel list: every definition of (domain, op_type) gets, in front of its
  // reference kernel and in this order, the entries that serve its opsets. Each `supports` must
  // reject what its kernel cannot run exactly (dtype, attributes), so the reference kernel stays
  // the fallback. One list per operator: a second list, or a list for an operator that is not
  // registered, is a registration error (CheckKernelLists reports it).
  void SetKernels(const std::string& domain, const std::string& op_type,
                  std::vector<KernelEntry> list);
  // Removes every impl but the reference kernels (each definition's last) that `drop` accepts;
  // returns how many. For tests that plan with another architecture's kernel set.
  int RemoveImpls(const std::function<bool(const KernelImpl&)>& drop);
  // Tests only (planted kernels): puts `impl` in front of every definition of (domain, op_type)
  // overlapping [since, until]. Returns how many definitions received it.
  int PrependImpl(const std::string& domain, const std::string& op_type, KernelImpl impl,
                  int64_t since = 1, int64_t until = kLatestOpset);
  // Registration errors found so far (kernel lists set twice or for unknown operators).
  const std::vector<std::string>& registration_errors() const { return registration_errors_; }

 private:
  std::map<std::pair<std::string, std::string>, std::vector<std::unique_ptr<OpDef>>> ops_;
  std::vector<std::string> registration_errors_;
  std::set<std::pair<std::string, std::string>> listed_;  // operators with a kernel list
};

// Highway's kernels (kernels/common): at least the first SIMD level, dispatched up to the best
// Highway target left enabled (kernels/common/highway_dispatch.cc).
KernelIsa HighwayIsa();

// Registers one ai.onnx definition per semantic range of `op`: `sinces` are the opsets where its
// behaviour changed, each range ending where the next begins (the last at kLatestOpset). Every
// range gets the same infer function and reference kernel, which branch on the node's opset.
OpDefs AddRanges(OpRegistry& r, const char* op, std::initializer_list<int64_t> sinces,
                 InferFn infer, KernelFn fn);

// Implemented in kernels/ops/register_all.cc: calls every family's Register function (the
// definitions with their reference kernels) in order, then SetKernelLists.
void RegisterAllOps(OpRegistry& r);
// Every operator's ordered fast kernels (kernels/kernel_lists.cc).
void SetKernelLists(OpRegistry& r);
// Marks the impls the determinism audit found thread-count invariant
// (kernels/thread_invariance.cc); called last by RegisterAllOps. Returns the audit table's names
// that no impl has (stale entries).
std::vector<std::string> MarkThreadInvariantKernels(OpRegistry& r);
// The audit table itself: impl names and why each is invariant (docs/determinism.md lists them).
const std::vector<std::pair<std::string, std::string>>& ThreadInvariantKernels();

}  // namespace onyx::kernels
