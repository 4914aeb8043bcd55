// `onyx info --cpu`: the CPU-feature probe, the ISA levels and the cap in force.
#pragma once

#include <string>

namespace onyx::cli {

std::string CpuReport();

}  // namespace onyx::cli
