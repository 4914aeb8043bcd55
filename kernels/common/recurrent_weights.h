// What the fast recurrent kernels (lstm_kernel.cc, gru_kernel.cc, rnn_kernel.cc) share: their
// constant weights read and checked once, and the forms none of them computes.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "kernels/kernel.h"
#include "kernels/node_view.h"
#include "onyx/status.h"

namespace onyx::kernels::common {

// ONNX's input positions common to RNN, GRU and LSTM.
constexpr int kRecurrentX = 0, kRecurrentW = 1, kRecurrentR = 2, kRecurrentB = 3,
              kRecurrentSeqLens = 4, kRecurrentInitialH = 5;

struct RecurrentWeights {
  const Tensor* w = nullptr;  // [D, gates * H, I]; the tensors only for kernel creation
  const Tensor* r = nullptr;  // [D, gates * H, H]
  const Tensor* b = nullptr;  // [D, 2 * gates * H] (Wb then Rb), null when absent
  int64_t dirs = 1, hidden = 0, input = 0;
  bool reverse = false;  // direction "reverse" (one direction read backwards)
  Shape w_shape, r_shape;
};

// W, R and (when given) B as plan-time float32 constants of the shapes above, with `direction`
// matching D; NotSupported naming what is not, so the reference kernel takes the node.
StatusOr<RecurrentWeights> ReadRecurrentWeights(const NodeView& node,
                                                const std::vector<TypeInfo>& types,
                                                const KernelCreateInfo& info, int64_t gates);

// Whether a run's inputs are what a fast kernel made for `rw` takes; the rest goes to the
// reference kernel, which also words the errors: X float32 of rank 3 with I = rw.input and at
// least one step along `time_axis`, W and R of their planned shapes, and each initial state in
// `states` that is given float32 of `state_shape`.
bool RunsAsPlanned(const KernelContext& ctx, const RecurrentWeights& rw, int time_axis,
                   std::initializer_list<int> states, const Shape& state_shape);

// A time-major run of the fast GRU or RNN kernel: S and B, Y [S, D, B, H] and Y_h [D, B, H]
// (undefined when the node does not ask for them).
struct RecurrentRun {
  int64_t s_len = 0, batch = 0;
  Tensor y, y_h;
};
// The run with its outputs made, or nullopt where it goes to the reference kernel: sequence
// lengths given, or inputs not as planned (RunsAsPlanned, initial state input 5).
std::optional<RecurrentRun> BeginRecurrentRun(KernelContext& ctx, const RecurrentWeights& rw);
// Direction d's initial hidden state [B, H]: input 5 when given, else zeros.
void InitialHidden(const KernelContext& ctx, int64_t d, int64_t batch, int64_t hidden, float* hs);

// NotSupported unless X is float32 and the node has no clip, no activation parameters, and only
// `defaults` as its activations (repeated per direction, any case); layout 1 only when
// `layout1` is true.
Status RecurrentSupports(const NodeView& node, const std::vector<TypeInfo>& types,
                         const std::vector<std::string>& defaults, bool layout1);

}  // namespace onyx::kernels::common
