// A oneDNN kernel remade for runs on fewer threads than its plan was made for. oneDNN divides a
// primitive's work for the team size it sees when the primitive is created, so a run that the
// session gives fewer threads (engine/thread_choice.h) needs primitives created for that many.
#pragma once

#include <memory>
#include <vector>

#include "kernels/kernel.h"
#include "kernels/node_view.h"

namespace onyx::kernels::x86 {

// `kernel`, made by `create` for `info.threads` threads, wrapped so that a run asking for fewer
// (KernelContext::intra_op_threads) uses a copy made by `create` for that many, on its first such
// run. The copies take the same constants (held here) and find their packed weights in
// info.weights. Kernels made for one thread are returned as they are.
std::unique_ptr<Kernel> WithThreadVariants(std::unique_ptr<Kernel> kernel, const NodeView& node,
                                           const std::vector<TypeInfo>& types,
                                           const KernelCreateInfo& info, CreateWithInfoFn create);

}  // namespace onyx::kernels::x86
