// com.onyx QLinearLookup on AVX512-VBMI (kernels/x86/qlookup_vbmi.cc) against the reference
// kernel, byte for byte: uint8 / int8 inputs and tables, random tables, sizes that end inside a
// vector and sizes split between threads, written over the input (the planner's in-place reuse)
// or not. Skipped on CPUs without VBMI, where the plans run the reference kernel.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

constexpr const char* kImpl = "QLinearLookup_8bit_vbmi";

Tensor RandomBytes(DType t, const Shape& shape, std::mt19937& rng) {
  Tensor x = Tensor::Allocate(t, shape);
  auto* p = static_cast<uint8_t*>(x.raw_data());
  for (int64_t i = 0; i < x.numel(); ++i) p[i] = static_cast<uint8_t>(rng() & 0xff);
  return x;
}

TEST(QLinearLookupVbmi, MatchesTheReferenceByteForByte) {
  NodeSpec spec("QLinearLookup", 1);
  spec.domain = "com.onyx";
  std::mt19937 rng(7);
  {
    const RunResult probe = RunImpl(
        spec, {RandomBytes(DType::kUInt8, {4}, rng), RandomBytes(DType::kUInt8, {256}, rng)},
        kImpl);
    if (!probe.status.ok()) GTEST_SKIP() << probe.status.message();
  }
  for (DType in : {DType::kUInt8, DType::kInt8}) {
    for (DType out : {DType::kUInt8, DType::kInt8}) {
      for (int64_t n : {1, 63, 64, 65, 127, 1000, 300007}) {
        const Tensor x = RandomBytes(in, {n}, rng);
        const Tensor table = RandomBytes(out, {256}, rng);
        const RunResult ref = RunImpl(spec, {x, table}, "");
        ASSERT_TRUE(ref.status.ok()) << ref.status.message();
        for (int threads : {1, 2, 4}) {
          for (bool over_input : {false, true}) {
            if (over_input && in != out) continue;  // the planner shares same-type buffers only
            SCOPED_TRACE("n=" + std::to_string(n) + " threads=" + std::to_string(threads) +
                         (over_input ? " in place" : ""));
            RunOptions o;
            o.threads = threads;
            o.output_over_input0 = over_input;
            const RunResult fast = RunImpl(spec, {x, table}, kImpl, o);
            ASSERT_TRUE(fast.status.ok()) << fast.status.message();
            EXPECT_EQ(fast.impl, kImpl);
            EXPECT_EQ(CompareBytes(fast.outputs[0], ref.outputs[0]), "");
          }
        }
      }
    }
  }
}

TEST(QLinearLookupVbmi, RefusesATableOfAnotherSize) {
  NodeSpec spec("QLinearLookup", 1);
  spec.domain = "com.onyx";
  std::mt19937 rng(8);
  for (const std::string& impl : {std::string(kImpl), std::string()}) {
    const RunResult r = RunImpl(
        spec, {RandomBytes(DType::kUInt8, {8}, rng), RandomBytes(DType::kUInt8, {255}, rng)}, impl);
    if (!impl.empty() && r.impl != impl) continue;  // no VBMI here
    ASSERT_FALSE(r.status.ok());
    EXPECT_NE(r.status.message().find("256"), std::string::npos) << r.status.message();
  }
}

}  // namespace
}  // namespace onyx::testing
