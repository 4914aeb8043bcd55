// Training family: ai.onnx.preview.training optimizers (Adagrad, Adam, Momentum). Gradient is not
// registered: it asks for the derivative of a graph value with respect to others, which needs a
// backward pass (a gradient rule per operator) over the graph, not a kernel.
#include "kernels/reference/training.h"

#include <string>
#include <vector>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"

namespace onyx::kernels {
namespace {

const char kTraining[] = "ai.onnx.preview.training";

enum class Optimizer { kAdagrad, kAdam, kMomentum };

// Inputs are R, T, then `groups` equal-length lists (X..., G..., then the state lists); outputs are
// the updated X... and state lists.
int Groups(Optimizer o) {
  return o == Optimizer::kAdam ? 4 : 3;
}

bool IsFloatOrDouble(DType t) {
  return t == DType::kFloat || t == DType::kDouble;
}

// Number of tensors optimized by the node (the length of each list).
StatusOr<int> TensorCount(const NodeView& node, Optimizer o) {
  const int groups = Groups(o);
  const int inputs = static_cast<int>(node.node().inputs.size());
  const int outputs = static_cast<int>(node.node().outputs.size());
  const int n = (inputs - 2) / groups;
  if (inputs < 2 + groups || (inputs - 2) % groups != 0) {
    return node.Invalid("has ", inputs, " inputs; expected R, T and ", groups,
                        " lists of equal length");
  }
  if (outputs != n * (groups - 1)) {
    return node.Invalid("has ", outputs, " outputs; expected ", n * (groups - 1), " for ", n,
                        " optimized tensors");
  }
  return n;
}

Status InferOptimizer(InferContext& ctx, Optimizer o) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(const int n, TensorCount(node, o));
  const TypeInfo& r = ctx.input_type(0);
  if (r.is_tensor() && !IsFloatOrDouble(r.elem)) {
    return node.NotSupported("input 0 '", InputName(node, 0), "' has type ", DTypeName(r.elem),
                             "; expected float or double");
  }
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, {DType::kInt64}));
  for (int i = 2; i < ctx.num_inputs(); ++i) {
    const TypeInfo& t = ctx.input_type(i);
    if (t.is_tensor() && !IsFloatOrDouble(t.elem)) {
      return node.NotSupported("input ", i, " '", InputName(node, i), "' has type ",
                               DTypeName(t.elem), "; expected float or double");
    }
  }
  // Every output has the type and shape of the X it belongs to.
  for (int j = 0; j < ctx.num_outputs(); ++j)
    if (ctx.has_output(j)) ctx.SetOutputType(j, ctx.input_type(2 + j % n));
  return Status::Ok();
}

Status InferAdagrad(InferContext& ctx) {
  return InferOptimizer(ctx, Optimizer::kAdagrad);
}
Status InferAdam(InferContext& ctx) {
  return InferOptimizer(ctx, Optimizer::kAdam);
}
Status InferMomentum(InferContext& ctx) {
  return InferOptimizer(ctx, Optimizer::kMomentum);
}

Status RunOptimizer(KernelContext& ctx, Optimizer o) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(const int n, TensorCount(node, o));
  const Tensor& r = ctx.input(0);
  const Tensor& t = ctx.input(1);
  if (!IsFloatOrDouble(r.dtype()) || r.numel() != 1) {
    return node.Fail("input 0 '", InputName(node, 0), "' must be one float or double, got ",
                     DTypeName(r.dtype()), ShapeToString(r.shape()));
  }
  if (t.dtype() != DType::kInt64 || t.numel() != 1) {
    return node.Fail("input 1 '", InputName(node, 1), "' must be one int64, got ",
                     DTypeName(t.dtype()), ShapeToString(t.shape()));
  }
  const double rate = ElementAsDouble(r, 0);
  const int64_t step = t.data<int64_t>()[0];
  const int groups = Groups(o);
  for (int i = 0; i < n; ++i) {
    const Tensor& x = ctx.input(2 + i);
    if (!IsFloatOrDouble(x.dtype())) {
      return node.Fail("input ", 2 + i, " '", InputName(node, 2 + i), "' has type ",
                       DTypeName(x.dtype()), "; expected float or double");
    }
    std::vector<const Tensor*> in = {&x};
    for (int g = 1; g < groups; ++g) {
      const int k = 2 + g * n + i;
      const Tensor& other = ctx.input(k);
      if (other.dtype() != x.dtype() || other.shape() != x.shape()) {
        return node.Fail("input ", k, " '", InputName(node, k), "' is ", DTypeName(other.dtype()),
                         ShapeToString(other.shape()), "; expected the type and shape of input ",
                         2 + i, " '", InputName(node, 2 + i), "' ", DTypeName(x.dtype()),
                         ShapeToString(x.shape()));
      }
      in.push_back(&other);
    }
    std::vector<Tensor> out;
    for (int g = 0; g + 1 < groups; ++g) out.push_back(ctx.Output(g * n + i, x.dtype(), x.shape()));
    switch (o) {
      case Optimizer::kAdagrad: {
        reference::AdagradAttrs a;
        a.decay_factor = node.attr_float("decay_factor", 0.0f);
        a.epsilon = node.attr_float("epsilon", 1e-6f);
        a.norm_coefficient = node.attr_float("norm_coefficient", 0.0f);
        reference::AdagradStep(a, rate, step, x, *in[1], *in[2], &out[0], &out[1]);
        break;
      }
      case Optimizer::kAdam: {
        reference::AdamAttrs a;
        a.alpha = node.attr_float("alpha", 0.9f);
        a.beta = node.attr_float("beta", 0.999f);
        a.epsilon = node.attr_float("epsilon", 1e-6f);
        a.norm_coefficient = node.attr_float("norm_coefficient", 0.0f);
        a.norm_coefficient_post = node.attr_float("norm_coefficient_post", 0.0f);
        reference::AdamStep(a, rate, step, x, *in[1], *in[2], *in[3], &out[0], &out[1], &out[2]);
        break;
      }
      case Optimizer::kMomentum: {
        reference::MomentumAttrs a;
        ONYX_ASSIGN_OR_RETURN(const float alpha, node.RequiredFloat("alpha"));
        ONYX_ASSIGN_OR_RETURN(const float beta, node.RequiredFloat("beta"));
        ONYX_ASSIGN_OR_RETURN(const float norm, node.RequiredFloat("norm_coefficient"));
        ONYX_ASSIGN_OR_RETURN(const std::string mode, node.RequiredString("mode"));
        if (mode != "standard" && mode != "nesterov") {
          return node.Invalid("attribute 'mode' must be 'standard' or 'nesterov', got '", mode,
                              "'");
        }
        a.alpha = alpha;
        a.beta = beta;
        a.norm_coefficient = norm;
        a.nesterov = mode == "nesterov";
        reference::MomentumStep(a, rate, step, x, *in[1], *in[2], &out[0], &out[1]);
        break;
      }
    }
  }
  return Status::Ok();
}

Status AdagradKernel(KernelContext& ctx) {
  return RunOptimizer(ctx, Optimizer::kAdagrad);
}
Status AdamKernel(KernelContext& ctx) {
  return RunOptimizer(ctx, Optimizer::kAdam);
}
Status MomentumKernel(KernelContext& ctx) {
  return RunOptimizer(ctx, Optimizer::kMomentum);
}

}  // namespace

void RegisterTraining(OpRegistry& r) {
  r.Add(kTraining, "Adagrad", 1, kLatestOpset, InferAdagrad, AdagradKernel);
  r.Add(kTraining, "Adam", 1, kLatestOpset, InferAdam, AdamKernel);
  r.Add(kTraining, "Momentum", 1, kLatestOpset, InferMomentum, MomentumKernel);
}

}  // namespace onyx::kernels
