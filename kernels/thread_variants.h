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

// `create` wrapped so that the kernels it makes for more than one thread serve runs asking for
// fewer (KernelContext::intra_op_threads) with a copy made by `create` for that many, on the first
// such run. The copies take the same constants (held by the wrapper) and find their packed
// weights in KernelCreateInfo::weights. Kernels made for one thread are returned as they are.
CreateWithInfoFn WithThreadVariants(CreateWithInfoFn create);

}  // namespace onyx::kernels
