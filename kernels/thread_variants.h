// A kernel remade for runs on fewer threads than its plan was made for, for kernels that divide
// their work for KernelCreateInfo::threads when they are created: oneDNN's primitives (the team
// size they see at creation) and onyx's Winograd convolution (blocks a multiple of the threads).
// A run that the session gives fewer threads (engine/thread_choice.h) needs kernels made for that
// many.
#pragma once

#include <memory>
#include <vector>

#include "kernels/kernel.h"
#include "kernels/node_view.h"

namespace onyx::kernels {

// `kernel`, made by `create` for `info.threads` threads, wrapped so that a run asking for fewer
// (KernelContext::intra_op_threads) uses a copy made by `create` for that many, on its first such
// run. The copies take the same constants (held here) and find their packed weights in
// info.weights. Kernels made for one thread are returned as they are.
std::unique_ptr<Kernel> WithThreadVariants(std::unique_ptr<Kernel> kernel, const NodeView& node,
                                           const std::vector<TypeInfo>& types,
                                           const KernelCreateInfo& info, CreateWithInfoFn create);

}  // namespace onyx::kernels
