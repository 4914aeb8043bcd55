// com.onyx NhwcConv on XNNPACK's convolution2d_nhwc_f32: grouped, depthwise (XNNPACK picks its
// depthwise micro-kernels itself when each group has one input channel), padded, strided and
// dilated 2-D convolutions with bias. The operator, with its packed weights, is created once at
// plan time from constant W and B, and shared by the session's shape plans (the input size is
// given at setup). Relu and Clip become the operator's output clamp; a residual
// Z and the other activations are applied in one pass afterwards (ApplyFusedActivation, as the
// reference kernel does).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>

#include "kernels/arm/xnnpack_context.h"
#include "kernels/arm/xnnpack_kernels.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/conv_pool.h"
#include "kernels/reference/fused.h"

namespace onyx::kernels::arm {
namespace {

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

bool FitsU32(int64_t v) {
  return v >= 0 && v <= std::numeric_limits<uint32_t>::max();
}

// The output clamp XNNPACK applies for `act`, when that is all `act` does. Clip needs lo < hi:
// XNNPACK rejects an empty range, which Clip defines (every output is `max`).
bool AsClamp(const FusedActivation& act, float* lo, float* hi) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  if (act.kind == ActivationKind::kNone) {
    *lo = -kInf, *hi = kInf;
    return true;
  }
  if (act.kind == ActivationKind::kRelu) {
    *lo = 0.f, *hi = kInf;
    return true;
  }
  if (act.kind == ActivationKind::kClip && act.alpha < act.beta) {
    *lo = act.alpha, *hi = act.beta;
    return true;
  }
  return false;
}

class ConvXnnpack : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>& types,
                                                  const KernelCreateInfo& info) {
    auto k = std::unique_ptr<ConvXnnpack>(new ConvXnnpack());
    ONYX_RETURN_IF_ERROR(k->Init(node, types, info));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  // W and B live in the operator's packed buffer; a run reads only their shapes.
  bool packed_input(size_t i) const override { return i == 1 || i == 2; }

  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DType::kFloat || x.shape() != x_shape_ || ctx.input(1).shape() != w_shape_)
      return node.Fail("input shapes changed after planning");
    const float* z = nullptr;
    if (has_residual_) {
      if (ctx.input(3).shape() != y_shape_)
        return node.Fail("input 3 (Z) shape changed after planning");
      z = ctx.input(3).data<float>();
    }
    Tensor y = ctx.Output(0, DType::kFloat, y_shape_);
    return RunWithEpilogue(
        ctx, *op_, y, z, act_, epilogue_,
        [&](float* out, pthreadpool_t pool) {
          return xnn_setup_convolution2d_nhwc_f32(op_->op.get(), x_shape_[0], x_shape_[1],
                                                  x_shape_[2], x.data<float>(), out, pool);
        },
        "convolution");
  }

 private:
  Status Init(const NodeView& node, const std::vector<TypeInfo>& types,
              const KernelCreateInfo& info) {
    ONYX_RETURN_IF_ERROR(XnnpackReady(node));
    x_shape_ = types[0].static_shape();
    w_shape_ = types[1].static_shape();
    const Tensor* w = info.constants.size() > 1 ? info.constants[1] : nullptr;
    if (!w) return node.NotSupported("XNNPACK needs constant weights (input 1)");
    const Tensor* b = nullptr;
    if (Present(types, 2)) {
      b = info.constants.size() > 2 ? info.constants[2] : nullptr;
      if (!b) return node.NotSupported("XNNPACK needs a constant bias (input 2)");
    }
    has_residual_ = Present(types, 3);
    const int64_t c = x_shape_[3], m = w_shape_[0], group = node.attr_int("group", 1);
    const int64_t cg = c / group, mg = m / group, kh = w_shape_[2], kw = w_shape_[3];
    ONYX_ASSIGN_OR_RETURN(WindowGeometry g,
                          ResolveWindow(node, {x_shape_[1], x_shape_[2]}, {kh, kw}, false));
    y_shape_ = {x_shape_[0], g.out[0], g.out[1], m};
    ONYX_ASSIGN_OR_RETURN(act_, ParseFusedActivation(node));
    float lo = 0, hi = 0;
    const bool clamp = !has_residual_ && AsClamp(act_, &lo, &hi);
    if (!clamp) {
      lo = -std::numeric_limits<float>::infinity();
      hi = std::numeric_limits<float>::infinity();
    }
    epilogue_ = !clamp && act_.kind != ActivationKind::kNone;
    // Everything the operator depends on besides W's values (the cache's key holds W).
    const std::string key = StrCat(
        "conv:", g.pad_begin[0], ",", g.pad_end[1], ",", g.pad_end[0], ",", g.pad_begin[1], ":", kh,
        "x", kw, ":", g.strides[0], ",", g.strides[1], ":", g.dilations[0], ",", g.dilations[1],
        ":", group, ":", cg, ":", mg, ":", FloatBits(lo), ",", FloatBits(hi), ":", ContentKey(b));
    ONYX_ASSIGN_OR_RETURN(
        op_, ShareOperator(
                 node, info, *w, key,
                 [&](xnn_operator_t* op) {
                   // ONNX's [M, C/group, kh, kw] as XNNPACK's [group][M/group][kh][kw][C/group].
                   std::vector<float> packed(static_cast<size_t>(w->numel()));
                   const float* wd = w->data<float>();
                   for (int64_t o = 0; o < m; ++o)
                     for (int64_t i = 0; i < cg; ++i)
                       for (int64_t t = 0; t < kh * kw; ++t)
                         packed[(o * kh * kw + t) * cg + i] = wd[(o * cg + i) * kh * kw + t];
                   return xnn_create_convolution2d_nhwc_f32(
                       g.pad_begin[0], g.pad_end[1], g.pad_end[0], g.pad_begin[1], kh, kw,
                       g.strides[0], g.strides[1], g.dilations[0], g.dilations[1], group, cg, mg, c,
                       m, packed.data(), b ? b->data<float>() : nullptr, lo, hi,
                       XNN_FLAG_YIELD_WORKERS, op);
                 },
                 "convolution creation"));
    return Status::Ok();
  }

  Shape x_shape_, w_shape_, y_shape_;
  FusedActivation act_;
  bool has_residual_ = false;
  bool epilogue_ = false;  // an activation applied after the operator (no residual either)
  std::shared_ptr<const SharedOperator> op_;  // shared with the other shape plans
};

Status ConvXnnpackSupports(const NodeView& node, const std::vector<TypeInfo>& types) {
  ONYX_RETURN_IF_ERROR(XnnpackReady(node));
  if (types.size() < 2 || !IsFloatStatic(types[0]) || !IsFloatStatic(types[1]))
    return node.NotSupported("needs float32 X and W with static shapes");
  const Shape x = types[0].static_shape(), w = types[1].static_shape();
  if (x.size() != 4 || w.size() != 4) return node.NotSupported("needs 2-D spatial input");
  for (int64_t d : x)
    if (d == 0) return node.NotSupported("empty input");
  const int64_t group = node.attr_int("group", 1), c = x[3], m = w[0];
  if (group < 1 || c % group != 0 || m % group != 0 || w[1] * group != c || m == 0)
    return node.NotSupported("channel counts do not match group");
  if (node.has_attr("kernel_shape") &&
      node.attr_ints("kernel_shape") != std::vector<int64_t>{w[2], w[3]})
    return node.NotSupported("kernel_shape differs from W's shape");
  for (int64_t v : {x[0], x[1], x[2], c, m, group, w[2], w[3]})
    if (!FitsU32(v)) return node.NotSupported("dimension too large for XNNPACK");
  if (Present(types, 2) && !(IsFloatStatic(types[2]) && types[2].static_shape() == Shape{m}))
    return node.NotSupported("bias must be float32 [M]");
  ONYX_ASSIGN_OR_RETURN(WindowGeometry g, ResolveWindow(node, {x[1], x[2]}, {w[2], w[3]}, false));
  if (g.out[0] <= 0 || g.out[1] <= 0) return node.NotSupported("empty output");
  if (Present(types, 3) &&
      !(IsFloatStatic(types[3]) && types[3].static_shape() == Shape{x[0], g.out[0], g.out[1], m}))
    return node.NotSupported("residual must be float32 with the output's shape");
  return ParseFusedActivation(node).status();
}

}  // namespace

KernelImpl ConvXnnpackImpl(const std::string& name) {
  return XnnpackImpl(name, ConvXnnpackSupports, ConvXnnpack::Create);
}

}  // namespace onyx::kernels::arm
