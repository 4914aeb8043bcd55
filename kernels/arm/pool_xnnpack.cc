// com.onyx NhwcMaxPool and NhwcAveragePool (2-D, float32) on XNNPACK's pooling operators.
// ceil_mode becomes extra bottom/right padding, which XNNPACK leaves out of both the maximum and
// the average's count, as ONNX does. count_include_pad = 0 is XNNPACK's own average over the
// input pixels of each window; count_include_pad = 1 with explicit pads runs on a zero-padded
// copy of X without pads (every window then counts kh * kw), and is refused when ceil_mode
// extends a window past the pads (ONNX counts only up to the pads there). A window over the whole
// map with no pads runs as XNNPACK's global average pooling.
#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>

#include "kernels/arm/xnnpack_context.h"
#include "kernels/arm/xnnpack_kernels.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/conv_pool.h"

namespace onyx::kernels::arm {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The pooling as XNNPACK takes it: pads per side (ceil_mode's extension included).
struct PoolPlan {
  Shape x, y;  // [N, H, W, C]
  int64_t kernel[2] = {1, 1}, stride[2] = {1, 1}, dilation[2] = {1, 1};
  int64_t pad_begin[2] = {0, 0}, pad_end[2] = {0, 0};  // XNNPACK's, ceil_mode's extra included
  bool pad_input = false;  // average with count_include_pad over explicit pads: pad X ourselves
  bool global = false;     // the window covers the whole unpadded map
};

StatusOr<PoolPlan> Resolve(const NodeView& node, const std::vector<TypeInfo>& types, bool max) {
  ONYX_RETURN_IF_ERROR(XnnpackReady(node));
  if (types.empty() || !IsFloatStatic(types[0])) return node.NotSupported("needs float32 X");
  PoolPlan p;
  p.x = types[0].static_shape();
  if (p.x.size() != 4) return node.NotSupported("needs 2-D spatial input");
  for (int64_t d : p.x)
    if (d == 0 || d > std::numeric_limits<uint32_t>::max())
      return node.NotSupported("empty or too large input");
  const std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
  if (kernel.size() != 2) return node.NotSupported("kernel_shape must have 2 values");
  ONYX_ASSIGN_OR_RETURN(WindowGeometry g, ResolveWindow(node, {p.x[1], p.x[2]}, kernel, true));
  if (g.out[0] <= 0 || g.out[1] <= 0) return node.NotSupported("empty output");
  if (kernel[0] * kernel[1] == 1) return node.NotSupported("a 1x1 window (XNNPACK refuses it)");
  const bool include_pad = !max && node.attr_int("count_include_pad", 0) != 0;
  p.y = {p.x[0], g.out[0], g.out[1], p.x[3]};
  for (int a = 0; a < 2; ++a) {
    p.kernel[a] = kernel[a];
    p.stride[a] = g.strides[a];
    p.dilation[a] = g.dilations[a];
    if (!max && g.dilations[a] != 1) return node.NotSupported("dilated average pooling");
    const bool padded =
        g.pad_begin[a] || g.pad_end[a] ||
        g.out[a] != (g.in[a] - (kernel[a] - 1) * g.dilations[a] - 1) / g.strides[a] + 1;
    // XNNPACK's max pooling reads a padding tap as the nearest edge pixel, which a dilated
    // window may not contain.
    if (max && g.dilations[a] != 1 && padded)
      return node.NotSupported("dilated max pooling with padding");
    const int64_t span = (kernel[a] - 1) * g.dilations[a] + 1;
    // The first and last windows must each hold an input pixel (else XNNPACK's average divides
    // by zero where ONNX gives 0).
    if (g.pad_begin[a] >= span || (g.out[a] - 1) * g.strides[a] - g.pad_begin[a] >= g.in[a])
      return node.NotSupported("a window lies wholly in the padding");
    // Bottom/right padding that gives XNNPACK's floor rule ONNX's output size (ceil_mode).
    const int64_t needed = (g.out[a] - 1) * g.strides[a] + span - g.in[a] - g.pad_begin[a];
    p.pad_begin[a] = g.pad_begin[a];
    p.pad_end[a] = std::max(needed, g.pad_end[a]);
    if ((g.in[a] + p.pad_begin[a] + p.pad_end[a] - span) / g.strides[a] + 1 != g.out[a])
      return node.NotSupported("output size XNNPACK cannot match");
    if (include_pad && p.pad_end[a] > g.pad_end[a])
      return node.NotSupported("count_include_pad with ceil_mode windows past the pads");
    if (include_pad && (g.pad_begin[a] || g.pad_end[a])) p.pad_input = true;
  }
  p.global = !max && p.kernel[0] == p.x[1] && p.kernel[1] == p.x[2] && p.y[1] == 1 && p.y[2] == 1 &&
             !p.pad_begin[0] && !p.pad_begin[1] && !p.pad_end[0] && !p.pad_end[1];
  return p;
}

class PoolXnnpack : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>& types, bool max) {
    auto k = std::unique_ptr<PoolXnnpack>(new PoolXnnpack());
    ONYX_RETURN_IF_ERROR(k->Init(node, types, max));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  std::string variant() const override { return p_.global ? "global" : ""; }

  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DType::kFloat || x.shape() != p_.x)
      return node.Fail("input shapes changed after planning");
    Tensor y = ctx.Output(0, DType::kFloat, p_.y);
    const float* in = x.data<float>();
    int64_t h = p_.x[1], w = p_.x[2];
    const int64_t c = p_.x[3];
    std::vector<float> padded;
    if (p_.pad_input) {  // X inside zeros: count_include_pad's divisor is then kh * kw
      const int64_t ph = h + p_.pad_begin[0] + p_.pad_end[0];
      const int64_t pw = w + p_.pad_begin[1] + p_.pad_end[1];
      padded.assign(static_cast<size_t>(p_.x[0] * ph * pw * c), 0.f);
      for (int64_t b = 0; b < p_.x[0]; ++b)
        for (int64_t r = 0; r < h; ++r)
          std::memcpy(&padded[((b * ph + r + p_.pad_begin[0]) * pw + p_.pad_begin[1]) * c],
                      in + (b * h + r) * w * c, static_cast<size_t>(w * c) * sizeof(float));
      in = padded.data();
      h = ph, w = pw;
    }
    std::lock_guard<std::mutex> lock(mu_);
    pthreadpool_t pool = XnnpackPool(ctx.intra_op_threads());
    xnn_status s;
    if (p_.global)
      s = xnn_setup_global_average_pooling_nwc_f32(op_.get(), p_.x[0], h * w, in, y.data<float>(),
                                                   pool);
    else if (max_)
      s = xnn_setup_max_pooling2d_nhwc_f32(op_.get(), p_.x[0], h, w, in, y.data<float>(), pool);
    else
      s = xnn_setup_average_pooling2d_nhwc_f32(op_.get(), p_.x[0], h, w, in, y.data<float>(), pool);
    ONYX_RETURN_IF_ERROR(FromXnnStatus(node, s, "pooling setup", false));
    return FromXnnStatus(node, xnn_run_operator(op_.get(), pool), "pooling run", false);
  }

 private:
  Status Init(const NodeView& node, const std::vector<TypeInfo>& types, bool max) {
    ONYX_ASSIGN_OR_RETURN(p_, Resolve(node, types, max));
    max_ = max;
    const int64_t c = p_.x[3];
    // Pads already in the padded copy are not XNNPACK's.
    const bool xp = !p_.pad_input;
    const uint32_t top = xp ? p_.pad_begin[0] : 0, left = xp ? p_.pad_begin[1] : 0;
    const uint32_t bottom = xp ? p_.pad_end[0] : 0, right = xp ? p_.pad_end[1] : 0;
    xnn_operator_t op = nullptr;
    xnn_status s;
    if (p_.global)
      s = xnn_create_global_average_pooling_nwc_f32(c, c, c, -kInf, kInf, XNN_FLAG_YIELD_WORKERS,
                                                    &op);
    else if (max)
      s = xnn_create_max_pooling2d_nhwc_f32(
          top, right, bottom, left, p_.kernel[0], p_.kernel[1], p_.stride[0], p_.stride[1],
          p_.dilation[0], p_.dilation[1], c, c, c, -kInf, kInf, XNN_FLAG_YIELD_WORKERS, &op);
    else
      s = xnn_create_average_pooling2d_nhwc_f32(top, right, bottom, left, p_.kernel[0],
                                                p_.kernel[1], p_.stride[0], p_.stride[1], c, c, c,
                                                -kInf, kInf, XNN_FLAG_YIELD_WORKERS, &op);
    op_.reset(op);
    return FromXnnStatus(node, s, "pooling creation", true);
  }

  PoolPlan p_;
  bool max_ = false;
  XnnOperator op_;
  mutable std::mutex mu_;
};

Status MaxPoolSupports(const NodeView& node, const std::vector<TypeInfo>& types) {
  if (node.attr_int("storage_order", 0) != 0) return node.NotSupported("storage_order");
  return Resolve(node, types, true).status();
}
Status AveragePoolSupports(const NodeView& node, const std::vector<TypeInfo>& types) {
  return Resolve(node, types, false).status();
}

KernelImpl PoolImpl(const std::string& name, bool max) {
  return XnnpackImpl(
      name, max ? MaxPoolSupports : AveragePoolSupports,
      [max](const NodeView& node, const std::vector<TypeInfo>& types, const KernelCreateInfo&) {
        return PoolXnnpack::Create(node, types, max);
      });
}

}  // namespace

KernelImpl MaxPoolXnnpackImpl(const std::string& name) {
  return PoolImpl(name, true);
}
KernelImpl AveragePoolXnnpackImpl(const std::string& name) {
  return PoolImpl(name, false);
}

}  // namespace onyx::kernels::arm
