// GRU with constant weights and ONNX's default activations, built like the LSTM kernel
// (lstm_kernel.cc): the input projections of every step in one product, then per step the
// recurrent product on R packed in column panels and the Highway cell (gru_hwy.cc). With
// linear_before_reset = 1 (what PyTorch exports) one product on all of R per step; with 0 the
// h gate's product needs r first, so R's z and r rows and its h rows are two products. Anything
// else (custom activations, clip, layout 1, sequence_lens, weights computed at run time) stays on
// the reference kernel.
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

class GruKernel : public FastKernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>& types,
                                                  const KernelCreateInfo& info,
                                                  std::unique_ptr<Kernel> fallback) {
    auto k = std::unique_ptr<GruKernel>(new GruKernel(std::move(fallback)));
    ONYX_RETURN_IF_ERROR(k->Init(node, types, info));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status Run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(kRecurrentX);
    // Sequence lengths and anything not as planned go to the reference kernel.
    std::optional<RecurrentRun> run = BeginRecurrentRun(ctx, rw_);
    if (!run) return Fallback(ctx);
    const int64_t s_len = run->s_len, batch = run->batch;
    const int64_t h = rw_.hidden, g = 3 * rw_.hidden;
    Tensor& y = run->y;
    Tensor& y_h = run->y_h;

    // xw: every step's input projections plus the biases folded into them; hr: one step's
    // recurrent products (gates z, r, h); rh: r * H_{t-1} (linear_before_reset = 0).
    std::vector<float> xw(static_cast<size_t>(s_len * batch * g));
    std::vector<float> hr(static_cast<size_t>(batch * g));
    std::vector<float> hs(static_cast<size_t>(batch * h));
    std::vector<float> rh(linear_before_reset_ ? 0 : static_cast<size_t>(batch * h));
    const int threads = ctx.intra_op_threads();
    for (int64_t d = 0; d < rw_.dirs; ++d) {
      const Dir& p = dir_[d];
      const bool reverse = rw_.dirs == 2 ? d == 1 : rw_.reverse;
      if (s_len * batch > 0)
        PanelWeightsProduct(p.w, x.data<float>(), s_len * batch, rw_.input, p.x_bias.data(),
                            nullptr, xw.data(), g, threads);
      InitialHidden(ctx, d, batch, h, hs.data());
      for (int64_t step = 0; step < s_len; ++step) {
        const int64_t t = reverse ? s_len - 1 - step : step;
        const float* xt = xw.data() + t * batch * g;
        if (linear_before_reset_) {
          // hr = H_{t-1} R^T + [0, 0, Rbh]
          PanelWeightsProduct(p.r, hs.data(), batch, h,
                              p.h_bias.empty() ? nullptr : p.h_bias.data(), nullptr, hr.data(), g,
                              threads);
          GruCellF32(xt, hr.data(), batch, h, hs.data());
        } else {
          // hr_zr = H_{t-1} [Rz; Rr]^T, then z and r H_{t-1}, then hr_h = (r H_{t-1}) Rh^T.
          PanelWeightsProduct(p.r, hs.data(), batch, h, nullptr, nullptr, hr.data(), g, threads);
          GruResetF32(xt, hr.data(), batch, h, hs.data(), rh.data());
          PanelWeightsProduct(p.rh, rh.data(), batch, h, nullptr, nullptr, hr.data() + 2 * h, g,
                              threads);
          GruUpdateF32(xt, hr.data(), batch, h, hs.data());
        }
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
  explicit GruKernel(std::unique_ptr<Kernel> fallback) : FastKernel(std::move(fallback)) {}

  Status Init(const NodeView& node, const std::vector<TypeInfo>& types,
              const KernelCreateInfo& info) {
    ONYX_ASSIGN_OR_RETURN(const RecurrentWeights rw, ReadRecurrentWeights(node, types, info, 3));
    const Tensor *w = rw.w, *r = rw.r, *b = rw.b;
    rw_ = rw;
    rw_.w = rw_.r = rw_.b = nullptr;  // plan constants: read here only
    const int64_t h = rw_.hidden, g = 3 * rw_.hidden;
    linear_before_reset_ = node.attr_int("linear_before_reset", 0) != 0;
    for (int64_t d = 0; d < rw_.dirs; ++d) {
      Dir p;
      const float* rd = r->data<float>() + d * g * h;
      p.w = PackPanelWeights(w->data<float>() + d * g * rw_.input, g, rw_.input);
      if (linear_before_reset_) {
        p.r = PackPanelWeights(rd, g, h);
      } else {
        p.r = PackPanelWeights(rd, 2 * h, h);
        p.rh = PackPanelWeights(rd + 2 * h * h, h, h);
      }
      // Wb + Rb for z and r; Wbh for h, plus Rbh unless r multiplies it (linear_before_reset).
      p.x_bias.assign(static_cast<size_t>(g), 0.f);
      if (b) {
        const float* wb = b->data<float>() + d * 2 * g;
        const float* rb = wb + g;
        for (int64_t j = 0; j < g; ++j)
          p.x_bias[j] = wb[j] + (j < 2 * h || !linear_before_reset_ ? rb[j] : 0.f);
        if (linear_before_reset_) {
          p.h_bias.assign(static_cast<size_t>(g), 0.f);
          std::copy(rb + 2 * h, rb + g, p.h_bias.begin() + 2 * h);
        }
      }
      dir_.push_back(std::move(p));
    }
    return Status::Ok();
  }

  struct Dir {
    // linear_before_reset = 1: r is all of R; 0: r is R's z and r rows, rh its h rows.
    PanelWeights w, r, rh;
    std::vector<float> x_bias;  // [3H], added to X_t W^T
    std::vector<float> h_bias;  // [3H]: 0, 0, Rbh (linear_before_reset = 1 with B), else empty
  };

  RecurrentWeights rw_;  // dims, direction and the planned W and R shapes
  bool linear_before_reset_ = false;
  std::vector<Dir> dir_;
};

// What the fast kernel computes exactly as the reference does, up to float summation order.
Status GruSupports(const NodeView& node, const std::vector<TypeInfo>& types) {
  return RecurrentSupports(node, types, {"Sigmoid", "Tanh"}, false);
}

}  // namespace

KernelEntry GruHwyKernel() {
  return WithFallback("GRU_f32_hwy", HighwayIsa(), GruSupports,
                      FastCreateWithInfoFn(GruKernel::Create));
}

}  // namespace onyx::kernels::common
