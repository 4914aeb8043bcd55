// Signal processing: DFT (17, 20), STFT (17), the Hann / Hamming / Blackman windows and
// MelWeightMatrix (17).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/op_registry.h"
#include "kernels/ops/image_signal_helpers.h"

namespace onyx::kernels {
namespace {

using namespace image_signal_ops;

// ======================= DFT / STFT =======================

// The DFT axis: attribute (opset 17, default 1) or input 2 (opset 20, default -2). Valid axes are
// the signal dims: [-r, -2] or [0, r-2] where r includes the trailing real/imag dim.
StatusOr<int64_t> DftAxis(const NodeView& node, int64_t rank, const Tensor* axis_input) {
  int64_t axis = node.opset() >= 20 ? -2 : node.attr_int("axis", 1);
  if (node.opset() >= 20 && axis_input) {
    ONYX_ASSIGN_OR_RETURN(axis, ScalarInt(node, 2, *axis_input));
  }
  if (axis < -rank || axis > rank - 2 || axis == -1)
    return node.Invalid("axis ", axis, " is out of range for input 0 of rank ", rank,
                        " (expected [", -rank, ", -2] or [0, ", rank - 2, "])");
  return axis < 0 ? axis + rank : axis;
}

Status InferDft(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kFloatTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, {DType::kInt32, DType::kInt64}));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 2, {DType::kInt64, DType::kInt32}));
  const TypeInfo& x = ctx.input_type(0);
  if (!x.is_tensor()) return Status::Ok();
  if (!x.has_shape) {
    ctx.SetOutputType(0, TypeInfo::Tensor(x.elem));
    return Status::Ok();
  }
  const int64_t rank = x.rank();
  // Rank first: the last dim of a scalar does not exist (found by fuzz_load_plan).
  if (rank < 2 ||
      (x.dims[rank - 1].known() && x.dims[rank - 1].value != 1 && x.dims[rank - 1].value != 2))
    return node.Invalid("input 0 '", InputName(node, 0), "' has shape ", x.ToString(),
                        "; expected [..., signal dims..., 1 or 2]");
  const Tensor* axis_input = nullptr;
  if (node.opset() >= 20 && Present(ctx, 2)) {
    axis_input = ctx.input_constant(2);
    if (!axis_input) {
      ctx.SetOutputType(0, TensorOfRank(x.elem, rank));
      return Status::Ok();
    }
  }
  ONYX_ASSIGN_OR_RETURN(const int64_t axis, DftAxis(node, rank, axis_input));
  const bool inverse = node.attr_int("inverse", 0) != 0;
  const bool onesided = node.attr_int("onesided", 0) != 0;
  Dim n;
  int64_t len = 0;
  if (Present(ctx, 1)) {
    if (ConstantScalarInt(ctx, 1, &len)) {
      if (len < 1) return node.Invalid("dft_length must be >= 1, got ", len);
      n = Dim::Known(len);
    }
  } else if (x.dims[axis].known()) {
    int64_t twice = 0;  // a declared dim near INT64_MAX overflows: leave the length unknown
    if (!(inverse && onesided))
      n = x.dims[axis];
    else if (CheckedMul(2, x.dims[axis].value - 1, &twice))
      n = Dim::Known(twice);
  } else if (!(inverse && onesided)) {
    n = x.dims[axis];
  }
  TypeInfo out = x;
  out.dims[axis] = (!inverse && onesided) ? (n.known() ? Dim::Known(n.value / 2 + 1) : Dim()) : n;
  out.dims[rank - 1] = Dim::Known(inverse && onesided ? 1 : 2);
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

Status DftKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  if (rank < 2 || (x.dim(rank - 1) != 1 && x.dim(rank - 1) != 2))
    return node.Invalid("input 0 '", InputName(node, 0), "' has shape ", ShapeToString(x.shape()),
                        "; expected [..., signal dims..., 1 or 2]");
  if (std::find(kFloatTypes.begin(), kFloatTypes.end(), x.dtype()) == kFloatTypes.end())
    return node.NotSupported("input 0 '", InputName(node, 0), "' has type ", DTypeName(x.dtype()));
  const Tensor* axis_input = node.opset() >= 20 && Present(ctx, 2) ? &ctx.input(2) : nullptr;
  ONYX_ASSIGN_OR_RETURN(const int64_t axis, DftAxis(node, rank, axis_input));
  const bool inverse = node.attr_int("inverse", 0) != 0;
  const bool onesided = node.attr_int("onesided", 0) != 0;
  const int64_t axis_len = x.dim(axis);
  int64_t n = axis_len;
  if (Present(ctx, 1)) {
    ONYX_ASSIGN_OR_RETURN(n, ScalarInt(node, 1, ctx.input(1)));
  } else if (inverse && onesided && !CheckedMul(2, axis_len - 1, &n)) {
    // An empty input may have a signal axis near INT64_MAX.
    return node.Invalid("input 0 '", InputName(node, 0), "' has shape ", ShapeToString(x.shape()),
                        "; 2 * (", axis_len, " - 1) output samples overflow int64");
  }
  if (n < 1)
    return node.Invalid("dft_length must be >= 1, got ", n, " (input 0 shape ",
                        ShapeToString(x.shape()), ")");
  Shape y_shape = x.shape();
  y_shape[axis] = (!inverse && onesided) ? n / 2 + 1 : n;
  y_shape[rank - 1] = inverse && onesided ? 1 : 2;
  Tensor y = ctx.Output(0, x.dtype(), y_shape);
  // An empty output may have huge other dims (their product overflows) and a huge dft_length
  // (the transform's buffer): nothing to compute.
  if (y.numel() == 0) return Status::Ok();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < rank - 1; ++d) inner *= x.dim(d);
  reference::Dft(x, outer, axis_len, inner, n, inverse, onesided, y);
  return Status::Ok();
}

Status InferStft(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kFloatTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, {DType::kInt32, DType::kInt64}));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 2, kFloatTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 3, {DType::kInt32, DType::kInt64}));
  const TypeInfo& x = ctx.input_type(0);
  if (!x.is_tensor()) return Status::Ok();
  if (x.has_shape && x.rank() != 3)
    return node.Invalid("input 0 '", InputName(node, 0), "' has shape ", x.ToString(),
                        "; expected [batch, signal_length, 1 or 2]");
  TypeInfo out = TensorOfRank(x.elem, 4);
  out.dims[3] = Dim::Known(2);
  if (x.has_shape) out.dims[0] = x.dims[0];
  // frame_length: input 3, else the window's length, else the signal length.
  int64_t frame_length = -1, step = -1;
  if (Present(ctx, 3)) {
    if (!ConstantScalarInt(ctx, 3, &frame_length)) frame_length = -1;
  } else if (Present(ctx, 2) && ctx.input_type(2).has_shape && ctx.input_type(2).rank() == 1 &&
             ctx.input_type(2).dims[0].known()) {
    frame_length = ctx.input_type(2).dims[0].value;
  } else if (!Present(ctx, 2) && x.has_shape && x.dims[1].known()) {
    frame_length = x.dims[1].value;
  }
  const bool onesided = node.attr_int("onesided", 1) != 0;
  if (frame_length > 0) out.dims[2] = Dim::Known(onesided ? frame_length / 2 + 1 : frame_length);
  if (ConstantScalarInt(ctx, 1, &step) && step > 0 && frame_length > 0 && x.has_shape &&
      x.dims[1].known() && x.dims[1].value >= frame_length) {
    out.dims[1] = Dim::Known(1 + (x.dims[1].value - frame_length) / step);
  }
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

Status StftKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  if (x.rank() != 3 || (x.dim(2) != 1 && x.dim(2) != 2))
    return node.Invalid("input 0 '", InputName(node, 0), "' has shape ", ShapeToString(x.shape()),
                        "; expected [batch, signal_length, 1 or 2]");
  if (!IsFloatingPoint(x.dtype()))
    return node.NotSupported("input 0 '", InputName(node, 0), "' has type ", DTypeName(x.dtype()));
  ONYX_ASSIGN_OR_RETURN(const int64_t step, ScalarInt(node, 1, ctx.input(1)));
  if (step < 1)
    return node.Invalid("input 1 '", InputName(node, 1), "' (frame_step) must be >= 1, got ", step);
  const Tensor* window = Present(ctx, 2) ? &ctx.input(2) : nullptr;
  if (window && window->rank() != 1)
    return node.Invalid("input 2 '", InputName(node, 2), "' has shape ",
                        ShapeToString(window->shape()), "; expected rank 1");
  int64_t frame_length = window ? window->dim(0) : x.dim(1);
  if (Present(ctx, 3)) {
    ONYX_ASSIGN_OR_RETURN(frame_length, ScalarInt(node, 3, ctx.input(3)));
    if (window && window->dim(0) != frame_length)
      return node.Invalid("input 2 '", InputName(node, 2), "' has length ", window->dim(0),
                          " but frame_length is ", frame_length);
  }
  if (frame_length < 1 || frame_length > x.dim(1))
    return node.Invalid("frame_length ", frame_length, " must be in [1, signal_length = ", x.dim(1),
                        "]");
  const bool onesided = node.attr_int("onesided", 1) != 0;
  const int64_t frames = 1 + (x.dim(1) - frame_length) / step;
  const int64_t bins = onesided ? frame_length / 2 + 1 : frame_length;
  Tensor y = ctx.Output(0, x.dtype(), {x.dim(0), frames, bins, 2});
  reference::Stft(x, step, window, frame_length, y);
  return Status::Ok();
}

// ======================= Windows / MelWeightMatrix =======================

const std::vector<DType> kWindowOutputTypes = kNumericTypes;

StatusOr<DType> OutputDatatype(const NodeView& node) {
  const int64_t v = node.attr_int("output_datatype", static_cast<int64_t>(DType::kFloat));
  const DType t = static_cast<DType>(v);
  if (!IsKnownDType(static_cast<int32_t>(v)) ||
      std::find(kWindowOutputTypes.begin(), kWindowOutputTypes.end(), t) ==
          kWindowOutputTypes.end())
    return node.NotSupported("attribute 'output_datatype' = ", v, " is not a supported type");
  return t;
}

Status InferWindow(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, {DType::kInt32, DType::kInt64}));
  ONYX_ASSIGN_OR_RETURN(DType t, OutputDatatype(ctx.node()));
  int64_t size = 0;
  TypeInfo out = TensorOfRank(t, 1);
  if (ConstantScalarInt(ctx, 0, &size) && size >= 0) out.dims[0] = Dim::Known(size);
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

template <reference::WindowKind kKind>
Status WindowKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(DType t, OutputDatatype(node));
  ONYX_ASSIGN_OR_RETURN(const int64_t size, ScalarInt(node, 0, ctx.input(0)));
  if (size < 0)
    return node.Invalid("input 0 '", InputName(node, 0), "' (size) must be >= 0, got ", size);
  Tensor y = ctx.Output(0, t, {size});
  reference::Window(kKind, node.attr_int("periodic", 1) != 0, y);
  return Status::Ok();
}

Status InferMelWeightMatrix(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, {DType::kInt32, DType::kInt64}));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, {DType::kInt32, DType::kInt64}));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 2, {DType::kInt32, DType::kInt64}));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 3, kFloatTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 4, kFloatTypes));
  ONYX_ASSIGN_OR_RETURN(DType t, OutputDatatype(ctx.node()));
  TypeInfo out = TensorOfRank(t, 2);
  int64_t v = 0;
  if (ConstantScalarInt(ctx, 1, &v) && v >= 0) out.dims[0] = Dim::Known(v / 2 + 1);
  if (ConstantScalarInt(ctx, 0, &v) && v >= 0) out.dims[1] = Dim::Known(v);
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

Status MelWeightMatrixKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(DType t, OutputDatatype(node));
  ONYX_ASSIGN_OR_RETURN(const int64_t num_mel_bins, ScalarInt(node, 0, ctx.input(0)));
  ONYX_ASSIGN_OR_RETURN(const int64_t dft_length, ScalarInt(node, 1, ctx.input(1)));
  ONYX_ASSIGN_OR_RETURN(const int64_t sample_rate, ScalarInt(node, 2, ctx.input(2)));
  ONYX_ASSIGN_OR_RETURN(const double lower, ScalarFloat(node, 3, ctx.input(3)));
  ONYX_ASSIGN_OR_RETURN(const double upper, ScalarFloat(node, 4, ctx.input(4)));
  if (num_mel_bins < 0 || dft_length < 1 || sample_rate <= 0)
    return node.Invalid("num_mel_bins (", num_mel_bins, "), dft_length (", dft_length,
                        ") and sample_rate (", sample_rate, ") must be positive");
  if (!(lower >= 0) || !(upper >= lower))
    return node.Invalid("lower_edge_hertz (", lower, ") and upper_edge_hertz (", upper,
                        ") must satisfy 0 <= lower <= upper");
  Tensor y = ctx.Output(0, t, {dft_length / 2 + 1, num_mel_bins});
  reference::MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower, upper, y);
  return Status::Ok();
}

}  // namespace

void RegisterSpectral(OpRegistry& r) {
  // DFT: 17 (axis attribute), 20 (axis input).
  r.Add("", "DFT", 17, 19, InferDft, DftKernel);
  r.Add("", "DFT", 20, kLatestOpset, InferDft, DftKernel);
  r.Add("", "STFT", 17, kLatestOpset, InferStft, StftKernel);
  r.Add("", "HannWindow", 17, kLatestOpset, InferWindow,
        WindowKernel<reference::WindowKind::kHann>);
  r.Add("", "HammingWindow", 17, kLatestOpset, InferWindow,
        WindowKernel<reference::WindowKind::kHamming>);
  r.Add("", "BlackmanWindow", 17, kLatestOpset, InferWindow,
        WindowKernel<reference::WindowKind::kBlackman>);
  r.Add("", "MelWeightMatrix", 17, kLatestOpset, InferMelWeightMatrix, MelWeightMatrixKernel);
}

}  // namespace onyx::kernels
