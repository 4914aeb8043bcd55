// Float32 LayerNormalization (opset 17, optional Mean/InvStdDev outputs) and inference
// BatchNormalization over the Highway loops. Broadcast scale/bias shapes, other stash types,
// training mode and spatial=0 run on the reference kernel.
#include <cmath>
#include <string>
#include <vector>

#include "kernels/common/fast_kernel.h"
#include "kernels/common/simd_kernels.h"
#include "kernels/op_helpers.h"

namespace onyx::kernels::common {
namespace {

// Work of one element relative to a copy (three passes, two of them in double).
constexpr int64_t kLayerNormWork = 4;

// True when a parameter of shape `p` broadcast to `target` is the identity on its elements: p
// matches target's trailing dims and every leading dim of target it lacks is 1.
bool SameElements(const Shape& p, const Shape& target) {
  if (p.size() > target.size()) return false;
  const size_t lead = target.size() - p.size();
  for (size_t d = 0; d < lead; ++d)
    if (target[d] != 1) return false;
  for (size_t d = 0; d < p.size(); ++d)
    if (p[d] != target[lead + d]) return false;
  return true;
}

bool IsF32Tensor(KernelContext& ctx, int i) {
  return ctx.has_input(i) && ctx.input_value(i).is_tensor() && IsF32(ctx.input(i));
}

class LayerNormKernel : public FastKernel {
 public:
  LayerNormKernel(const NodeView&, std::unique_ptr<Kernel> fallback)
      : FastKernel(std::move(fallback)) {}

  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    if (!IsF32Tensor(ctx, 0) || !IsF32Tensor(ctx, 1)) return Fallback(ctx);
    const bool has_bias = ctx.has_input(2);
    if (has_bias && !IsF32Tensor(ctx, 2)) return Fallback(ctx);
    const Tensor& x = ctx.input(0);
    const int64_t rank = x.rank();
    int64_t axis = node.attr_int("axis", -1);
    if (rank == 0 || axis < -rank || axis >= rank) return Fallback(ctx);
    if (axis < 0) axis += rank;
    const Shape norm_shape(x.shape().begin() + axis, x.shape().end());
    const int64_t rows = ShapeElementCount(Shape(x.shape().begin(), x.shape().begin() + axis));
    const int64_t cols = ShapeElementCount(norm_shape);
    if (cols == 0 || !SameElements(ctx.input(1).shape(), norm_shape) ||
        (has_bias && !SameElements(ctx.input(2).shape(), norm_shape)))
      return Fallback(ctx);
    const bool want_stats = (ctx.num_outputs() > 1 && ctx.has_output(1)) ||
                            (ctx.num_outputs() > 2 && ctx.has_output(2));
    if (want_stats && node.attr_int("stash_type", 1) != static_cast<int64_t>(DType::kFloat))
      return Fallback(ctx);
    Tensor y = ctx.Output(0, DType::kFloat, x.shape());
    Shape stat_shape = x.shape();
    for (int64_t d = axis; d < rank; ++d) stat_shape[d] = 1;
    float* mean = nullptr;
    float* inv_std = nullptr;
    Tensor mean_t, inv_std_t;
    if (ctx.num_outputs() > 1 && ctx.has_output(1)) {
      mean_t = ctx.Output(1, DType::kFloat, stat_shape);
      mean = mean_t.data<float>();
    }
    if (ctx.num_outputs() > 2 && ctx.has_output(2)) {
      inv_std_t = ctx.Output(2, DType::kFloat, stat_shape);
      inv_std = inv_std_t.data<float>();
    }
    const float* src = x.data<float>();
    float* dst = y.data<float>();
    const float* scale = ctx.input(1).data<float>();
    const float* bias = has_bias ? ctx.input(2).data<float>() : nullptr;
    const double epsilon = node.attr_float("epsilon", 1e-5f);
    const int threads = ThreadsFor(rows * cols * kLayerNormWork, ctx.intra_op_threads());
    ParallelFor(rows, cols * kLayerNormWork, threads, [&](int64_t b, int64_t e) {
      LayerNormRowsF32(src + b * cols, dst + b * cols, e - b, cols, scale, bias, epsilon,
                       mean ? mean + b : nullptr, inv_std ? inv_std + b : nullptr);
    });
    return Status::Ok();
  }
};

Status SupportsLayerNorm(const NodeView&, const std::vector<TypeInfo>& types) {
  ONYX_RETURN_IF_ERROR(RequireInputType(types, 0, DType::kFloat));
  ONYX_RETURN_IF_ERROR(RequireInputType(types, 1, DType::kFloat));
  if (types.size() > 2 && types[2].kind != TypeInfo::Kind::kUnknown)
    ONYX_RETURN_IF_ERROR(RequireInputType(types, 2, DType::kFloat));
  return Status::Ok();
}

// Inference BatchNormalization: y = x * a[c] + b[c] with a = scale / sqrt(var + epsilon) and
// b = B - mean * a folded in double, as the reference does.
class BatchNormKernel : public FastKernel {
 public:
  BatchNormKernel(const NodeView&, std::unique_ptr<Kernel> fallback)
      : FastKernel(std::move(fallback)) {}

  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    if (!IsF32Tensor(ctx, 0)) return Fallback(ctx);
    for (int i = 1; i <= 4; ++i)
      if (!ctx.has_input(i) || !ctx.input_value(i).is_tensor()) return Fallback(ctx);
    for (int i = 1; i < ctx.num_outputs(); ++i)
      if (ctx.has_output(i)) return Fallback(ctx);  // training statistics
    const Tensor& x = ctx.input(0);
    if (x.rank() < 2) return Fallback(ctx);
    const int64_t batch = x.dim(0), channels = x.dim(1);
    const int64_t inner = x.numel() / std::max<int64_t>(batch * channels, 1);
    for (int i = 1; i <= 4; ++i)
      if (ctx.input(i).numel() != channels || !IsFloatingPoint(ctx.input(i).dtype()))
        return Fallback(ctx);
    const double epsilon = node.attr_float("epsilon", 1e-5f);
    const std::vector<double> scale = TensorToDoubles(ctx.input(1));
    const std::vector<double> bias = TensorToDoubles(ctx.input(2));
    const std::vector<double> mean = TensorToDoubles(ctx.input(3));
    const std::vector<double> var = TensorToDoubles(ctx.input(4));
    std::vector<float> a(static_cast<size_t>(channels)), b(static_cast<size_t>(channels));
    for (int64_t c = 0; c < channels; ++c) {
      const double ac = scale[c] / std::sqrt(var[c] + epsilon);
      a[c] = static_cast<float>(ac);
      b[c] = static_cast<float>(bias[c] - mean[c] * ac);
    }
    Tensor y = ctx.Output(0, DType::kFloat, x.shape());
    const float* src = x.data<float>();
    float* dst = y.data<float>();
    const int threads = ThreadsFor(x.numel(), ctx.intra_op_threads());
    ParallelFor(batch * channels, inner, threads, [&](int64_t s, int64_t e) {
      for (int64_t bc = s; bc < e; ++bc) {
        const int64_t c = bc % channels;
        ChannelAffineF32(src + bc * inner, dst + bc * inner, 1, 1, inner, &a[c], &b[c]);
      }
    });
    return Status::Ok();
  }
};

Status SupportsBatchNorm(const NodeView& node, const std::vector<TypeInfo>& types) {
  ONYX_RETURN_IF_ERROR(RequireInputType(types, 0, DType::kFloat));
  if (node.opset() < 9 && node.attr_int("spatial", 1) == 0)
    return Unsupported("spatial=0 (per-activation parameters)");
  if (node.opset() >= 14 && node.attr_int("training_mode", 0) != 0)
    return Unsupported("training_mode=1");
  const auto& outs = node.node().outputs;
  for (size_t i = 1; i < outs.size(); ++i)
    if (!outs[i].empty()) return Unsupported("training statistics outputs");
  return Status::Ok();
}

}  // namespace

KernelEntry LayerNormHwyKernel() {
  return WithFallback("LayerNormalization_f32_hwy", HighwayIsa(), SupportsLayerNorm,
                      MakeCreate<LayerNormKernel>());
}

KernelEntry BatchNormHwyKernel() {
  return WithFallback("BatchNormalization_f32_hwy", HighwayIsa(), SupportsBatchNorm,
                      MakeCreate<BatchNormKernel>());
}

}  // namespace onyx::kernels::common
