// Highway's run-time dispatch under the ISA cap: the targets above ProcessIsaCap() are disabled
// for the whole process (hwy::DisableTargets), so HWY_DYNAMIC_DISPATCH never picks them.
#include "kernels/common/highway_dispatch.h"

#include <hwy/targets.h>

#include "kernels/op_registry.h"

namespace onyx::kernels {

namespace common {

namespace {

// The ISA level a Highway target needs. Targets of other architectures never occur here.
IsaLevel TargetLevel(int64_t target) {
#if HWY_ARCH_X86
  if (target == HWY_AVX3_DL)
    return IsaLevel::kAvx512Vnni;  // + VBMI2, BITALG..., checked by Highway
  if (target == HWY_AVX3) return IsaLevel::kAvx512;
  if (target == HWY_AVX2) return IsaLevel::kAvx2;
  if (target == HWY_SSE4 || target == HWY_SSSE3) return IsaLevel::kSse4;
#elif HWY_ARCH_ARM_A64
  if (target == HWY_SVE2 || target == HWY_SVE2_128) return IsaLevel::kSve2;
  if (target == HWY_SVE || target == HWY_SVE_256) return IsaLevel::kSve;
  if (target == HWY_NEON) return IsaLevel::kNeon;
#endif
  return IsaLevel::kScalar;  // HWY_EMU128, HWY_SCALAR
}

// Every target Highway knows (HWY_TARGETS bits of this build and beyond), one bit at a time.
template <typename F>
void ForEachTarget(F f) {
  for (int bit = 0; bit < 63; ++bit) f(int64_t{1} << bit);
}

}  // namespace

void CapHighway(IsaLevel cap) {
  int64_t disabled = 0;
  ForEachTarget([&](int64_t t) {
    if ((t & HWY_TARGETS) && !IsaAtMost(TargetLevel(t), cap)) disabled |= t;
  });
  if (disabled) hwy::DisableTargets(disabled);
}

IsaLevel HighwayLevel() {
  static const bool capped = [] {
    CapHighway(ProcessIsaCap());
    return true;
  }();
  (void)capped;
  // The best target still enabled is the lowest set bit (Highway orders better targets first).
  const int64_t supported = hwy::SupportedTargets() & HWY_TARGETS;
  return TargetLevel(supported & -supported);
}

const char* HighwayTargetName() {
  (void)HighwayLevel();
  const int64_t supported = hwy::SupportedTargets() & HWY_TARGETS;
  return hwy::TargetName(supported & -supported);
}

}  // namespace common

KernelIsa HighwayIsa() {
  KernelIsa isa;
  isa.min = FirstSimdLevel();
  isa.dispatch = &common::HighwayLevel;
  isa.library = "highway";
  return isa;
}

}  // namespace onyx::kernels
