// SIMD versions of the planner's per-row, per-channel and elementwise fused ops: com.onyx
// SkipLayerNormalization, ChannelAffine (channels at axis 1), NhwcChannelAffine (channels last,
// placed by the layout pass) and ReplaceNaN. They read the same attributes as the reference kernels
// in kernels/reference/fused.cc and layout.cc, which stay the fallback for other types and shapes.
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/fast_kernel.h"
#include "kernels/common/simd_kernels.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/fused.h"

namespace onyx::kernels::common {
namespace {

bool IsF32(const TypeInfo& t) {
  return t.is_tensor() && t.elem == DType::kFloat;
}
bool IsF32Vector(const Tensor* t, int64_t n) {
  return t && t->dtype() == DType::kFloat && t->numel() == n && t->rank() <= 1;
}

// y = act(x * scale[c] + shift[c]); `channels_last` puts c on the last axis, else on axis 1.
class ChannelAffineKernel : public FastKernel {
 public:
  ChannelAffineKernel(std::unique_ptr<Kernel> fallback, FusedActivation act, bool channels_last)
      : FastKernel(std::move(fallback)), act_(act), channels_last_(channels_last) {
    has_act_ = ToUnary(act, &op_, &params_);
  }

  Status Run(KernelContext& ctx) const override {
    if (ctx.num_inputs() < 3 || !ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2))
      return Fallback(ctx);
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DType::kFloat || x.rank() < 2) return Fallback(ctx);
    const int64_t channels = channels_last_ ? x.dim(x.rank() - 1) : x.dim(1);
    const Tensor& scale = ctx.input(1);
    const Tensor& shift = ctx.input(2);
    if (!IsF32Vector(&scale, channels) || !IsF32Vector(&shift, channels)) return Fallback(ctx);
    Tensor y = ctx.Output(0, DType::kFloat, x.shape());
    const float* src = x.data<float>();
    float* dst = y.data<float>();
    const float* s = scale.data<float>();
    const float* t = shift.data<float>();
    if (channels == 0 || x.numel() == 0) return Status::Ok();
    // Rows of `inner` elements sharing one channel (NCHW) or rows of all channels (NHWC).
    const int64_t rows = channels_last_ ? x.numel() / channels : x.dim(0) * channels;
    const int64_t inner = x.numel() / rows;
    const int threads = ThreadsFor(x.numel(), ctx.intra_op_threads());
    ParallelFor(rows, inner, threads, [&](int64_t r0, int64_t r1) {
      // Rows r0..r1 are one contiguous block: the affine row by row, the activation in one go.
      if (channels_last_) {
        ChannelAffineLastF32(src + r0 * inner, dst + r0 * inner, r1 - r0, channels, s, t);
      } else {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t c = r % channels;
          ChannelAffineF32(src + r * inner, dst + r * inner, 1, 1, inner, &s[c], &t[c]);
        }
      }
      if (has_act_) UnaryF32(op_, params_, dst + r0 * inner, dst + r0 * inner, (r1 - r0) * inner);
    });
    return Status::Ok();
  }

 private:
  FusedActivation act_;
  bool channels_last_;
  bool has_act_ = false;
  UnaryOp op_ = UnaryOp::kRelu;
  UnaryParams params_;
};

// LayerNorm(X + Skip (+ Bias)) over the last axis, with Gamma and optional Beta.
class SkipLayerNormKernel : public FastKernel {
 public:
  explicit SkipLayerNormKernel(std::unique_ptr<Kernel> fallback)
      : FastKernel(std::move(fallback)) {}

  Status Run(KernelContext& ctx) const override {
    if (ctx.num_inputs() < 3 || !ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2))
      return Fallback(ctx);
    const Tensor& x = ctx.input(0);
    const Tensor& skip = ctx.input(1);
    if (x.dtype() != DType::kFloat || skip.dtype() != DType::kFloat || x.rank() < 1 ||
        skip.shape() != x.shape())
      return Fallback(ctx);
    const int64_t cols = x.dim(x.rank() - 1);
    const Tensor* gamma = &ctx.input(2);
    const Tensor* beta = ctx.num_inputs() > 3 && ctx.has_input(3) ? &ctx.input(3) : nullptr;
    const Tensor* bias = ctx.num_inputs() > 4 && ctx.has_input(4) ? &ctx.input(4) : nullptr;
    if (cols == 0 || !IsF32Vector(gamma, cols) || (beta && !IsF32Vector(beta, cols)) ||
        (bias && !IsF32Vector(bias, cols)))
      return Fallback(ctx);
    const double epsilon = ctx.node().attr_float("epsilon", 1e-5f);
    Tensor y = ctx.Output(0, DType::kFloat, x.shape());
    const float* xs = x.data<float>();
    const float* ss = skip.data<float>();
    const float* b = bias ? bias->data<float>() : nullptr;
    float* dst = y.data<float>();
    const int64_t rows = x.numel() / cols;
    const int threads = ThreadsFor(x.numel() * 4, ctx.intra_op_threads());
    ParallelFor(rows, cols * 4, threads, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* xr = xs + r * cols;
        const float* sr = ss + r * cols;
        float* out = dst + r * cols;
        // The sum first (element j is read before it is written when Y aliases X).
        if (b) {
          for (int64_t j = 0; j < cols; ++j) out[j] = xr[j] + sr[j] + b[j];
        } else {
          for (int64_t j = 0; j < cols; ++j) out[j] = xr[j] + sr[j];
        }
      }
      LayerNormRowsF32(dst + r0 * cols, dst + r0 * cols, r1 - r0, cols, gamma->data<float>(),
                       beta ? beta->data<float>() : nullptr, epsilon, nullptr, nullptr);
    });
    return Status::Ok();
  }
};

// The reference impl of the op (its last impl), created for the same node.
StatusOr<std::unique_ptr<Kernel>> ReferenceFor(const std::string& op, const NodeView& node,
                                               const std::vector<TypeInfo>& types) {
  const OpDef* def = OpRegistry::Global().Find(kOnyxDomain, op, kOnyxOpset);
  if (!def || def->impls.empty()) return node.NotSupported("no reference kernel for ", op);
  return def->impls.back().create(node, types);
}

}  // namespace

KernelImpl ChannelAffineHwyKernel(bool channels_last) {
  const std::string op = channels_last ? "NhwcChannelAffine" : "ChannelAffine";
  KernelImpl impl;
  impl.name = op + "_f32_hwy";
  impl.isa = HighwayIsa();
  impl.supports = [](const NodeView& node, const std::vector<TypeInfo>& types) {
    if (types.size() < 3 || !IsF32(types[0]) || !IsF32(types[1]) || !IsF32(types[2]))
      return node.NotSupported("needs float32 X, Scale and Shift");
    return ParseFusedActivation(node).status();
  };
  impl.create = [op, channels_last](
                    const NodeView& node,
                    const std::vector<TypeInfo>& types) -> StatusOr<std::unique_ptr<Kernel>> {
    ONYX_ASSIGN_OR_RETURN(FusedActivation act, ParseFusedActivation(node));
    ONYX_ASSIGN_OR_RETURN(auto fallback, ReferenceFor(op, node, types));
    return std::unique_ptr<Kernel>(
        new ChannelAffineKernel(std::move(fallback), act, channels_last));
  };
  return impl;
}

KernelImpl SkipLayerNormHwyKernel() {
  KernelImpl impl;
  impl.name = "SkipLayerNormalization_f32_hwy";
  impl.isa = HighwayIsa();
  impl.supports = [](const NodeView& node, const std::vector<TypeInfo>& types) {
    if (types.size() < 3 || !IsF32(types[0]) || !IsF32(types[1]) || !IsF32(types[2]))
      return node.NotSupported("needs float32 X, Skip and Gamma");
    return Status::Ok();
  };
  impl.create = [](const NodeView& node,
                   const std::vector<TypeInfo>& types) -> StatusOr<std::unique_ptr<Kernel>> {
    ONYX_ASSIGN_OR_RETURN(auto fallback, ReferenceFor("SkipLayerNormalization", node, types));
    return std::unique_ptr<Kernel>(new SkipLayerNormKernel(std::move(fallback)));
  };
  return impl;
}

KernelImpl ReplaceNaNHwyKernel() {
  KernelImpl impl;
  impl.name = "ReplaceNaN_f32_hwy";
  impl.isa = HighwayIsa();
  impl.supports = [](const NodeView& node, const std::vector<TypeInfo>& types) {
    if (types.empty() || !IsF32(types[0])) return node.NotSupported("needs float32 X");
    return Status::Ok();
  };
  impl.create = [](const NodeView& node,
                   const std::vector<TypeInfo>& types) -> StatusOr<std::unique_ptr<Kernel>> {
    ONYX_ASSIGN_OR_RETURN(auto fallback, ReferenceFor("ReplaceNaN", node, types));
    UnaryParams params;
    params.alpha = node.attr_float("value", 0.f);
    return NewUnaryKernel(std::move(fallback), UnaryOp::kNanTo, params, /*work=*/1);
  };
  return impl;
}

}  // namespace onyx::kernels::common
