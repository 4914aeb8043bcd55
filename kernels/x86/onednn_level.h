// oneDNN's ISA under the process's cap, without oneDNN's headers (for `onyx info --cpu`).
#pragma once

#include "kernels/cpu_features.h"

namespace onyx::kernels::x86 {

// Caps oneDNN's ISA at ProcessIsaCap() (ONYX_ISA), once, before anything else asks oneDNN: the
// library takes a cap only before its first primitive or ISA query.
void CapOnednn();
// The level oneDNN's kernels run at in this process (its effective ISA, after the cap).
IsaLevel OnednnLevel();

}  // namespace onyx::kernels::x86
