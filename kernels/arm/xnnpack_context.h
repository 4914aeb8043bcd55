// What the XNNPACK kernels share: the library's one-time initialisation, thread pools sized by
// the run's intra-op thread count, operator ownership and status messages.
#pragma once

#include <xnnpack.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/kernel.h"
#include "kernels/node_view.h"
#include "kernels/op_registry.h"
#include "kernels/reference/fused.h"
#include "onyx/status.h"

namespace onyx::kernels::arm {

// xnn_initialize, once per process. An error (a CPU XNNPACK does not support) makes every
// XNNPACK kernel refuse its nodes, so the next kernel takes them.
Status XnnpackReady(const NodeView& node);

// The pthreadpool for runs on `threads` threads, made on first use and kept for the process
// (one per distinct count: the session's, and the lower counts its adaptive choice may pick);
// nullptr for one thread (XNNPACK then runs on the caller's thread).
pthreadpool_t XnnpackPool(int threads);

// The level XNNPACK's own dispatch (cpuinfo) runs at: NEON on AArch64; on x86-64 the machine's
// level up to AVX-512 (its best f32 kernels), which ONYX_ISA cannot lower.
IsaLevel XnnpackLevel();

struct OperatorDeleter {
  void operator()(xnn_operator_t op) const { xnn_delete_operator(op); }
};
using XnnOperator = std::unique_ptr<xnn_operator, OperatorDeleter>;

// An operator with the lock its setup and run take: setup writes the operator's input and
// output pointers, so runs on several threads take turns.
struct SharedOperator {
  XnnOperator op;
  mutable std::mutex mu;
};

// The operator `create` makes from constant weights `w`, shared through the session's weight
// cache (KernelCreateInfo::weights), keyed by W's buffer and `key` (everything else the operator
// depends on): XNNPACK's operators take the input size at setup, so every shape specialisation
// of a plan reuses one operator and its packed weights. Without a cache, a private one.
StatusOr<std::shared_ptr<const SharedOperator>> ShareOperator(
    const NodeView& node, const KernelCreateInfo& info, const Tensor& w, const std::string& key,
    const std::function<xnn_status(xnn_operator_t*)>& create, const char* what);

// A key part for a constant (a bias) that the weight cache does not hold alive: its bytes.
std::string ContentKey(const Tensor* t);

// An XNNPACK kernel's impl; its ISA is the first SIMD level, dispatched by XNNPACK itself
// (XnnpackLevel).
KernelImpl XnnpackImpl(
    const std::string& name,
    std::function<Status(const NodeView&, const std::vector<TypeInfo>&)> supports,
    CreateWithInfoFn create);

// Runs a product-like operator (convolution, fully connected) into Y with onyx's epilogue:
// Y = act(op(X) + Z) for the optional residual Z (null when absent). `setup` sets the operator's
// input and output pointers (output `out`) on `pool`; then the operator runs, under its lock.
// The planner may give Y the dying Z's buffer: the operator then writes a scratch buffer. The
// activation runs after the operator when there is a residual or `epilogue` (one XNNPACK's clamp
// cannot express).
Status RunWithEpilogue(KernelContext& ctx, const SharedOperator& op, Tensor& y, const float* z,
                       const FusedActivation& act, bool epilogue,
                       const std::function<xnn_status(float* out, pthreadpool_t pool)>& setup,
                       const char* what);

// Maps an XNNPACK status to onyx's: creation errors are kUnsupported (the next kernel takes
// the node), others name the node and `what` failed.
Status FromXnnStatus(const NodeView& node, xnn_status s, const char* what, bool creating);

}  // namespace onyx::kernels::arm
