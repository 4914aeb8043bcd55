// BitCast (opset 26): reinterprets the bytes of a tensor as another element type.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/op_registry.h"
#include "kernels/ops/attention_helpers.h"

namespace onyx::kernels {
namespace {

using namespace attention_ops;
using reference::AttentionParams;

// ---- BitCast (opset 26) ----

StatusOr<DType> BitCastTarget(const NodeView& node, DType from) {
  ONYX_ASSIGN_OR_RETURN(const int64_t to, node.RequiredInt("to"));
  if (!IsKnownDType(static_cast<int32_t>(to)) || to == 0)
    return node.Invalid("attribute 'to' = ", to, " is not a data type");
  const DType t = static_cast<DType>(to);
  if (t == DType::kString) return node.Invalid("attribute 'to' must not be string");
  if (from == DType::kString)
    return node.NotSupported(Describe(node, 0),
                             " is a string tensor; BitCast needs fixed-width data");
  if (from != DType::kUndefined && reference::BitWidth(from) != reference::BitWidth(t)) {
    return node.Invalid(Describe(node, 0), " has type ", DTypeName(from), " (",
                        reference::BitWidth(from), " bits) but attribute 'to' is ", DTypeName(t),
                        " (", reference::BitWidth(t), " bits); the widths must match");
  }
  return t;
}

Status InferBitCast(InferContext& ctx) {
  const TypeInfo& x = ctx.input_type(0);
  ONYX_ASSIGN_OR_RETURN(const DType to,
                        BitCastTarget(ctx.node(), x.is_tensor() ? x.elem : DType::kUndefined));
  TypeInfo y = x;
  y.kind = TypeInfo::Kind::kTensor;
  y.elem = to;
  ctx.SetOutputType(0, y);
  return Status::Ok();
}

Status BitCastKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  ONYX_ASSIGN_OR_RETURN(const DType to, BitCastTarget(ctx.node(), x.dtype()));
  Tensor y = ctx.Output(0, to, x.shape());
  reference::BitCast(x, &y);
  return Status::Ok();
}

}  // namespace

void RegisterBitCast(OpRegistry& r) {
  r.Add("", "BitCast", 26, kLatestOpset, InferBitCast, BitCastKernel);
}

}  // namespace onyx::kernels
