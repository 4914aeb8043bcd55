// LSTM with constant weights and ONNX's default activations: the input projections of every
// step in one product, then per step the recurrent product on R packed in column panels and the
// Highway cell (lstm_hwy.cc). A voice-activity detector's two 128-wide layers ran 23 us each on
// the reference kernel, whose products are scalar loops. Layout 1 and sequence_lens gather each
// row's step from the projections. Anything else (custom activations, clip, peepholes,
// input_forget, weights computed at run time) stays on the reference kernel.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/fast_kernel.h"
#include "kernels/common/recurrent_weights.h"
#include "kernels/common/simd_kernels.h"
#include "kernels/op_helpers.h"

namespace onyx::kernels::common {
namespace {

// ONNX LSTM input positions.
constexpr int kX = 0, kW = 1, kR = 2, kSeqLens = 4, kInitialH = 5, kInitialC = 6, kP = 7;

class LstmKernel : public FastKernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>& types,
                                                  const KernelCreateInfo& info,
                                                  std::unique_ptr<Kernel> fallback) {
    auto k = std::unique_ptr<LstmKernel>(new LstmKernel(std::move(fallback)));
    ONYX_RETURN_IF_ERROR(k->Init(node, types, info));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status Run(KernelContext& ctx) const override {
    const int n_in = ctx.num_inputs();
    const auto present = [&](int i) { return i < n_in && ctx.has_input(i); };
    const Tensor& x = ctx.input(kX);
    const int time_axis = batch_first_ ? 1 : 0;
    const int64_t s_len = x.rank() == 3 ? x.dim(time_axis) : 0;
    const int64_t batch = x.rank() == 3 ? x.dim(1 - time_axis) : 0;
    const int64_t h = rw_.hidden, g = 4 * rw_.hidden;
    const Shape state_shape = batch_first_ ? Shape{batch, rw_.dirs, h} : Shape{rw_.dirs, batch, h};
    // Anything not as planned goes to the reference kernel (which also words the errors).
    if (!RunsAsPlanned(ctx, rw_, time_axis, {kInitialH, kInitialC}, state_shape))
      return Fallback(ctx);
    // Each row's sequence length: S unless sequence_lens says less.
    std::vector<int64_t> lens(static_cast<size_t>(batch), s_len);
    bool full = true;
    if (present(kSeqLens)) {
      const Tensor& l = ctx.input(kSeqLens);
      if (l.dtype() != DType::kInt32 || l.shape() != Shape{batch}) return Fallback(ctx);
      for (int64_t b = 0; b < batch; ++b) {
        const int32_t len = l.data<int32_t>()[b];
        if (len < 0 || len > s_len) return Fallback(ctx);
        lens[b] = len;
        full = full && len == s_len;
      }
    }
    const int64_t max_len = batch > 0 ? *std::max_element(lens.begin(), lens.end()) : 0;
    // Layout 0 with every row at full length runs on contiguous [S, N] rows; otherwise each row's
    // projections, state and outputs are gathered and scattered one row at a time.
    const bool rowwise = batch_first_ || !full;
    // Offsets (in rows of X, of H floats) of the two layouts, as the reference has them.
    const auto x_row = [&](int64_t t, int64_t b) {
      return batch_first_ ? b * s_len + t : t * batch + b;
    };
    const auto y_off = [&](int64_t t, int64_t d, int64_t b) {
      return (batch_first_ ? (b * s_len + t) * rw_.dirs + d : (t * rw_.dirs + d) * batch + b) * h;
    };
    const auto state_off = [&](int64_t d, int64_t b) {
      return (batch_first_ ? b * rw_.dirs + d : d * batch + b) * h;
    };
    Tensor y, y_h, y_c;
    if (ctx.num_outputs() > 0 && ctx.has_output(0)) {
      y = ctx.Output(
          0, DType::kFloat,
          batch_first_ ? Shape{batch, s_len, rw_.dirs, h} : Shape{s_len, rw_.dirs, batch, h});
      // Y is zero past each row's end.
      if (!full) std::fill(y.data<float>(), y.data<float>() + y.numel(), 0.f);
    }
    if (ctx.num_outputs() > 1 && ctx.has_output(1)) y_h = ctx.Output(1, DType::kFloat, state_shape);
    if (ctx.num_outputs() > 2 && ctx.has_output(2)) y_c = ctx.Output(2, DType::kFloat, state_shape);

    // xw: every step's input projections plus both biases; gates: one step's pre-activations;
    // xt: one step's projections gathered row by row (rowwise).
    std::vector<float> xw(static_cast<size_t>(s_len * batch * g));
    std::vector<float> gates(static_cast<size_t>(batch * g));
    std::vector<float> xt(rowwise ? static_cast<size_t>(batch * g) : 0);
    std::vector<float> hs(static_cast<size_t>(batch * h)), cs(static_cast<size_t>(batch * h));
    const int threads = ctx.intra_op_threads();
    for (int64_t d = 0; d < rw_.dirs; ++d) {
      const bool reverse = rw_.dirs == 2 ? d == 1 : rw_.reverse;
      if (s_len * batch > 0)
        PanelWeightsProduct(w_[d], x.data<float>(), s_len * batch, rw_.input, bias_[d].data(),
                            nullptr, xw.data(), g, threads);
      const auto init = [&](int i, std::vector<float>& state) {
        for (int64_t b = 0; b < batch; ++b) {
          float* dst = state.data() + b * h;
          if (present(i)) {
            std::memcpy(dst, ctx.input(i).data<float>() + state_off(d, b), h * sizeof(float));
          } else {
            std::fill(dst, dst + h, 0.f);
          }
        }
      };
      init(kInitialH, hs);
      init(kInitialC, cs);
      for (int64_t step = 0; step < max_len; ++step) {
        if (!rowwise) {
          const int64_t t = reverse ? s_len - 1 - step : step;
          // gates = H_{t-1} R^T + (X_t W^T + Wb + Rb)
          PanelWeightsProduct(r_[d], hs.data(), batch, h, nullptr, xw.data() + t * batch * g,
                              gates.data(), g, threads);
          LstmCellF32(gates.data(), batch, h, cs.data(), hs.data());
          if (y.defined())
            std::memcpy(y.data<float>() + y_off(t, d, 0), hs.data(), hs.size() * sizeof(float));
          continue;
        }
        // Row b is at its own time step (reverse starts at its own end); rows past their end
        // keep their state and are not written.
        const auto t_of = [&](int64_t b) { return reverse ? lens[b] - 1 - step : step; };
        bool all = true;
        for (int64_t b = 0; b < batch; ++b) {
          float* dst = xt.data() + b * g;
          if (step < lens[b]) {
            std::memcpy(dst, xw.data() + x_row(t_of(b), b) * g, g * sizeof(float));
          } else {
            std::fill(dst, dst + g, 0.f);
            all = false;
          }
        }
        PanelWeightsProduct(r_[d], hs.data(), batch, h, nullptr, xt.data(), gates.data(), g,
                            threads);
        if (all) {
          LstmCellF32(gates.data(), batch, h, cs.data(), hs.data());
        } else {
          for (int64_t b = 0; b < batch; ++b)
            if (step < lens[b])
              LstmCellF32(gates.data() + b * g, 1, h, cs.data() + b * h, hs.data() + b * h);
        }
        if (y.defined())
          for (int64_t b = 0; b < batch; ++b)
            if (step < lens[b])
              std::memcpy(y.data<float>() + y_off(t_of(b), d, b), hs.data() + b * h,
                          h * sizeof(float));
      }
      // A row of length 0 reports zeros, not its initial state.
      const auto store = [&](Tensor& out, const std::vector<float>& state) {
        if (!out.defined()) return;
        for (int64_t b = 0; b < batch; ++b) {
          float* dst = out.data<float>() + state_off(d, b);
          if (lens[b] > 0) {
            std::memcpy(dst, state.data() + b * h, h * sizeof(float));
          } else {
            std::fill(dst, dst + h, 0.f);
          }
        }
      };
      store(y_h, hs);
      store(y_c, cs);
    }
    return Status::Ok();
  }

 private:
  explicit LstmKernel(std::unique_ptr<Kernel> fallback) : FastKernel(std::move(fallback)) {}

  Status Init(const NodeView& node, const std::vector<TypeInfo>& types,
              const KernelCreateInfo& info) {
    ONYX_ASSIGN_OR_RETURN(const RecurrentWeights rw, ReadRecurrentWeights(node, types, info, 4));
    const Tensor *w = rw.w, *r = rw.r, *b = rw.b;
    rw_ = rw;
    rw_.w = rw_.r = rw_.b = nullptr;  // plan constants: read here only
    const int64_t g = 4 * rw_.hidden;
    batch_first_ = node.attr_int("layout", 0) == 1;
    for (int64_t d = 0; d < rw_.dirs; ++d) {
      w_.push_back(PackPanelWeights(w->data<float>() + d * g * rw_.input, g, rw_.input));
      r_.push_back(PackPanelWeights(r->data<float>() + d * g * rw_.hidden, g, rw_.hidden));
      std::vector<float> bias(static_cast<size_t>(g), 0.f);
      if (b)
        for (int64_t j = 0; j < g; ++j)
          bias[j] = b->data<float>()[d * 2 * g + j] + b->data<float>()[d * 2 * g + g + j];
      bias_.push_back(std::move(bias));
    }
    return Status::Ok();
  }

  RecurrentWeights rw_;                   // dims, direction and the planned W and R shapes
  bool batch_first_ = false;              // layout 1
  std::vector<PanelWeights> w_, r_;       // per direction
  std::vector<std::vector<float>> bias_;  // per direction: Wb + Rb
};

// What the fast kernel computes exactly as the reference does, up to float summation order.
Status LstmSupports(const NodeView& node, const std::vector<TypeInfo>& types) {
  ONYX_RETURN_IF_ERROR(RecurrentSupports(node, types, {"Sigmoid", "Tanh", "Tanh"}, true));
  if (node.attr_int("input_forget", 0) != 0) return node.NotSupported("input_forget");
  if (Present(types, kP)) return node.NotSupported("peepholes");
  return Status::Ok();
}

}  // namespace

KernelEntry LstmHwyKernel() {
  return WithFallback("LSTM_f32_hwy", HighwayIsa(), LstmSupports,
                      FastCreateWithInfoFn(LstmKernel::Create));
}

}  // namespace onyx::kernels::common
