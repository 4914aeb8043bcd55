// What this CPU (and its OS) can run, probed once, and the ISA levels kernels are chosen by:
// ordered sets of features, each level implying every level below it. ONYX_ISA and
// SessionOptions::max_isa cap the level (docs/isa.md).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "onyx/status.h"

namespace onyx::kernels {

// Feature flags, named as Linux's /proc/cpuinfo names them. Only the ones of this architecture
// are ever true.
struct CpuFeatures {
  // x86-64. os_* say the OS saves that register state (XCR0), without which the instructions
  // fault even when cpuid lists them.
  bool ssse3 = false, sse4_1 = false, sse4_2 = false, popcnt = false;
  bool avx = false, avx2 = false, fma = false, f16c = false, bmi1 = false, bmi2 = false,
       lzcnt = false;
  bool avx512f = false, avx512cd = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512vbmi = false, avx512_vbmi2 = false, avx512_vnni = false, avx512_bf16 = false,
       avx512_fp16 = false, avx_vnni = false;
  bool amx_tile = false, amx_int8 = false, amx_bf16 = false;
  bool os_avx = false, os_avx512 = false, os_amx = false;
  // AArch64 (getauxval HWCAP / HWCAP2).
  bool asimd = false, asimddp = false, i8mm = false, bf16 = false, sve = false, sve2 = false,
       sme = false;

  // (name, present) for every flag of this architecture, in the order above.
  std::vector<std::pair<std::string, bool>> List() const;
};

// The process's CPU, probed on first use.
const CpuFeatures& Cpu();

// x86-64: scalar < sse4 < avx2 < avx512 < avx512_vnni < avx512_bf16 < amx.
// AArch64: scalar < neon < dotprod < i8mm < sve < sve2. Levels of the other architecture never
// apply. What each level needs is IsaLevelHas (cpu_features.cc) and docs/isa.md.
enum class IsaLevel : int {
  kScalar,
  kSse4,
  kAvx2,
  kAvx512,
  kAvx512Vnni,
  kAvx512Bf16,
  kAmx,
  kNeon,
  kDotprod,
  kI8mm,
  kSve,
  kSve2,
};

const char* IsaName(IsaLevel level);
// This architecture's levels, lowest first.
const std::vector<IsaLevel>& ArchIsaLevels();
// Position in ArchIsaLevels (a level of another architecture: past the end).
int IsaRank(IsaLevel level);
inline bool IsaAtMost(IsaLevel a, IsaLevel cap) {
  return IsaRank(a) <= IsaRank(cap);
}
inline IsaLevel IsaMin(IsaLevel a, IsaLevel b) {
  return IsaRank(a) <= IsaRank(b) ? a : b;
}
inline IsaLevel IsaMax(IsaLevel a, IsaLevel b) {
  return IsaRank(a) >= IsaRank(b) ? a : b;
}
// The lowest level with vector registers (sse4 / neon): where Highway and oneDNN kernels start.
IsaLevel FirstSimdLevel();

// Whether `cpu` has every feature `level` needs.
bool IsaLevelHas(const CpuFeatures& cpu, IsaLevel level);
// The highest level this CPU has.
IsaLevel MachineIsa();

// A level by name (IsaName's, or "native" for MachineIsa()); `what` names the setting in
// errors. An unknown name, a level of another architecture, or one above MachineIsa() is an
// InvalidArgument (onyx never promises a level the CPU cannot run: no silent clamping).
StatusOr<IsaLevel> ParseIsaLevel(const std::string& name, const std::string& what);
// Same, against the levels of `machine` instead of this CPU's (tests).
StatusOr<IsaLevel> ParseIsaLevel(const std::string& name, const std::string& what,
                                 IsaLevel machine);

// The cap from the ONYX_ISA environment variable (MachineIsa() when unset or empty), read once.
StatusOr<IsaLevel> EnvIsaCap();
// The level Highway's and oneDNN's run-time dispatch are limited to in this process: ONYX_ISA's,
// or the machine's when ONYX_ISA is unset or invalid (then every session fails to create).
IsaLevel ProcessIsaCap();
// A session's cap: the lowest of the machine, ONYX_ISA and `option` (SessionOptions::max_isa,
// "" = none). A session can lower the process's cap, never raise it.
StatusOr<IsaLevel> SessionIsaCap(const std::string& option);

}  // namespace onyx::kernels
