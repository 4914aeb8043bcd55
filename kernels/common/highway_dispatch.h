// Highway's run-time dispatch under the process's ISA cap (ONYX_ISA).
#pragma once

#include "kernels/cpu_features.h"

namespace onyx::kernels::common {

// Disables, for the whole process, the Highway targets above `cap`.
void CapHighway(IsaLevel cap);
// The level of the best Highway target left enabled (ONYX_ISA's cap applied on first call): what
// every Highway kernel runs at now.
IsaLevel HighwayLevel();
// That target's name ("AVX3", "AVX2", "EMU128", ...), for `onyx info --cpu`.
const char* HighwayTargetName();

}  // namespace onyx::kernels::common
