// The CPU-feature probe and the ISA cap: the levels are cumulative, the probe agrees with the
// kernel's /proc/cpuinfo, bad cap values are errors, and a capped session plans kernels at or
// below its cap (the reference kernels under scalar) whose outputs match the reference session.
// Run under each ONYX_ISA level (docs/isa.md) the process-wide cap changes what these see.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "onyx/session.h"
#include "tests/engine/model_builder.h"
#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

using kernels::IsaLevel;

constexpr int32_t kF32 = onnx::TensorProto::FLOAT;

TEST(Isa, LevelsAreCumulativeAndTheMachineIsTheHighest) {
  const auto& levels = kernels::ArchIsaLevels();
  ASSERT_FALSE(levels.empty());
  EXPECT_EQ(levels[0], IsaLevel::kScalar);
  bool below_has = true;
  for (IsaLevel l : levels) {
    const bool has = kernels::IsaLevelHas(kernels::Cpu(), l);
    EXPECT_TRUE(below_has || !has) << kernels::IsaName(l) << " without the level below it";
    below_has = has;
    if (has) EXPECT_TRUE(kernels::IsaAtMost(l, kernels::MachineIsa())) << kernels::IsaName(l);
  }
  EXPECT_TRUE(kernels::IsaLevelHas(kernels::Cpu(), kernels::MachineIsa()));
  // A CPU with every feature of a level has it; dropping one of the level's features loses it.
  kernels::CpuFeatures all;
  all.ssse3 = all.sse4_1 = all.sse4_2 = all.popcnt = true;
  all.avx = all.avx2 = all.fma = all.f16c = all.bmi1 = all.bmi2 = all.lzcnt = all.os_avx = true;
  all.avx512f = all.avx512cd = all.avx512bw = all.avx512dq = all.avx512vl = true;
  all.os_avx512 = all.avx512_vnni = all.avx512_bf16 = true;
  all.amx_tile = all.amx_int8 = all.amx_bf16 = all.os_amx = true;
  EXPECT_TRUE(kernels::IsaLevelHas(all, IsaLevel::kAmx));
  kernels::CpuFeatures no_os_zmm = all;
  no_os_zmm.os_avx512 = false;  // the OS does not save ZMM state: no AVX-512 level at all
  EXPECT_TRUE(kernels::IsaLevelHas(no_os_zmm, IsaLevel::kAvx2));
  EXPECT_FALSE(kernels::IsaLevelHas(no_os_zmm, IsaLevel::kAvx512));
  EXPECT_FALSE(kernels::IsaLevelHas(no_os_zmm, IsaLevel::kAmx));
  kernels::CpuFeatures no_bf16 = all;
  no_bf16.avx512_bf16 = false;
  EXPECT_TRUE(kernels::IsaLevelHas(no_bf16, IsaLevel::kAvx512Vnni));
  EXPECT_FALSE(kernels::IsaLevelHas(no_bf16, IsaLevel::kAvx512Bf16));
}

// The flags /proc/cpuinfo lists for the first CPU (x86 "flags", AArch64 "Features"); none when it
// describes another architecture (qemu-user shows the host's).
std::set<std::string> CpuinfoFlags() {
#if defined(__aarch64__)
  const char* key = "Features";
#else
  const char* key = "flags";
#endif
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

TEST(Isa, ProbeAgreesWithProcCpuinfo) {
  const std::set<std::string> flags = CpuinfoFlags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags";
  int compared = 0;
  for (const auto& [name, has] : kernels::Cpu().List()) {
    if (name.rfind("os_", 0) == 0) continue;  // XCR0 state, not a cpuinfo flag
    // Linux lists LZCNT as "abm" (with POPCNT); the kernel hides flags the OS cannot use.
    const std::string flag = name == "lzcnt" ? "abm" : name;
    EXPECT_EQ(has, flags.count(flag) == 1) << name;
    ++compared;
  }
  EXPECT_GT(compared, 5);
}

TEST(Isa, BadCapValuesAreErrors) {
  auto unknown = kernels::ParseIsaLevel("avx3", "ONYX_ISA");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown ISA level"), std::string::npos)
      << unknown.status().message();
#if defined(__x86_64__)
  auto other_arch = kernels::ParseIsaLevel("sve", "ONYX_ISA");
  ASSERT_FALSE(other_arch.ok());
  EXPECT_NE(other_arch.status().message().find("not an ISA level of this architecture"),
            std::string::npos);
  // Above the machine: refused, not lowered.
  auto above = kernels::ParseIsaLevel("avx512", "ONYX_ISA", IsaLevel::kAvx2);
  ASSERT_FALSE(above.ok());
  EXPECT_NE(above.status().message().find("supports up to avx2"), std::string::npos)
      << above.status().message();
  auto at = kernels::ParseIsaLevel("avx2", "ONYX_ISA", IsaLevel::kAvx2);
  ASSERT_TRUE(at.ok());
  EXPECT_EQ(at.value(), IsaLevel::kAvx2);
#endif
  auto native = kernels::ParseIsaLevel("native", "x");
  ASSERT_TRUE(native.ok());
  EXPECT_EQ(native.value(), kernels::MachineIsa());
  SessionOptions o;
  o.max_isa = "fast";
  ModelBuilder b(17);
  b.Input("x", kF32, {2});
  b.Output("y", kF32, {2});
  b.Node("Relu", {"x"}, {"y"});
  auto s = Session::CreateFromBytes(b.Bytes(), o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("max_isa=fast"), std::string::npos) << s.status().message();
}

// The "isa=" of every step of a text plan.
std::vector<std::string> StepIsas(const std::string& plan) {
  std::vector<std::string> out;
  for (size_t p = plan.find(" isa="); p != std::string::npos; p = plan.find(" isa=", p + 1)) {
    const size_t b = p + 5, e = plan.find('\n', b);
    out.push_back(plan.substr(b, e - b));
  }
  return out;
}

TEST(Isa, CappedSessionsPlanKernelsAtOrBelowTheCapAndMatchTheReference) {
  // A convolution, a matrix product and a softmax: oneDNN, Highway and reference kernels.
  ModelBuilder b(17);
  b.Input("x", kF32, {1, 8, 10, 10});
  b.Output("y", kF32, {1, 16, 8, 8});
  b.Output("z", kF32, {7, 33});
  b.Input("a", kF32, {7, 64});
  std::mt19937 rng(91);
  auto values = [&](const Shape& s) {
    Tensor t = RandomFloats(s, rng, -1.f, 1.f);
    return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
  };
  b.FloatInit("w", {16, 8, 3, 3}, values({16, 8, 3, 3}));
  b.FloatInit("m", {64, 33}, values({64, 33}));
  b.Node("Conv", {"x", "w"}, {"c"}, "conv");
  b.Node("Relu", {"c"}, {"y"}, "relu");
  b.Node("MatMul", {"a", "m"}, {"p"}, "matmul");
  b.Node("Softmax", {"p"}, {"z"}, "softmax");
  const NamedValues feeds = {{"x", Value(RandomFloats({1, 8, 10, 10}, rng))},
                             {"a", Value(RandomFloats({7, 64}, rng))}};
  SessionOptions ref_opts;
  ref_opts.reference_kernels = true;
  const NamedValues want = Session::FromBytes(b.Bytes(), ref_opts).Run(feeds);
  const IsaLevel process = kernels::ProcessIsaCap();
  for (IsaLevel cap : kernels::ArchIsaLevels()) {
    if (!kernels::IsaAtMost(cap, process)) continue;
    SCOPED_TRACE(kernels::IsaName(cap));
    SessionOptions o;
    o.max_isa = kernels::IsaName(cap);
    o.intra_op_threads = 2;
    Session s = Session::FromBytes(b.Bytes(), o);
    const std::string plan = s.DescribePlan({}, false, true).value();
    const std::vector<std::string> isas = StepIsas(plan);
    ASSERT_FALSE(isas.empty()) << plan;
    for (const std::string& isa : isas) {
      auto level = kernels::ParseIsaLevel(isa, "step isa");
      ASSERT_TRUE(level.ok()) << isa;
      EXPECT_TRUE(kernels::IsaAtMost(level.value(), cap)) << plan;
    }
    if (cap == IsaLevel::kScalar) {
      // Every Highway and oneDNN kernel needs vector registers: the reference kernels only.
#if defined(__x86_64__)
      EXPECT_NE(plan.find("not FusedConv_f32_onednn: runs at"), std::string::npos) << plan;
      EXPECT_NE(plan.find("not MatMul_f32_onednn: runs at"), std::string::npos) << plan;
#endif
      EXPECT_NE(plan.find("not Softmax_f32_hwy: runs at"), std::string::npos) << plan;
    } else if (cap == process) {
      // At the process's own cap the libraries' dispatch level is allowed: fast kernels.
#if defined(__x86_64__)
      EXPECT_NE(plan.find("[MatMul_f32_onednn"), std::string::npos) << plan;
      EXPECT_EQ(plan.find("fusedconv_f32_ref"), std::string::npos) << plan;
#endif
      EXPECT_NE(plan.find("[Softmax_f32_hwy]"), std::string::npos) << plan;
    }
    const NamedValues got = s.Run(feeds);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(CompareFloats(got[i].second.tensor(), want[i].second.tensor(), 1e-5, 1e-5), "")
          << got[i].first;
  }
}

}  // namespace
}  // namespace onyx::testing
