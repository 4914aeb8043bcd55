// The CPU-feature probe (cpuid + XCR0 on x86-64, getauxval on Linux AArch64, sysctl on Apple
// silicon) and the ISA levels.
#include "kernels/cpu_features.h"

#include <cstdlib>

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#define ONYX_ISA_X86 1
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#define ONYX_ISA_ARM 1
#define ONYX_ISA_APPLE 1
#elif defined(__aarch64__)
#include <sys/auxv.h>
#define ONYX_ISA_ARM 1
#endif

namespace onyx::kernels {

namespace {

#if ONYX_ISA_X86
struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};
Regs CpuId(unsigned leaf, unsigned sub) {
  Regs r;
  if (__get_cpuid_max(leaf & 0x80000000u, nullptr) >= leaf)
    __cpuid_count(leaf, sub, r.a, r.b, r.c, r.d);
  return r;
}
bool Bit(unsigned v, int i) {
  return (v >> i) & 1u;
}

CpuFeatures Probe() {
  CpuFeatures f;
  const Regs l1 = CpuId(1, 0);
  f.ssse3 = Bit(l1.c, 9);
  f.fma = Bit(l1.c, 12);
  f.sse4_1 = Bit(l1.c, 19);
  f.sse4_2 = Bit(l1.c, 20);
  f.popcnt = Bit(l1.c, 23);
  f.avx = Bit(l1.c, 28);
  f.f16c = Bit(l1.c, 29);
  // XCR0 (xgetbv 0), readable only when the OS set CR4.OSXSAVE (cpuid 1 ecx bit 27).
  uint64_t xcr0 = 0;
  if (Bit(l1.c, 27)) {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<uint64_t>(hi) << 32) | lo;
  }
  f.os_avx = (xcr0 & 0x6) == 0x6;                   // XMM and YMM state
  f.os_avx512 = f.os_avx && (xcr0 & 0xe0) == 0xe0;  // opmask, ZMM0-15 upper halves, ZMM16-31
  f.os_amx = (xcr0 & 0x60000) == 0x60000;           // XTILECFG and XTILEDATA
  const Regs l7 = CpuId(7, 0);
  f.bmi1 = Bit(l7.b, 3);
  f.avx2 = Bit(l7.b, 5);
  f.bmi2 = Bit(l7.b, 8);
  f.avx512f = Bit(l7.b, 16);
  f.avx512dq = Bit(l7.b, 17);
  f.avx512cd = Bit(l7.b, 28);
  f.avx512bw = Bit(l7.b, 30);
  f.avx512vl = Bit(l7.b, 31);
  f.avx512vbmi = Bit(l7.c, 1);
  f.avx512_vbmi2 = Bit(l7.c, 6);
  f.avx512_vnni = Bit(l7.c, 11);
  f.amx_bf16 = Bit(l7.d, 22);
  f.avx512_fp16 = Bit(l7.d, 23);
  f.amx_tile = Bit(l7.d, 24);
  f.amx_int8 = Bit(l7.d, 25);
  const Regs l71 = CpuId(7, 1);
  f.avx_vnni = Bit(l71.a, 4);
  f.avx512_bf16 = Bit(l71.a, 5);
  f.lzcnt = Bit(CpuId(0x80000001u, 0).c, 5);
  return f;
}
#elif ONYX_ISA_APPLE
// macOS names each feature hw.optional.<...> = 1; absent names (older systems) read as 0.
bool SysctlFlag(const char* name) {
  int value = 0;
  size_t size = sizeof(value);
  return sysctlbyname(name, &value, &size, nullptr, 0) == 0 && value != 0;
}

CpuFeatures Probe() {
  CpuFeatures f;
  f.asimd = true;  // every Apple silicon core has Advanced SIMD
  f.asimddp = SysctlFlag("hw.optional.arm.FEAT_DotProd");
  f.i8mm = SysctlFlag("hw.optional.arm.FEAT_I8MM");
  f.bf16 = SysctlFlag("hw.optional.arm.FEAT_BF16");
  f.sme = SysctlFlag("hw.optional.arm.FEAT_SME");
  // No SVE outside streaming mode on Apple cores (M4's SME has streaming SVE only).
  return f;
}
#elif ONYX_ISA_ARM
CpuFeatures Probe() {
  CpuFeatures f;
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  // Bit numbers of Linux's arch/arm64/include/uapi/asm/hwcap.h, spelled out so that older
  // headers still build.
  f.asimd = (hw >> 1) & 1;
  f.asimddp = (hw >> 20) & 1;
  f.sve = (hw >> 22) & 1;
  f.sve2 = (hw2 >> 1) & 1;
  f.i8mm = (hw2 >> 13) & 1;
  f.bf16 = (hw2 >> 14) & 1;
  f.sme = (hw2 >> 23) & 1;
  return f;
}
#else
CpuFeatures Probe() {
  return {};
}
#endif

const char* const kEnvName = "ONYX_ISA";

}  // namespace

std::vector<std::pair<std::string, bool>> CpuFeatures::List() const {
#if ONYX_ISA_X86
  return {{"ssse3", ssse3},
          {"sse4_1", sse4_1},
          {"sse4_2", sse4_2},
          {"popcnt", popcnt},
          {"avx", avx},
          {"avx2", avx2},
          {"fma", fma},
          {"f16c", f16c},
          {"bmi1", bmi1},
          {"bmi2", bmi2},
          {"lzcnt", lzcnt},
          {"avx512f", avx512f},
          {"avx512cd", avx512cd},
          {"avx512bw", avx512bw},
          {"avx512dq", avx512dq},
          {"avx512vl", avx512vl},
          {"avx512vbmi", avx512vbmi},
          {"avx512_vbmi2", avx512_vbmi2},
          {"avx512_vnni", avx512_vnni},
          {"avx512_bf16", avx512_bf16},
          {"avx512_fp16", avx512_fp16},
          {"avx_vnni", avx_vnni},
          {"amx_tile", amx_tile},
          {"amx_int8", amx_int8},
          {"amx_bf16", amx_bf16},
          {"os_avx", os_avx},
          {"os_avx512", os_avx512},
          {"os_amx", os_amx}};
#elif ONYX_ISA_ARM
  return {{"asimd", asimd}, {"asimddp", asimddp}, {"i8mm", i8mm}, {"bf16", bf16},
          {"sve", sve},     {"sve2", sve2},       {"sme", sme}};
#else
  return {};
#endif
}

const CpuFeatures& Cpu() {
  static const CpuFeatures cpu = Probe();
  return cpu;
}

const char* IsaName(IsaLevel level) {
  switch (level) {
    case IsaLevel::kScalar:
      return "scalar";
    case IsaLevel::kSse4:
      return "sse4";
    case IsaLevel::kAvx2:
      return "avx2";
    case IsaLevel::kAvx512:
      return "avx512";
    case IsaLevel::kAvx512Vnni:
      return "avx512_vnni";
    case IsaLevel::kAvx512Bf16:
      return "avx512_bf16";
    case IsaLevel::kAmx:
      return "amx";
    case IsaLevel::kNeon:
      return "neon";
    case IsaLevel::kDotprod:
      return "dotprod";
    case IsaLevel::kI8mm:
      return "i8mm";
    case IsaLevel::kSve:
      return "sve";
    case IsaLevel::kSve2:
      return "sve2";
  }
  return "?";
}

const std::vector<IsaLevel>& ArchIsaLevels() {
  using L = IsaLevel;
#if ONYX_ISA_X86
  static const std::vector<IsaLevel> levels = {L::kScalar,     L::kSse4,       L::kAvx2, L::kAvx512,
                                               L::kAvx512Vnni, L::kAvx512Bf16, L::kAmx};
#elif ONYX_ISA_ARM
  static const std::vector<IsaLevel> levels = {L::kScalar, L::kNeon, L::kDotprod,
                                               L::kI8mm,   L::kSve,  L::kSve2};
#else
  static const std::vector<IsaLevel> levels = {L::kScalar};
#endif
  return levels;
}

int IsaRank(IsaLevel level) {
  const auto& levels = ArchIsaLevels();
  for (size_t i = 0; i < levels.size(); ++i)
    if (levels[i] == level) return static_cast<int>(i);
  return static_cast<int>(levels.size());
}

IsaLevel FirstSimdLevel() {
  const auto& levels = ArchIsaLevels();
  return levels.size() > 1 ? levels[1] : levels[0];
}

bool IsaLevelHas(const CpuFeatures& c, IsaLevel level) {
  using L = IsaLevel;
  switch (level) {
    case L::kScalar:
      return true;
    // x86-64: each level is the one below plus its own features.
    case L::kSse4:
      return c.ssse3 && c.sse4_1 && c.sse4_2 && c.popcnt;
    case L::kAvx2:
      return IsaLevelHas(c, L::kSse4) && c.avx && c.avx2 && c.fma && c.f16c && c.bmi1 && c.bmi2 &&
             c.lzcnt && c.os_avx;
    case L::kAvx512:
      return IsaLevelHas(c, L::kAvx2) && c.avx512f && c.avx512cd && c.avx512bw && c.avx512dq &&
             c.avx512vl && c.os_avx512;
    case L::kAvx512Vnni:
      return IsaLevelHas(c, L::kAvx512) && c.avx512_vnni;
    case L::kAvx512Bf16:
      return IsaLevelHas(c, L::kAvx512Vnni) && c.avx512_bf16;
    case L::kAmx:
      return IsaLevelHas(c, L::kAvx512Bf16) && c.amx_tile && c.amx_int8 && c.amx_bf16 && c.os_amx;
    // AArch64.
    case L::kNeon:
      return c.asimd;
    case L::kDotprod:
      return c.asimd && c.asimddp;
    case L::kI8mm:
      return IsaLevelHas(c, L::kDotprod) && c.i8mm;
    case L::kSve:
      return IsaLevelHas(c, L::kI8mm) && c.sve;
    case L::kSve2:
      return IsaLevelHas(c, L::kSve) && c.sve2;
  }
  return false;
}

IsaLevel MachineIsa() {
  static const IsaLevel machine = [] {
    IsaLevel best = IsaLevel::kScalar;
    for (IsaLevel l : ArchIsaLevels())
      if (IsaLevelHas(Cpu(), l)) best = l;
    return best;
  }();
  return machine;
}

StatusOr<IsaLevel> ParseIsaLevel(const std::string& name, const std::string& what) {
  return ParseIsaLevel(name, what, MachineIsa());
}

StatusOr<IsaLevel> ParseIsaLevel(const std::string& name, const std::string& what,
                                 IsaLevel machine) {
  if (name == "native") return machine;
  std::string names;
  for (IsaLevel l : ArchIsaLevels()) names += StrCat(names.empty() ? "" : ", ", IsaName(l));
  for (int i = 0; i <= static_cast<int>(IsaLevel::kSve2); ++i) {
    const IsaLevel l = static_cast<IsaLevel>(i);
    if (name != IsaName(l)) continue;
    if (IsaRank(l) >= static_cast<int>(ArchIsaLevels().size()))
      return InvalidArgument(what, "=", name, ": not an ISA level of this architecture (", names,
                             ", or native)");
    if (!IsaAtMost(l, machine))
      return InvalidArgument(what, "=", name, ": this CPU supports up to ", IsaName(machine),
                             " (onyx info --cpu lists its features); a cap above it is refused "
                             "rather than lowered");
    return l;
  }
  return InvalidArgument(what, "=", name, ": unknown ISA level; expected one of ", names,
                         ", or native");
}

StatusOr<IsaLevel> EnvIsaCap() {
  static const StatusOr<IsaLevel> cap = []() -> StatusOr<IsaLevel> {
    const char* v = std::getenv(kEnvName);
    if (!v || !*v) return MachineIsa();
    return ParseIsaLevel(v, kEnvName);
  }();
  return cap;
}

IsaLevel ProcessIsaCap() {
  const StatusOr<IsaLevel> env = EnvIsaCap();
  return env.ok() ? env.value() : MachineIsa();
}

StatusOr<IsaLevel> SessionIsaCap(const std::string& option) {
  ONYX_ASSIGN_OR_RETURN(IsaLevel cap, EnvIsaCap());
  if (option.empty()) return cap;
  ONYX_ASSIGN_OR_RETURN(IsaLevel own, ParseIsaLevel(option, "max_isa"));
  return IsaMin(cap, own);
}

}  // namespace onyx::kernels
