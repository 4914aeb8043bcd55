// The LSTM fast kernel ("LSTM_f32_hwy": input projections in one product, the recurrent product
// on R in column panels, the Highway cell) against the reference kernel, which computes the ONNX
// equations step by step: forward, reverse and bidirectional, batches, hidden sizes that leave
// vector tails, with and without bias and initial state, Y, Y_h and Y_c, one and two threads,
// every Highway target; sequence lengths (rows that stop early, length 0, reverse from each row's
// own end) and layout 1. What it does not compute (peepholes, clip, other activations) it leaves
// to the reference kernel.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tests/kernels/kernel_harness.h"
#include "tests/kernels/recurrent_cases.h"

namespace onyx::testing {
namespace {

constexpr const char* kImpl = "LSTM_f32_hwy";

TEST(Lstm, MatchesReference) {
  std::mt19937 rng(107);
  for (const RecurrentCase& c : RecurrentCases()) {
    const int64_t d = c.direction == "bidirectional" ? 2 : 1;
    const float s = 0.5f;
    std::vector<Tensor> inputs = {RandomFloats({c.seq, c.batch, c.input}, rng, -1.f, 1.f),
                                  RandomFloats({d, 4 * c.hidden, c.input}, rng, -s, s),
                                  RandomFloats({d, 4 * c.hidden, c.hidden}, rng, -s, s)};
    inputs.push_back(c.bias ? RandomFloats({d, 8 * c.hidden}, rng, -s, s) : Tensor());
    inputs.push_back(Tensor());  // sequence_lens
    inputs.push_back(c.initial ? RandomFloats({d, c.batch, c.hidden}, rng) : Tensor());
    inputs.push_back(c.initial ? RandomFloats({d, c.batch, c.hidden}, rng) : Tensor());
    const NodeSpec spec{
        "LSTM", 14, {IntAttr("hidden_size", c.hidden), StringAttr("direction", c.direction)}, 3};
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
        for (int i = 0; i < 3; ++i)
          EXPECT_EQ(CompareFloats(fast.outputs[i], ref.outputs[i], 2e-6, 1e-5), "")
              << "output " << i;
      }
    });
  }
}

// Sequence lengths (each row stops at its own length: zeros in Y past it, Y_h and Y_c from its
// last step, zeros for length 0) and layout 1 (batch first), alone and together.
struct LensCase {
  int64_t seq, batch, input, hidden;
  std::string direction;
  int layout;
  std::vector<int32_t> lens;  // empty: no sequence_lens
  bool bias, initial;
};

TEST(Lstm, SequenceLengthsAndLayoutMatchReference) {
  std::mt19937 rng(211);
  const std::vector<LensCase> cases = {
      {5, 3, 7, 13, "forward", 0, {5, 2, 4}, true, true},
      {5, 4, 6, 20, "reverse", 0, {3, 5, 0, 1}, true, true},
      {6, 3, 9, 33, "bidirectional", 0, {6, 1, 4}, true, false},
      {4, 2, 8, 16, "forward", 0, {4, 4}, false, true},  // every row full
      {5, 3, 7, 13, "forward", 1, {}, true, true},
      {4, 2, 16, 20, "reverse", 1, {}, false, true},
      {6, 3, 9, 33, "bidirectional", 1, {2, 6, 0}, true, true},
      {1, 1, 128, 128, "forward", 1, {1}, true, true},
      {3, 2, 5, 8, "forward", 0, {0, 0}, true, true},  // no row runs
  };
  for (const LensCase& c : cases) {
    const int64_t d = c.direction == "bidirectional" ? 2 : 1;
    const float s = 0.5f;
    const Shape x_shape =
        c.layout ? Shape{c.batch, c.seq, c.input} : Shape{c.seq, c.batch, c.input};
    const Shape state = c.layout ? Shape{c.batch, d, c.hidden} : Shape{d, c.batch, c.hidden};
    std::vector<Tensor> inputs = {RandomFloats(x_shape, rng, -1.f, 1.f),
                                  RandomFloats({d, 4 * c.hidden, c.input}, rng, -s, s),
                                  RandomFloats({d, 4 * c.hidden, c.hidden}, rng, -s, s)};
    inputs.push_back(c.bias ? RandomFloats({d, 8 * c.hidden}, rng, -s, s) : Tensor());
    Tensor lens;
    if (!c.lens.empty()) {
      lens = Tensor::Allocate(DType::kInt32, {c.batch});
      for (int64_t b = 0; b < c.batch; ++b) lens.data<int32_t>()[b] = c.lens[b];
    }
    inputs.push_back(lens);
    inputs.push_back(c.initial ? RandomFloats(state, rng) : Tensor());
    inputs.push_back(c.initial ? RandomFloats(state, rng) : Tensor());
    const NodeSpec spec{"LSTM",
                        14,
                        {IntAttr("hidden_size", c.hidden), StringAttr("direction", c.direction),
                         IntAttr("layout", c.layout)},
                        3};
    const RunResult ref = RunImpl(spec, inputs, "");
    ASSERT_TRUE(ref.status.ok()) << ref.status.message();
    ForEachSimdTarget([&](const std::string& target) {
      for (int threads : {1, 2}) {
        SCOPED_TRACE(c.direction + " layout " + std::to_string(c.layout) + " seq " +
                     std::to_string(c.seq) + " batch " + std::to_string(c.batch) +
                     (c.lens.empty() ? " no lens " : " lens ") + target + " threads " +
                     std::to_string(threads));
        RunOptions o;
        o.threads = threads;
        o.constant_inputs = {1, 2, 3};
        const RunResult fast = RunImpl(spec, inputs, kImpl, o);
        ASSERT_TRUE(fast.status.ok()) << fast.status.message();
        EXPECT_EQ(fast.impl, kImpl);
        for (int i = 0; i < 3; ++i)
          EXPECT_EQ(CompareFloats(fast.outputs[i], ref.outputs[i], 2e-6, 1e-5), "")
              << "output " << i;
      }
    });
  }
}

TEST(Lstm, LeavesWhatItDoesNotComputeToTheReference) {
  std::mt19937 rng(109);
  const int64_t h = 4;
  const Tensor x = RandomFloats({2, 1, 3}, rng, -1.f, 1.f);
  const Tensor w = RandomFloats({1, 4 * h, 3}, rng, -1.f, 1.f);
  const Tensor r = RandomFloats({1, 4 * h, h}, rng, -1.f, 1.f);
  RunOptions constant;
  constant.constant_inputs = {1, 2, 3};
  // Not taken at plan time: clip, other activations, peepholes; W only known at run time.
  EXPECT_FALSE(RunImpl({"LSTM", 14, {IntAttr("hidden_size", h), FloatAttr("clip", 1.f)}, 3},
                       {x, w, r}, kImpl, constant)
                   .status.ok());
  EXPECT_FALSE(
      RunImpl({"LSTM",
               14,
               {IntAttr("hidden_size", h), StringsAttr("activations", {"Sigmoid", "Relu", "Tanh"})},
               3},
              {x, w, r}, kImpl, constant)
          .status.ok());
  EXPECT_FALSE(RunImpl({"LSTM", 14, {IntAttr("hidden_size", h)}, 3}, {x, w, r}, kImpl).status.ok());
  // Sequence lengths out of range: the reference words the error.
  const NodeSpec spec{"LSTM", 14, {IntAttr("hidden_size", h)}, 3};
  Tensor lens = Tensor::Allocate(DType::kInt32, {1});
  lens.data<int32_t>()[0] = 3;
  const std::vector<Tensor> inputs = {x, w, r, Tensor(), lens};
  const RunResult ref = RunImpl(spec, inputs, "");
  const RunResult fast = RunImpl(spec, inputs, kImpl, constant);
  ASSERT_FALSE(ref.status.ok());
  EXPECT_EQ(fast.status.message(), ref.status.message());
}

}  // namespace
}  // namespace onyx::testing
