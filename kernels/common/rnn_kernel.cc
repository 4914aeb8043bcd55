// RNN with constant weights and ONNX's default activation (Tanh), built like the LSTM kernel
// (lstm_kernel.cc): the input projections of every step in one product, then per step the
// recurrent product on R packed in column panels with the step's projections added, and the
// Highway tanh (UnaryF32). Anything else (other activations, clip, layout 1, sequence_lens,
// weights computed at run time) stays on the reference kernel.
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/fast_kernel.h"
#include "kernels/common/recurrent_weights.h"
#include "kernels/common/simd_kernels.h"
#include "kernels/op_helpers.h"

namespace onyx::kernels::common {
namespace {

class RnnKernel : public FastKernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>& types,
                                                  const KernelCreateInfo& info,
                                                  std::unique_ptr<Kernel> fallback) {
    auto k = std::unique_ptr<RnnKernel>(new RnnKernel(std::move(fallback)));
    ONYX_RETURN_IF_ERROR(k->Init(node, types, info));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status Run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(kRecurrentX);
    // Sequence lengths and anything not as planned go to the reference kernel.
    std::optional<RecurrentRun> run = BeginRecurrentRun(ctx, rw_);
    if (!run) return Fallback(ctx);
    const int64_t s_len = run->s_len, batch = run->batch;
    const int64_t h = rw_.hidden;
    Tensor& y = run->y;
    Tensor& y_h = run->y_h;

    // xw: every step's input projections plus both biases; pre: one step's pre-activations.
    std::vector<float> xw(static_cast<size_t>(s_len * batch * h));
    std::vector<float> pre(static_cast<size_t>(batch * h));
    std::vector<float> hs(static_cast<size_t>(batch * h));
    const int threads = ctx.intra_op_threads();
    for (int64_t d = 0; d < rw_.dirs; ++d) {
      const bool reverse = rw_.dirs == 2 ? d == 1 : rw_.reverse;
      if (s_len * batch > 0)
        PanelWeightsProduct(w_[d], x.data<float>(), s_len * batch, rw_.input, bias_[d].data(),
                            nullptr, xw.data(), h, threads);
      InitialHidden(ctx, d, batch, h, hs.data());
      for (int64_t step = 0; step < s_len; ++step) {
        const int64_t t = reverse ? s_len - 1 - step : step;
        // H_t = tanh(H_{t-1} R^T + (X_t W^T + Wb + Rb))
        PanelWeightsProduct(r_[d], hs.data(), batch, h, nullptr, xw.data() + t * batch * h,
                            pre.data(), h, threads);
        UnaryF32(UnaryOp::kTanh, UnaryParams{}, pre.data(), hs.data(), batch * h);
        if (y.defined())
          std::memcpy(y.data<float>() + (t * rw_.dirs + d) * batch * h, hs.data(),
                      hs.size() * sizeof(float));
      }
      if (y_h.defined())
        std::memcpy(y_h.data<float>() + d * batch * h, hs.data(), hs.size() * sizeof(float));
    }
    return Status::Ok();
  }

 private:
  explicit RnnKernel(std::unique_ptr<Kernel> fallback) : FastKernel(std::move(fallback)) {}

  Status Init(const NodeView& node, const std::vector<TypeInfo>& types,
              const KernelCreateInfo& info) {
    ONYX_ASSIGN_OR_RETURN(const RecurrentWeights rw, ReadRecurrentWeights(node, types, info, 1));
    const Tensor *w = rw.w, *r = rw.r, *b = rw.b;
    rw_ = rw;
    rw_.w = rw_.r = rw_.b = nullptr;  // plan constants: read here only
    const int64_t h = rw_.hidden;
    for (int64_t d = 0; d < rw_.dirs; ++d) {
      w_.push_back(PackPanelWeights(w->data<float>() + d * h * rw_.input, h, rw_.input));
      r_.push_back(PackPanelWeights(r->data<float>() + d * h * h, h, h));
      std::vector<float> bias(static_cast<size_t>(h), 0.f);
      if (b)
        for (int64_t j = 0; j < h; ++j)
          bias[j] = b->data<float>()[d * 2 * h + j] + b->data<float>()[d * 2 * h + h + j];
      bias_.push_back(std::move(bias));
    }
    return Status::Ok();
  }

  RecurrentWeights rw_;                   // dims, direction and the planned W and R shapes
  std::vector<PanelWeights> w_, r_;       // per direction
  std::vector<std::vector<float>> bias_;  // per direction: Wb + Rb
};

// What the fast kernel computes exactly as the reference does, up to float summation order.
Status RnnSupports(const NodeView& node, const std::vector<TypeInfo>& types) {
  return RecurrentSupports(node, types, {"Tanh"}, false);
}

}  // namespace

KernelEntry RnnHwyKernel() {
  return WithFallback("RNN_f32_hwy", HighwayIsa(), RnnSupports,
                      FastCreateWithInfoFn(RnnKernel::Create));
}

}  // namespace onyx::kernels::common
