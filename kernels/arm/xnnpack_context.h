// What the XNNPACK kernels share: the library's one-time initialisation, thread pools sized by
// the run's intra-op thread count, operator ownership and status messages.
#pragma once

#include <xnnpack.h>

#include <memory>
#include <string>

#include "kernels/cpu_features.h"
#include "kernels/node_view.h"
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

// Maps an XNNPACK status to onyx's: creation errors are kUnsupported (the next kernel takes
// the node), others name the node and `what` failed.
Status FromXnnStatus(const NodeView& node, xnn_status s, const char* what, bool creating);

}  // namespace onyx::kernels::arm
