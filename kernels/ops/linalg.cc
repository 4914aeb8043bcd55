// Linalg family: Det (opset 11: float16/float/double; opset 22 adds bfloat16). The input is
// [*, M, M]; the output [*] holds one determinant per matrix (a scalar for a 2-D input).
#include "kernels/reference/linalg.h"

#include <string>
#include <vector>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"

namespace onyx::kernels {
namespace {

std::vector<DType> DetTypes(const NodeView& node) {
  std::vector<DType> types = {DType::kFloat, DType::kDouble, DType::kFloat16};
  if (node.opset() >= 22) types.push_back(DType::kBFloat16);
  return types;
}

Status InferDet(InferContext& ctx) {
  const NodeView& node = ctx.node();
  if (!ctx.has_input(0)) return node.Invalid("missing required input 0");
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, DetTypes(node)));
  const TypeInfo& x = ctx.input_type(0);
  TypeInfo y = TypeInfo::Tensor(x.is_tensor() ? x.elem : DType::kUndefined);
  if (x.has_shape) {
    const int64_t rank = x.rank();
    if (rank < 2)
      return node.Invalid(DescribeInput(node, 0), " has type ", x.ToString(),
                          "; expected rank >= 2 ([*, M, M])");
    const Dim& rows = x.dims[rank - 2];
    const Dim& cols = x.dims[rank - 1];
    if (rows.known() && cols.known() && rows.value != cols.value)
      return node.Invalid(DescribeInput(node, 0), " has type ", x.ToString(),
                          "; expected square matrices in the last two dims");
    y.has_shape = true;
    y.dims.assign(x.dims.begin(), x.dims.end() - 2);
  }
  ctx.SetOutputType(0, y);
  return Status::Ok();
}

Status DetKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  if (!ctx.has_input(0) || !ctx.input_value(0).is_tensor())
    return node.Invalid("required input 0 is missing or not a tensor");
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  if (rank < 2 || x.dim(rank - 1) != x.dim(rank - 2))
    return node.Fail(DescribeInput(node, 0), " has shape ", ShapeToString(x.shape()),
                     "; expected [*, M, M]");
  const int64_t m = x.dim(rank - 1);
  const Shape y_shape(x.shape().begin(), x.shape().end() - 2);
  const int64_t batch = ShapeElementCount(y_shape);
  const bool visited = VisitFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor y = ctx.Output(0, x.dtype(), y_shape);
    reference::Determinant(x.data<T>(), y.data<T>(), batch, m);
  });
  if (!visited)
    return node.NotSupported(DescribeInput(node, 0), " has type ", DTypeName(x.dtype()),
                             ", which this operator does not support");
  return Status::Ok();
}

}  // namespace

void RegisterLinalg(OpRegistry& r) {
  // Two ranges only because the allowed types differ (bfloat16 from 22); the math is the same.
  r.Add("", "Det", 11, 21, InferDet, DetKernel, "det_ref");
  r.Add("", "Det", 22, kLatestOpset, InferDet, DetKernel, "det_ref");
}

}  // namespace onyx::kernels
