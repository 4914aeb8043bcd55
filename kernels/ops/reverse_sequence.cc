// ReverseSequence family: ReverseSequence (opset 10). Input rank >= 2; batch_axis and time_axis are
// 0 and 1 in either order; sequence_lens (int64, shape [batch]) holds lengths in [0, time].
#include "kernels/reference/reverse_sequence.h"

#include <string>
#include <vector>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"

namespace onyx::kernels {
namespace {

// Every ONNX type: the loop copies elements by size, so the whole T list of the spec is covered.
const std::vector<DType> kAllTypes = {
    DType::kUInt8,   DType::kUInt16, DType::kUInt32, DType::kUInt64,    DType::kInt8,
    DType::kInt16,   DType::kInt32,  DType::kInt64,  DType::kFloat16,   DType::kFloat,
    DType::kDouble,  DType::kString, DType::kBool,   DType::kComplex64, DType::kComplex128,
    DType::kBFloat16};  // opset 28 added bfloat16

struct Axes {
  int64_t batch;
  int64_t time;
};

// ONNX: batch_axis defaults to 1, time_axis to 0; each must be 0 or 1, and they must differ.
StatusOr<Axes> ParseAxes(const NodeView& node) {
  const Axes a{node.attr_int("batch_axis", 1), node.attr_int("time_axis", 0)};
  if ((a.batch != 0 && a.batch != 1) || (a.time != 0 && a.time != 1) || a.batch == a.time)
    return node.Invalid("attributes batch_axis = ", a.batch, " and time_axis = ", a.time,
                        "; expected 0 and 1 in either order");
  return a;
}

Status InferReverseSequence(InferContext& ctx) {
  const NodeView& node = ctx.node();
  if (!ctx.has_input(0) || !ctx.has_input(1))
    return node.Invalid("required inputs 0 and 1 must both be present");
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kAllTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, {DType::kInt64}));
  ONYX_ASSIGN_OR_RETURN(const Axes axes, ParseAxes(node));
  const TypeInfo& x = ctx.input_type(0);
  const TypeInfo& lens = ctx.input_type(1);
  if (x.has_shape && x.rank() < 2)
    return node.Invalid(DescribeInput(node, 0), " has type ", x.ToString(), "; expected rank >= 2");
  if (lens.has_shape) {
    const bool bad_rank = lens.rank() != 1;
    const bool bad_dim = !bad_rank && x.has_shape && lens.dims[0].known() &&
                         x.dims[axes.batch].known() &&
                         lens.dims[0].value != x.dims[axes.batch].value;
    if (bad_rank || bad_dim)
      return node.Invalid(DescribeInput(node, 1), " has type ", lens.ToString(),
                          "; expected shape [batch] with batch = dim ", axes.batch, " of ",
                          DescribeInput(node, 0), " ", x.ToString());
  }
  ctx.SetOutputType(0, x);
  return Status::Ok();
}

Status ReverseSequenceKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  for (int i = 0; i < 2; ++i)
    if (!ctx.has_input(i) || !ctx.input_value(i).is_tensor())
      return node.Invalid("required input ", i, " is missing or not a tensor");
  ONYX_ASSIGN_OR_RETURN(const Axes axes, ParseAxes(node));
  const Tensor& x = ctx.input(0);
  const Tensor& lens_t = ctx.input(1);
  if (x.rank() < 2)
    return node.Fail(DescribeInput(node, 0), " has shape ", ShapeToString(x.shape()),
                     "; expected rank >= 2");
  if (lens_t.dtype() != DType::kInt64 && lens_t.dtype() != DType::kInt32)
    return node.NotSupported(DescribeInput(node, 1), " has type ", DTypeName(lens_t.dtype()),
                             "; expected int64");
  const int64_t batch = x.dim(axes.batch);
  const int64_t time = x.dim(axes.time);
  if (lens_t.rank() != 1 || lens_t.dim(0) != batch)
    return node.Fail(DescribeInput(node, 1), " has shape ", ShapeToString(lens_t.shape()),
                     "; expected [", batch, "] (dim ", axes.batch, " of ", DescribeInput(node, 0),
                     " ", ShapeToString(x.shape()), ")");
  const std::vector<int64_t> lens = TensorToInts(lens_t);
  for (int64_t b = 0; b < batch; ++b)
    if (lens[b] < 0 || lens[b] > time)
      return node.Fail(DescribeInput(node, 1), " has length ", lens[b], " for batch ", b,
                       ", out of range [0, ", time, "]");
  int64_t inner = 1;  // the dims after the two sequence axes
  for (int64_t d = 2; d < x.rank(); ++d) inner *= x.dim(d);
  Tensor y = ctx.Output(0, x.dtype(), x.shape());
  if (x.numel() == 0) return Status::Ok();
  reference::ReverseSequence(x.dtype(), x.raw_data(), y.raw_data(), x.dim(0), x.dim(1), inner,
                             axes.time == 0, lens.data());
  return Status::Ok();
}

}  // namespace

void RegisterReverseSequence(OpRegistry& r) {
  r.Add("", "ReverseSequence", 10, kLatestOpset, InferReverseSequence, ReverseSequenceKernel,
        "reversesequence_ref");
}

}  // namespace onyx::kernels
