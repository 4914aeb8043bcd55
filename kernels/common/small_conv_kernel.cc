// Convolutions with few output positions (N x output spatial size <= kMaxPositions), 1-D or 2-D,
// ungrouped: each position's window gathered into a row (im2col), then one pass over the weights
// packed in column panels (PanelGemvF32). A voice-activity detector's learned STFT (1 -> 258
// channels, kernel 256, 4 positions) took 21 us on oneDNN and its 3-tap encoder convolutions 3-17
// us: primitives built for large maps, where these read a weight once and are done. Conv, com.onyx
// FusedConv (bias, residual, activation) and NhwcConv; x86 puts it in front of oneDNN.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/fast_kernel.h"
#include "kernels/common/simd_kernels.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/conv_pool.h"
#include "kernels/reference/fused.h"

namespace onyx::kernels::common {
namespace {

// Beyond this many output positions oneDNN's blocked kernels reuse each weight over enough rows
// to win.
constexpr int64_t kMaxPositions = 8;

class SmallConvKernel : public FastKernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>& types,
                                                  const KernelCreateInfo& info,
                                                  std::unique_ptr<Kernel> fallback) {
    auto k = std::unique_ptr<SmallConvKernel>(new SmallConvKernel(std::move(fallback)));
    ONYX_RETURN_IF_ERROR(k->Init(node, types, info));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status Run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const bool has_b = ctx.num_inputs() > 2 && ctx.has_input(2);
    const bool has_z = ctx.num_inputs() > 3 && ctx.has_input(3);
    if (x.dtype() != DType::kFloat || x.shape() != x_shape_ || w.shape() != w_shape_ ||
        (has_b && (ctx.input(2).dtype() != DType::kFloat || ctx.input(2).numel() != m_)) ||
        (has_z && (ctx.input(3).dtype() != DType::kFloat || ctx.input(3).shape() != y_shape_)))
      return Fallback(ctx);
    PanelWeights run_weights;
    const PanelWeights* packed = &packed_;
    if (packed_.empty()) {
      run_weights = PackPanelWeights(w.data<float>(), m_, k_);
      packed = &run_weights;
    }
    // Rows of the product: one per output position, its window in W's (c, taps) order.
    std::vector<float> rows(static_cast<size_t>(positions_ * k_));
    Gather(x.data<float>(), rows.data());
    Tensor y = ctx.Output(0, DType::kFloat, y_shape_);
    // The planner may give Y the residual's buffer (NhwcConv's inplace_input): Z is read after
    // the product is written, so it is kept aside first (few positions: a small copy).
    const float* z = has_z ? ctx.input(3).data<float>() : nullptr;
    std::vector<float> z_copy;
    if (z != nullptr && z == y.data<float>()) {
      z_copy.assign(z, z + y.numel());
      z = z_copy.data();
    }
    // Channels-last output is the product's [positions, M] as it is; channels-first is its
    // transpose per image.
    std::vector<float> tmp;
    float* out = y.data<float>();
    if (!channels_last_) {
      tmp.resize(static_cast<size_t>(positions_ * m_));
      out = tmp.data();
    }
    PanelWeightsProduct(*packed, rows.data(), positions_, k_,
                        has_b ? ctx.input(2).data<float>() : nullptr, nullptr, out, m_,
                        ctx.intra_op_threads());
    if (!channels_last_) {
      const int64_t per_image = positions_ / x_shape_[0];
      float* dst = y.data<float>();
      for (int64_t n = 0; n < x_shape_[0]; ++n)
        for (int64_t p = 0; p < per_image; ++p)
          for (int64_t m = 0; m < m_; ++m)
            dst[(n * m_ + m) * per_image + p] = tmp[(n * per_image + p) * m_ + m];
    }
    if (act_.kind != ActivationKind::kNone || has_z)
      ApplyFusedActivation(act_, y.data<float>(), z, y.numel(), 1);
    return Status::Ok();
  }

 private:
  explicit SmallConvKernel(std::unique_ptr<Kernel> fallback) : FastKernel(std::move(fallback)) {}

  // rows[p, (c, taps)] = X at output position p's window tap, 0 in the padding.
  void Gather(const float* x, float* rows) const {
    const std::vector<int64_t>& in = g_.in;
    const int64_t n_img = x_shape_[0], taps = g_.KernelSize();
    const int64_t ih = in[0], iw = in.size() > 1 ? in[1] : 1;
    const int64_t oh = g_.out[0], ow = g_.out.size() > 1 ? g_.out[1] : 1;
    const int64_t kh = g_.kernel[0], kw = g_.kernel.size() > 1 ? g_.kernel[1] : 1;
    const int64_t sh = g_.strides[0], sw = g_.strides.size() > 1 ? g_.strides[1] : 1;
    const int64_t dh = g_.dilations[0], dw = g_.dilations.size() > 1 ? g_.dilations[1] : 1;
    const int64_t ph = g_.pad_begin[0], pw = g_.pad_begin.size() > 1 ? g_.pad_begin[1] : 0;
    int64_t p = 0;
    for (int64_t n = 0; n < n_img; ++n)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox, ++p) {
          float* row = rows + p * k_;
          for (int64_t c = 0; c < c_; ++c)
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t y = oy * sh - ph + ky * dh, xx = ox * sw - pw + kx * dw;
                float v = 0.f;
                if (y >= 0 && y < ih && xx >= 0 && xx < iw)
                  v = channels_last_ ? x[((n * ih + y) * iw + xx) * c_ + c]
                                     : x[((n * c_ + c) * ih + y) * iw + xx];
                row[c * taps + ky * kw + kx] = v;
              }
        }
  }

  Status Init(const NodeView& node, const std::vector<TypeInfo>& types,
              const KernelCreateInfo& info) {
    channels_last_ = IsChannelsLastConv(node);
    x_shape_ = types[0].static_shape();
    w_shape_ = types[1].static_shape();
    const std::vector<int64_t> xl = ChannelsFirstDims(x_shape_, channels_last_);
    c_ = xl[1];
    m_ = w_shape_[0];
    std::vector<int64_t> spatial(xl.begin() + 2, xl.end());
    std::vector<int64_t> kernel(w_shape_.begin() + 2, w_shape_.end());
    ONYX_ASSIGN_OR_RETURN(g_, ResolveWindow(node, spatial, kernel, false));
    for (int64_t o : g_.out)
      if (o <= 0) return node.NotSupported("empty output");
    positions_ = xl[0] * g_.OutSize();
    if (positions_ > kMaxPositions)
      return node.NotSupported("more than ", kMaxPositions, " output positions");
    k_ = c_ * g_.KernelSize();
    if (channels_last_) {
      y_shape_ = {xl[0]};
      y_shape_.insert(y_shape_.end(), g_.out.begin(), g_.out.end());
      y_shape_.push_back(m_);
    } else {
      y_shape_ = {xl[0], m_};
      y_shape_.insert(y_shape_.end(), g_.out.begin(), g_.out.end());
    }
    if (types.size() > 3 && types[3].kind != TypeInfo::Kind::kUnknown &&
        types[3].static_shape() != y_shape_)
      return node.NotSupported("residual must have the output's shape");
    ONYX_ASSIGN_OR_RETURN(act_, ParseFusedActivation(node));
    const Tensor* w = info.constants.size() > 1 ? info.constants[1] : nullptr;
    if (w) packed_ = PackPanelWeights(w->data<float>(), m_, k_);
    return Status::Ok();
  }

  bool channels_last_ = false;
  Shape x_shape_, w_shape_, y_shape_;
  WindowGeometry g_;
  int64_t c_ = 0, m_ = 0, k_ = 0, positions_ = 0;
  FusedActivation act_;
  PanelWeights packed_;  // W in column panels when constant; else packed per run
};

Status SmallConvSupports(const NodeView& node, const std::vector<TypeInfo>& types) {
  if (types.size() < 2 || !IsFloatStatic(types[0]) || !IsFloatStatic(types[1]))
    return node.NotSupported("needs float32 X and W with static shapes");
  const int64_t rank = types[0].rank();
  if ((rank != 3 && rank != 4) || types[1].rank() != rank)
    return node.NotSupported("needs 1-D or 2-D spatial input");
  const std::vector<int64_t> xl =
      ChannelsFirstDims(types[0].static_shape(), IsChannelsLastConv(node));
  const Shape w = types[1].static_shape();
  if (node.attr_int("group", 1) != 1 || w[1] != xl[1]) return node.NotSupported("grouped");
  for (int64_t d : xl)
    if (d == 0) return node.NotSupported("empty input");
  if (Present(types, 2) && !(IsFloatStatic(types[2]) && types[2].static_shape() == Shape{w[0]}))
    return node.NotSupported("bias must be float32 [M]");
  if (Present(types, 3) && !IsFloatStatic(types[3]))
    return node.NotSupported("residual must be a float32 tensor of static shape");
  return ParseFusedActivation(node).status();
}

}  // namespace

KernelEntry SmallConvHwyKernel(const std::string& op) {
  return WithFallback(op + "_f32_small_hwy", HighwayIsa(), SmallConvSupports,
                      FastCreateWithInfoFn(SmallConvKernel::Create));
}

}  // namespace onyx::kernels::common
