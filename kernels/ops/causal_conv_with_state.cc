// CausalConvWithState (opset 27): a depthwise causal convolution carrying its input window as
// state between calls (optionally with SiLU).
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

// ---- CausalConvWithState (opset 27) ----
// Inputs: input [B, C, L], weight [C, 1, K], bias [C], past_state [B, C, K-1].
// Outputs: output [B, C, L], present_state [B, C, K-1].

Status PlanCausalConv(const NodeView& node, const std::vector<const Shape*>& in) {
  const Shape& x = *in[0];
  const Shape& w = *in[1];
  if (x.size() != 3)
    return node.Invalid(Describe(node, 0), " has shape ", ShapeToString(x), "; expected [B, C, L]");
  if (w.size() != 3 || w[0] != x[1] || w[1] != 1 || w[2] < 1) {
    return node.Invalid(Describe(node, 1), " has shape ", ShapeToString(w), "; expected [", x[1],
                        ", 1, K] with K >= 1");
  }
  if (in.size() > 2 && in[2] && *in[2] != Shape{x[1]})
    return node.Invalid(Describe(node, 2), " has shape ", ShapeToString(*in[2]), "; expected [",
                        x[1], "]");
  if (in.size() > 3 && in[3] && *in[3] != Shape{x[0], x[1], w[2] - 1}) {
    return node.Invalid(Describe(node, 3), " has shape ", ShapeToString(*in[3]), "; expected [",
                        x[0], ",", x[1], ",", w[2] - 1, "]");
  }
  return Status::Ok();
}

StatusOr<bool> CausalConvSilu(const NodeView& node) {
  const std::string act = node.attr_string("activation", "none");
  if (act != "none" && act != "silu" && act != "swish")
    return node.Invalid("attribute 'activation' must be 'none', 'silu' or 'swish', got '", act,
                        "'");
  return act != "none";
}

Status InferCausalConv(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(CausalConvSilu(ctx.node()).status());
  for (int i = 0; i < 4; ++i) ONYX_RETURN_IF_ERROR(CheckInputType(ctx, i, kHalfOrFloat));
  for (int i = 1; i < 4; ++i) ONYX_RETURN_IF_ERROR(CheckSameType(ctx, 0, i));
  const DType t = InputElem(ctx, 0);
  std::vector<Shape> shapes;
  std::vector<const Shape*> ptrs;
  if (StaticShapes(ctx, &shapes, &ptrs)) {
    ONYX_RETURN_IF_ERROR(PlanCausalConv(ctx.node(), ptrs));
    const Shape& x = shapes[0];
    ctx.SetOutputType(0, TensorType(t, x));
    if (ctx.num_outputs() > 1) ctx.SetOutputType(1, TensorType(t, {x[0], x[1], shapes[1][2] - 1}));
    return Status::Ok();
  }
  ONYX_RETURN_IF_ERROR(InferSameAsInput0(ctx));
  if (ctx.num_outputs() > 1) {
    TypeInfo state = TypeInfo::Tensor(t);
    const TypeInfo& x = ctx.input_type(0);
    const TypeInfo& w = ctx.input_type(1);
    if (x.has_shape && x.rank() == 3) {
      state.has_shape = true;
      state.dims = {x.dims[0], x.dims[1], Dim()};
      if (w.has_shape && w.rank() == 3 && w.dims[2].known())
        state.dims[2] = Dim::Known(w.dims[2].value - 1);
    }
    ctx.SetOutputType(1, state);
  }
  return Status::Ok();
}

Status CausalConvKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  ONYX_RETURN_IF_ERROR(CheckDType(node, 0, x.dtype(), kHalfOrFloat));
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    if (ctx.has_input(i) && ctx.input(i).dtype() != x.dtype())
      return node.Fail(Describe(node, i), " must have the type of input 0");
  }
  ONYX_ASSIGN_OR_RETURN(const bool silu, CausalConvSilu(node));
  ONYX_RETURN_IF_ERROR(PlanCausalConv(node, RuntimeShapes(ctx)));
  const Tensor& w = ctx.input(1);
  Tensor y = ctx.Output(0, x.dtype(), x.shape());
  const Shape state_shape = {x.dim(0), x.dim(1), w.dim(2) - 1};
  Tensor state = ctx.num_outputs() > 1 && ctx.has_output(1)
                     ? ctx.Output(1, x.dtype(), state_shape)
                     : Tensor::Allocate(x.dtype(), state_shape);
  reference::CausalConvWithState(x, w, OptionalInput(ctx, 2), OptionalInput(ctx, 3), silu, &y,
                                 &state);
  return Status::Ok();
}

}  // namespace

void RegisterCausalConvWithState(OpRegistry& r) {
  r.Add("", "CausalConvWithState", 27, kLatestOpset, InferCausalConv, CausalConvKernel);
}

}  // namespace onyx::kernels
