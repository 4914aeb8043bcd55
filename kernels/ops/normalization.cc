// Normalization family: BatchNormalization, InstanceNormalization, LayerNormalization,
// GroupNormalization, RMSNormalization, LpNormalization, MeanVarianceNormalization, LRN, Dropout.
// Definitions (opset ranges, shape functions, validation) live here; the loops live in
// kernels/reference/normalization.cc.
#include "kernels/reference/normalization.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"
#include "memory/aligned_alloc.h"

namespace onyx::kernels {
namespace {

const std::vector<DType> kFloatTypes = {DType::kFloat, DType::kDouble, DType::kFloat16,
                                        DType::kBFloat16};

Status RequireInputs(InferContext& ctx, int count) {
  for (int i = 0; i < count; ++i)
    if (!ctx.has_input(i)) return ctx.node().Invalid("required input ", i, " is missing");
  return Status::Ok();
}

Status ExpectFloatInputs(InferContext& ctx, std::initializer_list<int> inputs) {
  for (int i : inputs) ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, i, kFloatTypes));
  return Status::Ok();
}

// Runs f(TypeTag<T>) for X's floating element type; kUnsupported for the rest.
template <typename F>
Status ForFloat(const NodeView& node, const Tensor& t, int input, F&& f) {
  if (VisitFloat(t.dtype(), std::forward<F>(f))) return Status::Ok();
  return node.NotSupported(DescribeInput(node, input), " has type ", DTypeName(t.dtype()),
                           ", which this operator does not support");
}

Status ExpectRankAtLeast(const NodeView& node, const Tensor& t, int input, int64_t rank) {
  if (t.rank() >= rank) return Status::Ok();
  return node.Invalid(DescribeInput(node, input), " has shape ", ShapeToString(t.shape()),
                      "; expected rank >= ", rank);
}

Status ExpectNumel(const NodeView& node, const Tensor& t, int input, int64_t expected,
                   const char* what) {
  if (t.numel() == expected) return Status::Ok();
  return node.Invalid(DescribeInput(node, input), " has shape ", ShapeToString(t.shape()),
                      "; expected ", expected, " elements (", what, ")");
}

// The product of dims [begin, end): part of a tensor's shape, so it fits int64 unless the tensor
// is empty ([0, 2^40, 2^40]); then it saturates, and callers write nothing for empty inputs.
int64_t Product(const Shape& s, size_t begin, size_t end) {
  return ShapeElementCount(
      Shape(s.begin() + std::min(begin, s.size()), s.begin() + std::min(end, s.size())));
}

// Plan-time check of a parameter input's element count, when both it and `expected` are known.
Status ExpectStaticNumel(InferContext& ctx, int input, const Dim& expected, const char* what) {
  if (!ctx.has_input(input) || !expected.known()) return Status::Ok();
  const TypeInfo& t = ctx.input_type(input);
  if (!t.has_shape || !t.shape_is_static()) return Status::Ok();
  const int64_t n = ShapeElementCount(t.static_shape());
  if (n == expected.value) return Status::Ok();
  return ctx.node().Invalid(DescribeInput(ctx.node(), input), " has type ", t.ToString(),
                            "; expected ", expected.value, " elements (", what, ")");
}

// Plan-time check that X (input 0) has rank >= `rank` when its rank is known.
Status ExpectStaticRankAtLeast(InferContext& ctx, int64_t rank) {
  const TypeInfo& x = ctx.input_type(0);
  if (!x.has_shape || x.rank() >= rank) return Status::Ok();
  return ctx.node().Invalid(DescribeInput(ctx.node(), 0), " has type ", x.ToString(),
                            "; expected rank >= ", rank);
}

// Plan-time check of an axis attribute against X's rank, when known.
Status ExpectStaticAxis(InferContext& ctx, int64_t axis) {
  const TypeInfo& x = ctx.input_type(0);
  if (!x.has_shape) return Status::Ok();
  return NormalizeAxis(ctx.node(), axis, std::max<int64_t>(x.rank(), 1)).status();
}

// Writes double values into output i with the given type and shape.
void WriteDoubles(KernelContext& ctx, int i, DType t, const Shape& shape,
                  const std::vector<double>& v) {
  if (!ctx.has_output(i)) return;
  Tensor out = ctx.Output(i, t, shape);
  for (int64_t k = 0; k < out.numel(); ++k) StoreFromDouble(t, out.raw_data(), k, v[k]);
}

// Values of `t` broadcast unidirectionally to `target` (LayerNormalization/RMSNormalization scale
// and bias against the normalized shape X.shape[axis:]).
StatusOr<std::vector<double>> ExpandParam(const NodeView& node, const Tensor& t, int input,
                                          const Shape& target) {
  bool ok = t.rank() <= static_cast<int64_t>(target.size());
  for (int64_t d = 0; ok && d < t.rank(); ++d) {
    const int64_t td = target[target.size() - t.rank() + d];
    ok = t.dim(d) == td || t.dim(d) == 1;
  }
  if (!ok)
    return node.Invalid(DescribeInput(node, input), " has shape ", ShapeToString(t.shape()),
                        ", which does not broadcast to the normalized shape ",
                        ShapeToString(target));
  std::vector<double> vals = TensorToDoubles(t);
  if (t.shape() == target ||
      (t.numel() == ShapeElementCount(target) && t.rank() == 1 && target.size() == 1))
    return vals;
  std::vector<double> out(static_cast<size_t>(ShapeElementCount(target)));
  ForEachBroadcast(target, {BroadcastStrides(t.shape(), target)},
                   [&](int64_t i, const int64_t* off) { out[i] = vals[off[0]]; });
  return out;
}

// Element type of the statistics outputs selected by stash_type (a TensorProto.DataType).
DType StashType(const NodeView& node) {
  const int64_t s = node.attr_int("stash_type", 1);
  const DType t = static_cast<DType>(s);
  return IsKnownDType(static_cast<int32_t>(s)) && IsFloatingPoint(t) && !IsPackedFloat(t)
             ? t
             : DType::kFloat;
}

// ---- BatchNormalization ----
// Opsets 1-13 always run in inference mode unless the node asks for the training outputs (mean,
// var, saved_mean, saved_var), like ONNX Runtime; is_test (1, 6) is ignored. Opsets 1-8 have
// `spatial`: 0 means per-activation parameters of shape [C, D1, ...]. Opset 14 adds
// training_mode, whose outputs are running_mean/running_var; 15 lets the parameter types differ.
Status InferBatchNorm(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 5));
  ONYX_RETURN_IF_ERROR(ExpectFloatInputs(ctx, {0, 1, 2, 3, 4}));
  ONYX_RETURN_IF_ERROR(ExpectStaticRankAtLeast(ctx, 2));
  const TypeInfo& x = ctx.input_type(0);
  if (x.has_shape && (ctx.node().opset() >= 9 || ctx.node().attr_int("spatial", 1) != 0)) {
    for (int i = 1; i <= 4; ++i)
      ONYX_RETURN_IF_ERROR(ExpectStaticNumel(ctx, i, x.dims[1], "one per channel"));
  }
  ctx.SetOutputType(0, x);
  const TypeInfo& mean = ctx.input_type(3);
  for (int i = 1; i < ctx.num_outputs(); ++i) {
    if (!ctx.has_output(i)) continue;
    TypeInfo t = TypeInfo::Tensor(mean.is_tensor() ? mean.elem : x.elem);
    if (mean.has_shape) {
      t.has_shape = true;
      t.dims = mean.dims;
    }
    ctx.SetOutputType(i, t);
  }
  return Status::Ok();
}

Status BatchNormKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 5));
  const Tensor& x = ctx.input(0);
  ONYX_RETURN_IF_ERROR(ExpectRankAtLeast(node, x, 0, 2));
  const int64_t batch = x.dim(0), channels = x.dim(1);
  const int64_t inner = Product(x.shape(), 2, x.shape().size());
  const int64_t opset = node.opset();
  const bool per_activation = opset < 9 && node.attr_int("spatial", 1) == 0;
  const int64_t params = per_activation ? ShapeElementCount({channels, inner}) : channels;
  const char* what = per_activation ? "C x D1 x ... for spatial=0" : "one per channel";
  for (int i = 1; i <= 4; ++i)
    ONYX_RETURN_IF_ERROR(ExpectNumel(node, ctx.input(i), i, params, what));
  bool training = false;
  if (opset >= 14) {
    training = node.attr_int("training_mode", 0) != 0;
  } else {
    for (int i = 1; i < ctx.num_outputs(); ++i) training = training || ctx.has_output(i);
  }
  if (training && per_activation)
    return node.NotSupported("training outputs with spatial=0 are not supported");
  const double epsilon = node.attr_float("epsilon", 1e-5f);
  const double momentum = node.attr_float("momentum", 0.9f);
  const std::vector<double> scale = TensorToDoubles(ctx.input(1));
  const std::vector<double> bias = TensorToDoubles(ctx.input(2));
  std::vector<double> mean = TensorToDoubles(ctx.input(3));
  std::vector<double> var = TensorToDoubles(ctx.input(4));
  std::vector<double> batch_mean(static_cast<size_t>(channels)),
      batch_var(static_cast<size_t>(channels));
  if (training) {
    ONYX_RETURN_IF_ERROR(ForFloat(node, x, 0, [&](auto tag) {
      using T = typename decltype(tag)::type;
      reference::ChannelMoments(x.data<T>(), batch, channels, inner, batch_mean.data(),
                                batch_var.data());
    }));
  }
  const std::vector<double>& use_mean = training ? batch_mean : mean;
  const std::vector<double>& use_var = training ? batch_var : var;
  // Fold the statistics: y = x * a + b with a = scale / sqrt(var + eps), b = B - mean * a.
  std::vector<double> a(static_cast<size_t>(params)), b(static_cast<size_t>(params));
  for (int64_t p = 0; p < params; ++p) {
    a[p] = scale[p] / std::sqrt(use_var[p] + epsilon);
    b[p] = bias[p] - use_mean[p] * a[p];
  }
  Tensor y = ctx.Output(0, x.dtype(), x.shape());
  ONYX_RETURN_IF_ERROR(ForFloat(node, x, 0, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (per_activation) {
      reference::ChannelAffine(x.data<T>(), y.data<T>(), batch, params, 1, a, b,
                               ctx.intra_op_threads());
    } else {
      reference::ChannelAffine(x.data<T>(), y.data<T>(), batch, channels, inner, a, b,
                               ctx.intra_op_threads());
    }
  }));
  if (!training) {
    // Opsets < 14 in inference mode: pass the statistics through for any requested output.
    for (int i = 1; i <= 2 && i < ctx.num_outputs(); ++i)
      WriteDoubles(ctx, i, ctx.input(i + 2).dtype(), ctx.input(i + 2).shape(), i == 1 ? mean : var);
    return Status::Ok();
  }
  std::vector<double> running_mean(mean.size()), running_var(var.size());
  for (size_t c = 0; c < mean.size(); ++c) {
    running_mean[c] = mean[c] * momentum + batch_mean[c] * (1 - momentum);
    running_var[c] = var[c] * momentum + batch_var[c] * (1 - momentum);
  }
  const DType stat_type = ctx.input(3).dtype();
  const Shape& stat_shape = ctx.input(3).shape();
  if (ctx.num_outputs() > 1) WriteDoubles(ctx, 1, stat_type, stat_shape, running_mean);
  if (ctx.num_outputs() > 2) WriteDoubles(ctx, 2, stat_type, stat_shape, running_var);
  if (ctx.num_outputs() > 3) WriteDoubles(ctx, 3, stat_type, stat_shape, batch_mean);
  if (ctx.num_outputs() > 4) WriteDoubles(ctx, 4, stat_type, stat_shape, batch_var);
  return Status::Ok();
}

// ---- InstanceNormalization ----
Status InferInstanceNorm(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 3));
  ONYX_RETURN_IF_ERROR(ExpectFloatInputs(ctx, {0, 1, 2}));
  ONYX_RETURN_IF_ERROR(ExpectStaticRankAtLeast(ctx, 2));
  const TypeInfo& x = ctx.input_type(0);
  if (x.has_shape) {
    ONYX_RETURN_IF_ERROR(ExpectStaticNumel(ctx, 1, x.dims[1], "one per channel"));
    ONYX_RETURN_IF_ERROR(ExpectStaticNumel(ctx, 2, x.dims[1], "one per channel"));
  }
  return InferSameAsInput0(ctx);
}

Status InstanceNormKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 3));
  const Tensor& x = ctx.input(0);
  ONYX_RETURN_IF_ERROR(ExpectRankAtLeast(node, x, 0, 2));
  const int64_t batch = x.dim(0), channels = x.dim(1);
  const int64_t inner = Product(x.shape(), 2, x.shape().size());
  ONYX_RETURN_IF_ERROR(ExpectNumel(node, ctx.input(1), 1, channels, "one per channel"));
  ONYX_RETURN_IF_ERROR(ExpectNumel(node, ctx.input(2), 2, channels, "one per channel"));
  const double epsilon = node.attr_float("epsilon", 1e-5f);
  const std::vector<double> scale = TensorToDoubles(ctx.input(1));
  const std::vector<double> bias = TensorToDoubles(ctx.input(2));
  const int64_t rows = batch * channels;
  std::vector<double> mean(static_cast<size_t>(rows)), var(static_cast<size_t>(rows));
  std::vector<double> a(static_cast<size_t>(rows)), b(static_cast<size_t>(rows));
  Tensor y = ctx.Output(0, x.dtype(), x.shape());
  return ForFloat(node, x, 0, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reference::RowMoments(x.data<T>(), rows, inner, mean.data(), var.data());
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t c = r % channels;
      a[r] = scale[c] / std::sqrt(var[r] + epsilon);
      b[r] = bias[c] - mean[r] * a[r];
    }
    reference::ChannelAffine(x.data<T>(), y.data<T>(), 1, rows, inner, a, b,
                             ctx.intra_op_threads());
  });
}

// ---- GroupNormalization ----
// Opset 18: scale and bias have one value per group. Opset 21: one value per channel (and
// stash_type, which onyx always honours by computing the statistics in double).
Status InferGroupNorm(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 3));
  ONYX_RETURN_IF_ERROR(ExpectFloatInputs(ctx, {0, 1, 2}));
  auto groups = ctx.node().RequiredInt("num_groups");
  if (!groups.ok()) return groups.status();
  if (*groups <= 0) return ctx.node().Invalid("attribute 'num_groups' must be > 0, got ", *groups);
  ONYX_RETURN_IF_ERROR(ExpectStaticRankAtLeast(ctx, 2));
  const TypeInfo& x = ctx.input_type(0);
  if (x.has_shape && x.dims[1].known() && x.dims[1].value % *groups != 0)
    return ctx.node().Invalid("attribute 'num_groups' = ", *groups,
                              " must divide the channel count of input 0 ", x.ToString());
  if (x.has_shape && ctx.node().opset() >= 21) {
    ONYX_RETURN_IF_ERROR(ExpectStaticNumel(ctx, 1, x.dims[1], "one per channel"));
    ONYX_RETURN_IF_ERROR(ExpectStaticNumel(ctx, 2, x.dims[1], "one per channel"));
  }
  return InferSameAsInput0(ctx);
}

Status GroupNormKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 3));
  const Tensor& x = ctx.input(0);
  ONYX_RETURN_IF_ERROR(ExpectRankAtLeast(node, x, 0, 2));
  ONYX_ASSIGN_OR_RETURN(const int64_t groups, node.RequiredInt("num_groups"));
  const int64_t batch = x.dim(0), channels = x.dim(1);
  const int64_t inner = Product(x.shape(), 2, x.shape().size());
  if (groups <= 0 || channels % groups != 0)
    return node.Invalid("attribute 'num_groups' = ", groups, " must divide the channel count ",
                        channels, " of input 0 'X' ", ShapeToString(x.shape()));
  // Opset 18 defines one scale per group; accept one per channel too (the opset 21 layout).
  const bool per_group = node.opset() < 21 && ctx.input(1).numel() == groups;
  const int64_t params = per_group ? groups : channels;
  const char* what = per_group ? "one per group" : "one per channel";
  ONYX_RETURN_IF_ERROR(ExpectNumel(node, ctx.input(1), 1, params, what));
  ONYX_RETURN_IF_ERROR(ExpectNumel(node, ctx.input(2), 2, params, what));
  const double epsilon = node.attr_float("epsilon", 1e-5f);
  const std::vector<double> scale = TensorToDoubles(ctx.input(1));
  const std::vector<double> bias = TensorToDoubles(ctx.input(2));
  const int64_t per = channels / groups;
  if (x.numel() == 0) {  // nothing to normalise, and batch x channels alone may be huge
    ctx.Output(0, x.dtype(), x.shape());
    return Status::Ok();
  }
  std::vector<double> mean(static_cast<size_t>(batch * groups)),
      var(static_cast<size_t>(batch * groups));
  std::vector<double> a(static_cast<size_t>(batch * channels)),
      b(static_cast<size_t>(batch * channels));
  Tensor y = ctx.Output(0, x.dtype(), x.shape());
  return ForFloat(node, x, 0, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reference::RowMoments(x.data<T>(), batch * groups, per * inner, mean.data(), var.data());
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t c = 0; c < channels; ++c) {
        const int64_t g = c / per;
        const int64_t p = per_group ? g : c;
        const int64_t stat = n * groups + g;
        const int64_t r = n * channels + c;
        a[r] = scale[p] / std::sqrt(var[stat] + epsilon);
        b[r] = bias[p] - mean[stat] * a[r];
      }
    }
    reference::ChannelAffine(x.data<T>(), y.data<T>(), 1, batch * channels, inner, a, b,
                             ctx.intra_op_threads());
  });
}

// ---- LayerNormalization (17) ----
Status InferLayerNorm(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  ONYX_RETURN_IF_ERROR(ExpectFloatInputs(ctx, {0, 1, 2}));
  const TypeInfo& x = ctx.input_type(0);
  ONYX_RETURN_IF_ERROR(ExpectStaticAxis(ctx, ctx.node().attr_int("axis", -1)));
  ctx.SetOutputType(0, x);
  const DType stash = StashType(ctx.node());
  for (int i = 1; i <= 2 && i < ctx.num_outputs(); ++i) {
    if (!ctx.has_output(i)) continue;
    TypeInfo t = TypeInfo::Tensor(stash);
    if (x.has_shape) {
      auto axis = NormalizeAxis(ctx.node(), ctx.node().attr_int("axis", -1), x.rank());
      if (!axis.ok()) return axis.status();
      t.has_shape = true;
      t.dims = x.dims;
      for (int64_t d = *axis; d < x.rank(); ++d) t.dims[d] = Dim::Known(1);
    }
    ctx.SetOutputType(i, t);
  }
  return Status::Ok();
}

Status LayerNormKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const Tensor& x = ctx.input(0);
  ONYX_ASSIGN_OR_RETURN(const int64_t axis,
                        NormalizeAxis(node, node.attr_int("axis", -1), x.rank()));
  const Shape norm_shape(x.shape().begin() + axis, x.shape().end());
  Shape stat_shape = x.shape();
  for (int64_t d = axis; d < x.rank(); ++d) stat_shape[d] = 1;
  // Statistics and parameters are sized by parts of x's shape, which an empty x ([2^40, 0]) does
  // not bound: check the outputs before anything is allocated.
  for (int k = 1; k < ctx.num_outputs(); ++k)
    ONYX_RETURN_IF_ERROR(
        CheckOutputSize(node, k, DType::kDouble, stat_shape, memory::TensorByteCeiling()));
  if (x.numel() == 0 && ctx.num_outputs() <= 1) {
    ctx.Output(0, x.dtype(), x.shape());
    return Status::Ok();
  }
  const int64_t rows = Product(x.shape(), 0, axis);
  const int64_t cols = ShapeElementCount(norm_shape);
  ONYX_ASSIGN_OR_RETURN(std::vector<double> scale, ExpandParam(node, ctx.input(1), 1, norm_shape));
  std::vector<double> bias;
  if (ctx.has_input(2)) {
    ONYX_ASSIGN_OR_RETURN(bias, ExpandParam(node, ctx.input(2), 2, norm_shape));
  }
  const double epsilon = node.attr_float("epsilon", 1e-5f);
  std::vector<double> mean(static_cast<size_t>(rows)), inv_std(static_cast<size_t>(rows));
  Tensor y = ctx.Output(0, x.dtype(), x.shape());
  ONYX_RETURN_IF_ERROR(ForFloat(node, x, 0, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reference::LayerNorm(x.data<T>(), y.data<T>(), rows, cols, scale, bias, epsilon, mean.data(),
                         inv_std.data());
  }));
  const DType stash = StashType(node);
  if (ctx.num_outputs() > 1) WriteDoubles(ctx, 1, stash, stat_shape, mean);
  if (ctx.num_outputs() > 2) WriteDoubles(ctx, 2, stash, stat_shape, inv_std);
  return Status::Ok();
}

// ---- RMSNormalization (23): Y has the type of `scale` (V) ----
Status InferRmsNorm(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  ONYX_RETURN_IF_ERROR(ExpectFloatInputs(ctx, {0, 1}));
  ONYX_RETURN_IF_ERROR(ExpectStaticAxis(ctx, ctx.node().attr_int("axis", -1)));
  TypeInfo y = ctx.input_type(0);
  const TypeInfo& scale = ctx.input_type(1);
  if (scale.is_tensor()) y.elem = scale.elem;
  ctx.SetOutputType(0, y);
  return Status::Ok();
}

Status RmsNormKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const Tensor& x = ctx.input(0);
  ONYX_ASSIGN_OR_RETURN(const int64_t axis,
                        NormalizeAxis(node, node.attr_int("axis", -1), x.rank()));
  const Shape norm_shape(x.shape().begin() + axis, x.shape().end());
  // The expanded scale is sized by part of x's shape, which an empty x ([0, 2^40]) does not bound.
  if (x.numel() == 0) {
    ctx.Output(0, ctx.input(1).dtype(), x.shape());
    return Status::Ok();
  }
  const int64_t rows = Product(x.shape(), 0, axis);
  const int64_t cols = ShapeElementCount(norm_shape);
  ONYX_ASSIGN_OR_RETURN(std::vector<double> scale, ExpandParam(node, ctx.input(1), 1, norm_shape));
  const double epsilon = node.attr_float("epsilon", 1e-5f);
  const DType out_type = ctx.input(1).dtype();
  if (std::find(kFloatTypes.begin(), kFloatTypes.end(), out_type) == kFloatTypes.end())
    return node.NotSupported(DescribeInput(node, 1), " has type ", DTypeName(out_type),
                             ", which this operator does not support");
  Tensor y = ctx.Output(0, out_type, x.shape());
  // Same types: straight into Y. Mixed types: compute in X's type, then convert to V.
  Tensor tmp = out_type == x.dtype() ? y : Tensor::Allocate(x.dtype(), x.shape());
  ONYX_RETURN_IF_ERROR(ForFloat(node, x, 0, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reference::RmsNorm(x.data<T>(), tmp.data<T>(), rows, cols, scale, epsilon);
  }));
  if (out_type != x.dtype()) {
    for (int64_t i = 0; i < x.numel(); ++i)
      StoreFromDouble(out_type, y.raw_data(), i, LoadAsDouble(x.dtype(), tmp.raw_data(), i));
  }
  return Status::Ok();
}

// ---- LpNormalization ----
Status InferLpNorm(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  ONYX_RETURN_IF_ERROR(ExpectFloatInputs(ctx, {0}));
  const int64_t p = ctx.node().attr_int("p", 2);
  if (p != 1 && p != 2) return ctx.node().Invalid("attribute 'p' must be 1 or 2, got ", p);
  ONYX_RETURN_IF_ERROR(ExpectStaticAxis(ctx, ctx.node().attr_int("axis", -1)));
  return InferSameAsInput0(ctx);
}

Status LpNormKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const Tensor& x = ctx.input(0);
  const int64_t p = node.attr_int("p", 2);
  if (p != 1 && p != 2) return node.Invalid("attribute 'p' must be 1 or 2, got ", p);
  ONYX_ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(node, node.attr_int("axis", -1),
                                                          std::max<int64_t>(x.rank(), 1)));
  const int64_t outer = Product(x.shape(), 0, axis);
  const int64_t n = x.rank() == 0 ? 1 : x.dim(axis);
  const int64_t inner = Product(x.shape(), axis + 1, x.shape().size());
  Tensor y = ctx.Output(0, x.dtype(), x.shape());
  return ForFloat(node, x, 0, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reference::LpNorm(x.data<T>(), y.data<T>(), outer, n, inner, p);
  });
}

// ---- MeanVarianceNormalization (9, 13: 13 only widens the types) ----
Status InferMvn(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  ONYX_RETURN_IF_ERROR(ExpectFloatInputs(ctx, {0}));
  const TypeInfo& x = ctx.input_type(0);
  if (x.has_shape) {
    for (int64_t a : ctx.node().attr_ints("axes", {0, 2, 3}))
      ONYX_RETURN_IF_ERROR(NormalizeAxis(ctx.node(), a, x.rank(), "axes entry").status());
  }
  return InferSameAsInput0(ctx);
}

Status MvnKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const Tensor& x = ctx.input(0);
  std::vector<bool> reduced(x.shape().size(), false);
  for (int64_t a : node.attr_ints("axes", {0, 2, 3})) {
    ONYX_ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(node, a, x.rank(), "axes entry"));
    reduced[axis] = true;
  }
  const reference::ReduceGeometry g = reference::MakeReduceGeometry(x.shape(), reduced);
  Tensor y = ctx.Output(0, x.dtype(), x.shape());
  // The ONNX function body adds epsilon = 1e-9 to the standard deviation.
  constexpr double kMvnEpsilon = 1e-9;
  return ForFloat(node, x, 0, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reference::MeanVarianceNorm(x.data<T>(), y.data<T>(), g, kMvnEpsilon);
  });
}

// ---- LRN (1, 13: 13 only adds bfloat16) ----
Status InferLrn(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  ONYX_RETURN_IF_ERROR(ExpectFloatInputs(ctx, {0}));
  auto size = ctx.node().RequiredInt("size");
  if (!size.ok()) return size.status();
  if (*size <= 0) return ctx.node().Invalid("attribute 'size' must be > 0, got ", *size);
  ONYX_RETURN_IF_ERROR(ExpectStaticRankAtLeast(ctx, 2));
  return InferSameAsInput0(ctx);
}

Status LrnKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const Tensor& x = ctx.input(0);
  ONYX_RETURN_IF_ERROR(ExpectRankAtLeast(node, x, 0, 2));
  ONYX_ASSIGN_OR_RETURN(const int64_t size, node.RequiredInt("size"));
  if (size <= 0) return node.Invalid("attribute 'size' must be > 0, got ", size);
  const double alpha = node.attr_float("alpha", 1e-4f);
  const double beta = node.attr_float("beta", 0.75f);
  const double bias = node.attr_float("bias", 1.0f);
  const int64_t inner = Product(x.shape(), 2, x.shape().size());
  Tensor y = ctx.Output(0, x.dtype(), x.shape());
  return ForFloat(node, x, 0, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reference::Lrn(x.data<T>(), y.data<T>(), x.dim(0), x.dim(1), inner, size, alpha, beta, bias);
  });
}

// ---- Dropout ----
// Opsets 1-11: `ratio` attribute; onyx always runs them in inference mode (is_test is ignored, as
// in ONNX Runtime). Mask is of type T before opset 10, bool after. Opset 12+: ratio and
// training_mode inputs and a `seed` attribute; training draws the mask like numpy's
// RandomState(seed).uniform(0, 1, shape) >= ratio, so seeded results match the ONNX tests.
const std::vector<DType> kDropoutTypes = {
    DType::kFloat,        DType::kDouble,         DType::kFloat16,    DType::kBFloat16,
    DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2, DType::kFloat8E5M2FNUZ};

Status InferDropout(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kDropoutTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, kDropoutTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 2, {DType::kBool}));
  const TypeInfo& x = ctx.input_type(0);
  ctx.SetOutputType(0, x);
  if (ctx.num_outputs() > 1 && ctx.has_output(1)) {
    TypeInfo mask = x;
    if (ctx.node().opset() >= 10) mask.elem = DType::kBool;
    ctx.SetOutputType(1, mask);
  }
  return Status::Ok();
}

// numpy's RandomState.random_sample(): a 53-bit double from two MT19937 draws.
double NextUniform(std::mt19937& gen) {
  const uint32_t a = gen() >> 5, b = gen() >> 6;
  constexpr double k2Pow26 = 67108864.0, k2Pow53 = 9007199254740992.0;
  return (a * k2Pow26 + b) / k2Pow53;
}

Status DropoutKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const Tensor& x = ctx.input(0);
  const int64_t opset = node.opset();
  double ratio = 0.5;
  bool training = false;
  if (opset >= 12) {
    if (ctx.has_input(1)) {
      const Tensor& r = ctx.input(1);
      if (r.numel() != 1)
        return node.Invalid(DescribeInput(node, 1), " must hold one value, got shape ",
                            ShapeToString(r.shape()));
      ratio = ElementAsDouble(r, 0);
    }
    if (ctx.has_input(2)) {
      const Tensor& t = ctx.input(2);
      if (t.numel() != 1 || t.dtype() != DType::kBool)
        return node.Invalid(DescribeInput(node, 2), " must be one bool, got ", DTypeName(t.dtype()),
                            ShapeToString(t.shape()));
      training = *t.data<bool>();
    }
  } else {
    ratio = node.attr_float("ratio", 0.5f);
  }
  const bool has_mask = ctx.num_outputs() > 1 && ctx.has_output(1);
  const DType mask_type = opset >= 10 ? DType::kBool : x.dtype();
  Tensor y = ctx.Output(0, x.dtype(), x.shape());
  Tensor mask;
  if (has_mask) mask = ctx.Output(1, mask_type, x.shape());
  const int64_t n = x.numel();
  if (!training || ratio == 0) {
    CopyElements(x.dtype(), x.raw_data(), 0, y.raw_data(), 0, n);
    if (has_mask)
      for (int64_t i = 0; i < n; ++i) StoreFromDouble(mask_type, mask.raw_data(), i, 1.0);
    return Status::Ok();
  }
  if (!(ratio >= 0 && ratio < 1))
    return node.Invalid(DescribeInput(node, 1), " ratio must be in [0, 1), got ", ratio);
  std::mt19937 gen(node.has_attr("seed") ? static_cast<uint32_t>(node.attr_int("seed", 0))
                                         : std::random_device{}());
  const double scale = 1.0 / (1.0 - ratio);
  const bool is_float = x.dtype() == DType::kFloat;
  const float scale_f = static_cast<float>(scale);
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = NextUniform(gen) >= ratio;
    if (is_float) {
      // numpy: (mask * X) * scale in float32, so dropped negatives become -0.
      y.data<float>()[i] = x.data<float>()[i] * (keep ? 1.f : 0.f) * scale_f;
    } else {
      const double v = LoadAsDouble(x.dtype(), x.raw_data(), i);
      StoreFromDouble(x.dtype(), y.raw_data(), i, v * (keep ? 1.0 : 0.0) * scale);
    }
    if (has_mask) StoreFromDouble(mask_type, mask.raw_data(), i, keep ? 1.0 : 0.0);
  }
  return Status::Ok();
}

}  // namespace

void RegisterNormalization(OpRegistry& r) {
  // BatchNormalization: 1 consumed_inputs/is_test, 6 is_test, 7 drops is_test, 9 drops spatial,
  // 14 training_mode + running outputs, 15 separate parameter types.
  r.Add("", "BatchNormalization", 1, 8, InferBatchNorm, BatchNormKernel, "batchnorm_ref_spatial");
  r.Add("", "BatchNormalization", 9, 13, InferBatchNorm, BatchNormKernel, "batchnorm_ref");
  r.Add("", "BatchNormalization", 14, kLatestOpset, InferBatchNorm, BatchNormKernel,
        "batchnorm_ref_training");
  r.Add("", "InstanceNormalization", 1, kLatestOpset, InferInstanceNorm, InstanceNormKernel,
        "instancenorm_ref");
  r.Add("", "LayerNormalization", 17, kLatestOpset, InferLayerNorm, LayerNormKernel,
        "layernorm_ref");
  r.Add("", "GroupNormalization", 18, 20, InferGroupNorm, GroupNormKernel,
        "groupnorm_ref_per_group");
  r.Add("", "GroupNormalization", 21, kLatestOpset, InferGroupNorm, GroupNormKernel,
        "groupnorm_ref");
  r.Add("", "RMSNormalization", 23, kLatestOpset, InferRmsNorm, RmsNormKernel, "rmsnorm_ref");
  r.Add("", "LpNormalization", 1, kLatestOpset, InferLpNorm, LpNormKernel, "lpnorm_ref");
  r.Add("", "MeanVarianceNormalization", 9, kLatestOpset, InferMvn, MvnKernel, "mvn_ref");
  r.Add("", "LRN", 1, kLatestOpset, InferLrn, LrnKernel, "lrn_ref");
  r.Add("", "Dropout", 1, 11, InferDropout, DropoutKernel, "dropout_ref_inference");
  OpDef& dropout =
      r.Add("", "Dropout", 12, kLatestOpset, InferDropout, DropoutKernel, "dropout_ref");
  dropout.deterministic = false;  // training_mode draws a random mask
}

}  // namespace onyx::kernels
