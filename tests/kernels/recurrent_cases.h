// The cases the fast recurrent kernels (LSTM, GRU, RNN) are checked on against their reference
// kernels: a streaming step, hidden sizes that leave vector tails, every direction, batches, with
// and without bias and initial state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onyx::testing {

struct RecurrentCase {
  int64_t seq, batch, input, hidden;
  std::string direction;
  bool bias, initial;
};

inline const std::vector<RecurrentCase>& RecurrentCases() {
  static const std::vector<RecurrentCase> cases = {
      {1, 1, 128, 128, "forward", true, true},  // a streaming step
      {5, 3, 7, 13, "forward", true, false},    // hidden 13: vector tails
      {4, 2, 16, 20, "reverse", false, true},  {6, 2, 9, 33, "bidirectional", true, true},
      {3, 1, 64, 1, "forward", true, true},    {7, 4, 5, 40, "bidirectional", false, false},
  };
  return cases;
}

}  // namespace onyx::testing
