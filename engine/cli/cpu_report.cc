// `onyx info --cpu`: what the probe found, which ISA levels that makes, the cap and where it
// comes from, and the level the run-time dispatching libraries (Highway, oneDNN) use under it.
#include "engine/cli/cpu_report.h"

#include <cstdlib>
#include <sstream>

#include "kernels/common/highway_dispatch.h"
#include "kernels/cpu_features.h"
#if defined(__x86_64__) || defined(_M_X64)
#include "kernels/x86/onednn_level.h"
#endif

namespace onyx::cli {

std::string CpuReport() {
  using namespace kernels;
  std::ostringstream os;
  os << "features:";
  for (const auto& [name, has] : Cpu().List())
    if (has) os << " " << name;
  os << "\nmissing:";
  for (const auto& [name, has] : Cpu().List())
    if (!has) os << " " << name;
  os << "\nlevels:";
  for (IsaLevel l : ArchIsaLevels())
    os << " " << IsaName(l) << (IsaLevelHas(Cpu(), l) ? "" : "(no)");
  os << "\nmachine: " << IsaName(MachineIsa()) << "\n";
  const char* env = std::getenv("ONYX_ISA");
  const StatusOr<IsaLevel> cap = EnvIsaCap();
  if (!cap.ok())
    os << "cap: error: " << cap.status().message() << "\n";
  else
    os << "cap: " << IsaName(cap.value()) << " ("
       << (env && *env ? StrCat("ONYX_ISA=", env) : std::string("the machine; ONYX_ISA unset"))
       << "; SessionOptions::max_isa / --max-isa may lower it per session)\n";
  os << "highway: " << IsaName(common::HighwayLevel()) << " (target " << common::HighwayTargetName()
     << ")\n";
#if defined(__x86_64__) || defined(_M_X64)
  os << "onednn: " << IsaName(x86::OnednnLevel()) << "\n";
#endif
  return os.str();
}

}  // namespace onyx::cli
