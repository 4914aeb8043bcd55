// The RNN fast kernel ("RNN_f32_hwy": input projections in one product, the recurrent product on
// R in column panels, the Highway tanh) against the reference kernel, which computes the ONNX
// equations step by step: forward, reverse and bidirectional, batches, hidden sizes that leave
// vector tails, with and without bias and initial state, Y and Y_h, one and two threads, every
// Highway target. What it does not compute (clip, other activations, sequence lengths, weights
// known only at run time) it leaves to the reference.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tests/kernels/kernel_harness.h"
#include "tests/kernels/recurrent_cases.h"

namespace onyx::testing {
namespace {

constexpr const char* kImpl = "RNN_f32_hwy";

TEST(Rnn, MatchesReference) {
  std::mt19937 rng(131);
  for (const RecurrentCase& c : RecurrentCases()) {
    const int64_t d = c.direction == "bidirectional" ? 2 : 1;
    const float s = 0.5f;
    std::vector<Tensor> inputs = {RandomFloats({c.seq, c.batch, c.input}, rng, -1.f, 1.f),
                                  RandomFloats({d, c.hidden, c.input}, rng, -s, s),
                                  RandomFloats({d, c.hidden, c.hidden}, rng, -s, s)};
    inputs.push_back(c.bias ? RandomFloats({d, 2 * c.hidden}, rng, -s, s) : Tensor());
    inputs.push_back(Tensor());  // sequence_lens
    inputs.push_back(c.initial ? RandomFloats({d, c.batch, c.hidden}, rng) : Tensor());
    const NodeSpec spec{
        "RNN", 14, {IntAttr("hidden_size", c.hidden), StringAttr("direction", c.direction)}, 2};
    const RunResult ref = RunImpl(spec, inputs, "");
    ASSERT_TRUE(ref.status.ok()) << ref.status.message();
    ForEachSimdTarget([&](const std::string& target) {
      for (int threads : {1, 2}) {
        SCOPED_TRACE(c.direction + " seq " + std::to_string(c.seq) + " hidden " +
                     std::to_string(c.hidden) + " " + target + " threads " +
                     std::to_string(threads));
        RunOptions o;
        o.threads = threads;
        o.constant_inputs = {1, 2, 3};
        const RunResult fast = RunImpl(spec, inputs, kImpl, o);
        ASSERT_TRUE(fast.status.ok()) << fast.status.message();
        EXPECT_EQ(fast.impl, kImpl);
        for (int i = 0; i < 2; ++i)
          EXPECT_EQ(CompareFloats(fast.outputs[i], ref.outputs[i], 2e-6, 1e-5), "")
              << "output " << i;
      }
    });
  }
}

TEST(Rnn, LeavesWhatItDoesNotComputeToTheReference) {
  std::mt19937 rng(137);
  const int64_t h = 4;
  const Tensor x = RandomFloats({2, 1, 3}, rng, -1.f, 1.f);
  const Tensor w = RandomFloats({1, h, 3}, rng, -1.f, 1.f);
  const Tensor r = RandomFloats({1, h, h}, rng, -1.f, 1.f);
  RunOptions constant;
  constant.constant_inputs = {1, 2, 3};
  // Not taken at plan time: clip, other activations, layout 1; W only known at run time.
  EXPECT_FALSE(RunImpl({"RNN", 14, {IntAttr("hidden_size", h), FloatAttr("clip", 1.f)}, 2},
                       {x, w, r}, kImpl, constant)
                   .status.ok());
  EXPECT_FALSE(
      RunImpl({"RNN", 14, {IntAttr("hidden_size", h), StringsAttr("activations", {"Relu"})}, 2},
              {x, w, r}, kImpl, constant)
          .status.ok());
  EXPECT_FALSE(RunImpl({"RNN", 14, {IntAttr("hidden_size", h), IntAttr("layout", 1)}, 2}, {x, w, r},
                       kImpl, constant)
                   .status.ok());
  EXPECT_FALSE(RunImpl({"RNN", 14, {IntAttr("hidden_size", h)}, 2}, {x, w, r}, kImpl).status.ok());
  // Explicit default activations are taken.
  EXPECT_TRUE(
      RunImpl({"RNN", 14, {IntAttr("hidden_size", h), StringsAttr("activations", {"TANH"})}, 2},
              {x, w, r}, kImpl, constant)
          .status.ok());
  // Sequence lengths at run time: the reference computes them (zeros past each end).
  const NodeSpec spec{"RNN", 14, {IntAttr("hidden_size", h)}, 2};
  Tensor lens = Tensor::Allocate(DType::kInt32, {1});
  lens.data<int32_t>()[0] = 1;
  const std::vector<Tensor> inputs = {x, w, r, Tensor(), lens};
  const RunResult ref = RunImpl(spec, inputs, "");
  const RunResult fast = RunImpl(spec, inputs, kImpl, constant);
  ASSERT_TRUE(fast.status.ok()) << fast.status.message();
  for (int i = 0; i < 2; ++i) EXPECT_EQ(CompareFloats(fast.outputs[i], ref.outputs[i], 0, 0), "");
}

}  // namespace
}  // namespace onyx::testing
