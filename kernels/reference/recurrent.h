// Reference kernels for the recurrent family: RNN, GRU and LSTM (ONNX opsets 1-22), every
// direction, both layouts, sequence_lens, peepholes, input_forget, clip and custom activations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onyx::kernels::reference {

enum class RnnCell { kRnn, kGru, kLstm };

// Number of gates stacked in W/R: RNN 1, GRU 3 (z, r, h), LSTM 4 (i, o, f, c).
int64_t RnnGateCount(RnnCell cell);

// One activation function of the ONNX RNN activation list, with its alpha/beta.
struct RnnActivation {
  enum class Kind {
    kRelu,
    kTanh,
    kSigmoid,
    kAffine,           // alpha * x + beta
    kLeakyRelu,        // x >= 0 ? x : alpha * x
    kThresholdedRelu,  // x > alpha ? x : 0
    kScaledTanh,       // alpha * tanh(beta * x)
    kHardSigmoid,      // max(0, min(1, alpha * x + beta))
    kElu,              // x >= 0 ? x : alpha * (exp(x) - 1)
    kSoftsign,         // x / (1 + |x|)
    kSoftplus,         // log(1 + exp(x))
  };
  Kind kind = Kind::kTanh;
  float alpha = 0;
  float beta = 0;

  template <typename Acc>
  Acc Apply(Acc x) const;
};

// Parses an ONNX activation name (case-insensitive). Sets whether the function takes alpha/beta
// and their defaults; false for an unknown name.
bool ParseRnnActivation(const std::string& name, RnnActivation* act, bool* uses_alpha,
                        bool* uses_beta);

struct RnnParams {
  RnnCell cell = RnnCell::kRnn;
  int64_t seq_length = 0;            // S
  int64_t batch = 0;                 // N
  int64_t input_size = 0;            // I
  int64_t hidden_size = 0;           // H
  int64_t num_directions = 1;        // 2 for bidirectional
  bool reverse = false;              // direction == "reverse" (single direction only)
  bool batch_first = false;          // layout == 1: X [N,S,I], Y [N,S,D,H], states [N,D,H]
  float clip = 0;                    // > 0: gate pre-activations clamp to [-clip, clip]
  bool linear_before_reset = false;  // GRU only
  bool input_forget = false;         // LSTM only: f = 1 - i
  // Functions per direction (RNN: f; GRU: f, g; LSTM: f, g, h), direction-major.
  std::vector<RnnActivation> activations;
};

// Inputs in the accumulation type; layouts as in the ONNX spec for `batch_first`.
template <typename Acc>
struct RnnInputs {
  const Acc* X = nullptr;             // [S,N,I] or [N,S,I]
  const Acc* W = nullptr;             // [D, G*H, I]
  const Acc* R = nullptr;             // [D, G*H, H]
  const Acc* B = nullptr;             // [D, 2*G*H] (Wb then Rb) or null = 0
  const int32_t* seq_lens = nullptr;  // [N], each in [0, S], or null = S for all
  const Acc* initial_h = nullptr;     // [D,N,H] or [N,D,H], or null = 0
  const Acc* initial_c = nullptr;     // LSTM, same shape, or null = 0
  const Acc* P = nullptr;             // LSTM [D, 3*H] (i, o, f), or null = 0
};

// Outputs, each optional (null = not wanted). Steps past a batch entry's sequence length are 0
// in Y; Y_h / Y_c hold the state after its last step (0 when its length is 0).
template <typename Acc>
struct RnnOutputs {
  Acc* Y = nullptr;    // [S,D,N,H] or [N,S,D,H]
  Acc* Y_h = nullptr;  // [D,N,H] or [N,D,H]
  Acc* Y_c = nullptr;  // LSTM only
};

// Acc is float (for float, float16, bfloat16) or double.
template <typename Acc>
void RecurrentRef(const RnnParams& p, const RnnInputs<Acc>& in, const RnnOutputs<Acc>& out);

}  // namespace onyx::kernels::reference
