// Recurrent family: RNN, GRU, LSTM.
#include "kernels/reference/recurrent.h"

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/element_types.h"
#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"

namespace onyx::kernels {
namespace {

using reference::RnnActivation;
using reference::RnnCell;
using reference::RnnParams;

// ONNX input positions shared by the three ops (LSTM adds initial_c = 6 and P = 7).
enum RnnInput {
  kX = 0,
  kW = 1,
  kR = 2,
  kB = 3,
  kSeqLens = 4,
  kInitialH = 5,
  kInitialC = 6,
  kP = 7
};

const std::vector<DType> kRnnTypes = {DType::kFloat, DType::kFloat16, DType::kBFloat16,
                                      DType::kDouble};

// X, W and R are required: an error naming the first one the node leaves out.
Status CheckRequiredInputs(const NodeView& node, int num_inputs) {
  static const char* const kRequired[] = {"X", "W", "R"};
  for (int i = kX; i <= kR; ++i)
    if (i >= num_inputs || InputName(node, i).empty())
      return node.Invalid("input ", i, " '", kRequired[i], "' is missing (the node has ",
                          num_inputs, " input", num_inputs == 1 ? "" : "s", "); ", node.op_type(),
                          " needs X, W and R");
  return Status::Ok();
}

// Activation functions per direction, and their ONNX defaults.
std::vector<std::string> DefaultActivations(RnnCell cell) {
  switch (cell) {
    case RnnCell::kRnn:
      return {"Tanh"};
    case RnnCell::kGru:
      return {"Sigmoid", "Tanh"};
    case RnnCell::kLstm:
      return {"Sigmoid", "Tanh", "Tanh"};
  }
  return {};
}

StatusOr<int64_t> NumDirections(const NodeView& node, bool* reverse) {
  const std::string direction = node.attr_string("direction", "forward");
  *reverse = direction == "reverse";
  if (direction == "forward" || direction == "reverse") return 1;
  if (direction == "bidirectional") return 2;
  return node.Invalid("attribute 'direction' is '", direction,
                      "'; expected forward, reverse or bidirectional");
}

// Attribute parsing shared by infer and run: everything except the sizes.
StatusOr<RnnParams> ParseRnnAttributes(const NodeView& node, RnnCell cell) {
  RnnParams p;
  p.cell = cell;
  ONYX_ASSIGN_OR_RETURN(p.num_directions, NumDirections(node, &p.reverse));
  const int64_t layout = node.attr_int("layout", 0);  // opset 14+
  if (layout != 0 && layout != 1)
    return node.Invalid("attribute 'layout' must be 0 or 1, got ", layout);
  p.batch_first = layout == 1;
  if (node.has_attr("clip")) {
    p.clip = node.attr_float("clip", 0);
    if (!(p.clip > 0)) return node.Invalid("attribute 'clip' must be > 0, got ", p.clip);
  }
  p.linear_before_reset = node.attr_int("linear_before_reset", 0) != 0;
  p.input_forget = node.attr_int("input_forget", 0) != 0;

  const std::vector<std::string> defaults = DefaultActivations(cell);
  const size_t per_dir = defaults.size();
  std::vector<std::string> names = node.attr_strings("activations", {});
  if (names.empty()) {
    for (int64_t d = 0; d < p.num_directions; ++d)
      names.insert(names.end(), defaults.begin(), defaults.end());
  } else if (names.size() == per_dir && p.num_directions == 2) {
    // One list for both directions (ONNX asks for both; runtimes accept one).
    names.insert(names.end(), names.begin(), names.end());
  }
  if (names.size() != per_dir * static_cast<size_t>(p.num_directions)) {
    return node.Invalid("attribute 'activations' has ", names.size(), " entries; expected ",
                        per_dir * p.num_directions, " (", per_dir, " per direction)");
  }
  // activation_alpha / activation_beta are consumed in order by the functions that take them.
  const std::vector<float> alphas = node.attr_floats("activation_alpha", {});
  const std::vector<float> betas = node.attr_floats("activation_beta", {});
  size_t next_alpha = 0, next_beta = 0;
  for (const std::string& name : names) {
    RnnActivation act;
    bool uses_alpha = false, uses_beta = false;
    if (!reference::ParseRnnActivation(name, &act, &uses_alpha, &uses_beta))
      return node.NotSupported("activation function '", name, "' is not supported");
    if (uses_alpha && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
    if (uses_beta && next_beta < betas.size()) act.beta = betas[next_beta++];
    p.activations.push_back(act);
  }
  return p;
}

// Dim helpers for inference: a known value or the input's symbolic dim.
Dim DimOf(const TypeInfo& t, size_t i) {
  return t.has_shape && i < t.dims.size() ? t.dims[i] : Dim();
}

Status InferRecurrent(InferContext& ctx, RnnCell cell) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(CheckRequiredInputs(node, ctx.num_inputs()));
  for (int i : {kX, kW, kR, kB, kInitialH, kInitialC, kP})
    if (i < ctx.num_inputs()) ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, i, kRnnTypes));
  if (kSeqLens < ctx.num_inputs())
    ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, kSeqLens, {DType::kInt32}));
  ONYX_ASSIGN_OR_RETURN(RnnParams p, ParseRnnAttributes(node, cell));
  const TypeInfo& x = ctx.input_type(kX);
  if (!x.is_tensor()) return Status::Ok();
  if (x.has_shape && x.dims.size() != 3)
    return node.Invalid("input 0 '", InputName(node, kX), "' has shape ", x.ToString(),
                        "; expected rank 3");
  for (int i : {kW, kR}) {
    const TypeInfo& t = ctx.input_type(i);
    if (t.is_tensor() && t.elem != x.elem)
      return node.Invalid("input ", i, " '", InputName(node, i), "' has type ", DTypeName(t.elem),
                          "; expected ", DTypeName(x.elem), " like input 0");
  }
  const int64_t G = reference::RnnGateCount(cell);
  Dim hidden;
  if (node.has_attr("hidden_size")) {
    hidden = Dim::Known(node.attr_int("hidden_size", 0));
  } else if (DimOf(ctx.input_type(kR), 2).known()) {
    hidden = DimOf(ctx.input_type(kR), 2);
  } else if (DimOf(ctx.input_type(kW), 1).known()) {
    hidden = Dim::Known(DimOf(ctx.input_type(kW), 1).value / G);
  }
  const Dim seq = DimOf(x, p.batch_first ? 1 : 0);
  const Dim batch = DimOf(x, p.batch_first ? 0 : 1);
  const Dim dirs = Dim::Known(p.num_directions);
  TypeInfo y = TypeInfo::Tensor(x.elem);
  y.has_shape = true;
  y.dims = p.batch_first ? std::vector<Dim>{batch, seq, dirs, hidden}
                         : std::vector<Dim>{seq, dirs, batch, hidden};
  TypeInfo state = TypeInfo::Tensor(x.elem);
  state.has_shape = true;
  state.dims =
      p.batch_first ? std::vector<Dim>{batch, dirs, hidden} : std::vector<Dim>{dirs, batch, hidden};
  if (ctx.num_outputs() > 0) ctx.SetOutputType(0, y);
  if (ctx.num_outputs() > 1) ctx.SetOutputType(1, state);
  if (cell == RnnCell::kLstm && ctx.num_outputs() > 2) ctx.SetOutputType(2, state);
  return Status::Ok();
}

Status InferRnn(InferContext& ctx) {
  return InferRecurrent(ctx, RnnCell::kRnn);
}
Status InferGru(InferContext& ctx) {
  return InferRecurrent(ctx, RnnCell::kGru);
}
Status InferLstm(InferContext& ctx) {
  return InferRecurrent(ctx, RnnCell::kLstm);
}

// Checks that an input has exactly `expected` as its shape.
Status ExpectShape(const NodeView& node, int i, const Tensor& t, const Shape& expected) {
  if (t.shape() == expected) return Status::Ok();
  return node.Invalid("input ", i, " '", InputName(node, i), "' has shape ",
                      ShapeToString(t.shape()), "; expected ", ShapeToString(expected));
}

// The tensor's values in the accumulation type: borrowed when T == Acc, converted otherwise.
template <typename T, typename Acc>
const Acc* AsAcc(const Tensor& t, std::vector<Acc>* storage) {
  if constexpr (std::is_same_v<T, Acc>) {
    return t.data<Acc>();
  } else {
    storage->resize(static_cast<size_t>(t.numel()));
    const T* src = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i)
      (*storage)[i] = static_cast<Acc>(static_cast<float>(src[i]));
    return storage->data();
  }
}

template <typename T, typename Acc>
Status RunRecurrentTyped(KernelContext& ctx, RnnParams& p) {
  const NodeView& node = ctx.node();
  const int num_in = ctx.num_inputs();
  auto present = [&](int i) { return i < num_in && ctx.has_input(i); };
  const Tensor& X = ctx.input(kX);
  const Tensor& W = ctx.input(kW);
  const Tensor& R = ctx.input(kR);
  const int64_t G = reference::RnnGateCount(p.cell);
  const int64_t D = p.num_directions;
  if (X.rank() != 3)
    return node.Invalid("input 0 '", InputName(node, kX), "' has shape ", ShapeToString(X.shape()),
                        "; expected rank 3");
  if (R.rank() != 3)
    return node.Invalid("input 2 '", InputName(node, kR), "' has shape ", ShapeToString(R.shape()),
                        "; expected [", D, ", ", G, "*hidden, hidden]");
  p.seq_length = X.dim(p.batch_first ? 1 : 0);
  p.batch = X.dim(p.batch_first ? 0 : 1);
  p.input_size = X.dim(2);
  p.hidden_size = R.dim(2);
  const int64_t S = p.seq_length, N = p.batch, H = p.hidden_size;
  if (node.has_attr("hidden_size") && node.attr_int("hidden_size", 0) != H)
    return node.Invalid("attribute 'hidden_size' is ", node.attr_int("hidden_size", 0),
                        " but input 2 '", InputName(node, kR), "' has shape ",
                        ShapeToString(R.shape()));
  ONYX_RETURN_IF_ERROR(ExpectShape(node, kW, W, {D, G * H, p.input_size}));
  ONYX_RETURN_IF_ERROR(ExpectShape(node, kR, R, {D, G * H, H}));
  const Shape state_shape = p.batch_first ? Shape{N, D, H} : Shape{D, N, H};
  for (int i : {kW, kR, kB, kInitialH, kInitialC, kP}) {
    if (present(i) && ctx.input(i).dtype() != X.dtype())
      return node.Invalid("input ", i, " '", InputName(node, i), "' has type ",
                          DTypeName(ctx.input(i).dtype()), "; expected ", DTypeName(X.dtype()));
  }

  std::vector<Acc> x_buf, w_buf, r_buf, b_buf, h0_buf, c0_buf, p_buf;
  reference::RnnInputs<Acc> in;
  in.X = AsAcc<T, Acc>(X, &x_buf);
  in.W = AsAcc<T, Acc>(W, &w_buf);
  in.R = AsAcc<T, Acc>(R, &r_buf);
  if (present(kB)) {
    ONYX_RETURN_IF_ERROR(ExpectShape(node, kB, ctx.input(kB), {D, 2 * G * H}));
    in.B = AsAcc<T, Acc>(ctx.input(kB), &b_buf);
  }
  if (present(kSeqLens)) {
    const Tensor& lens = ctx.input(kSeqLens);
    if (lens.dtype() != DType::kInt32)
      return node.Invalid("input 4 '", InputName(node, kSeqLens), "' has type ",
                          DTypeName(lens.dtype()), "; expected int32");
    ONYX_RETURN_IF_ERROR(ExpectShape(node, kSeqLens, lens, {N}));
    for (int64_t b = 0; b < N; ++b) {
      const int32_t len = lens.data<int32_t>()[b];
      if (len < 0 || len > S)
        return node.Fail("input 4 '", InputName(node, kSeqLens), "' has value ", len, " at batch ",
                         b, "; expected [0, ", S, "]");
    }
    in.seq_lens = lens.data<int32_t>();
  }
  if (present(kInitialH)) {
    ONYX_RETURN_IF_ERROR(ExpectShape(node, kInitialH, ctx.input(kInitialH), state_shape));
    in.initial_h = AsAcc<T, Acc>(ctx.input(kInitialH), &h0_buf);
  }
  if (p.cell == RnnCell::kLstm) {
    if (present(kInitialC)) {
      ONYX_RETURN_IF_ERROR(ExpectShape(node, kInitialC, ctx.input(kInitialC), state_shape));
      in.initial_c = AsAcc<T, Acc>(ctx.input(kInitialC), &c0_buf);
    }
    if (present(kP)) {
      ONYX_RETURN_IF_ERROR(ExpectShape(node, kP, ctx.input(kP), {D, 3 * H}));
      in.P = AsAcc<T, Acc>(ctx.input(kP), &p_buf);
    }
  }

  // Outputs: written in place when T == Acc, else through a buffer converted afterwards.
  const Shape y_shape = p.batch_first ? Shape{N, S, D, H} : Shape{S, D, N, H};
  const int num_out = p.cell == RnnCell::kLstm ? 3 : 2;
  Tensor outs[3];
  std::vector<Acc> out_bufs[3];
  Acc* out_ptrs[3] = {nullptr, nullptr, nullptr};
  for (int i = 0; i < num_out && i < ctx.num_outputs(); ++i) {
    if (!ctx.has_output(i)) continue;
    outs[i] = ctx.Output(i, X.dtype(), i == 0 ? y_shape : state_shape);
    if constexpr (std::is_same_v<T, Acc>) {
      out_ptrs[i] = outs[i].template data<Acc>();
    } else {
      out_bufs[i].resize(static_cast<size_t>(outs[i].numel()));
      out_ptrs[i] = out_bufs[i].data();
    }
  }
  reference::RnnOutputs<Acc> out{out_ptrs[0], out_ptrs[1], out_ptrs[2]};
  reference::RecurrentRef<Acc>(p, in, out);
  if constexpr (!std::is_same_v<T, Acc>) {
    for (int i = 0; i < 3; ++i) {
      if (!out_ptrs[i]) continue;
      T* dst = outs[i].template data<T>();
      for (int64_t k = 0; k < outs[i].numel(); ++k) dst[k] = T(static_cast<float>(out_bufs[i][k]));
    }
  }
  return Status::Ok();
}

Status RunRecurrent(KernelContext& ctx, RnnCell cell) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(CheckRequiredInputs(node, ctx.num_inputs()));
  ONYX_ASSIGN_OR_RETURN(RnnParams p, ParseRnnAttributes(node, cell));
  const DType t = ctx.input(kX).dtype();
  switch (t) {
    case DType::kFloat:
      return RunRecurrentTyped<float, float>(ctx, p);
    case DType::kDouble:
      return RunRecurrentTyped<double, double>(ctx, p);
    case DType::kFloat16:
      return RunRecurrentTyped<float16_t, float>(ctx, p);
    case DType::kBFloat16:
      return RunRecurrentTyped<bfloat16_t, float>(ctx, p);
    default:
      return node.NotSupported("input 0 '", InputName(node, kX), "' has type ", DTypeName(t),
                               ", which this operator does not support");
  }
}

Status RnnKernel(KernelContext& ctx) {
  return RunRecurrent(ctx, RnnCell::kRnn);
}
Status GruKernel(KernelContext& ctx) {
  return RunRecurrent(ctx, RnnCell::kGru);
}
Status LstmKernel(KernelContext& ctx) {
  return RunRecurrent(ctx, RnnCell::kLstm);
}

}  // namespace

void RegisterRecurrent(OpRegistry& r) {
  // Opset 1 had an `output_sequence` flag (outputs are computed when they are wired, so it is
  // ignored); GRU-3 added linear_before_reset; 7 made the outputs optional; 14 added layout;
  // 22 added bfloat16.
  for (auto [since, until] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 6}, {7, 13}, {14, 21}, {22, kLatestOpset}}) {
    r.Add("", "RNN", since, until, InferRnn, RnnKernel);
    r.Add("", "LSTM", since, until, InferLstm, LstmKernel);
  }
  for (auto [since, until] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 2}, {3, 6}, {7, 13}, {14, 21}, {22, kLatestOpset}}) {
    r.Add("", "GRU", since, until, InferGru, GruKernel);
  }
}

}  // namespace onyx::kernels
