// Reference kernels of the activation family: plain per-element formulas from the ONNX specs,
// written so the float32 loops vectorise (no calls but libm, no branches that block if-conversion
// for Relu/LeakyRelu/HardSigmoid/HardSwish).
#include "kernels/reference/activation.h"

#include <cmath>
#include <string>
#include <type_traits>

#include "kernels/op_helpers.h"
#include "kernels/reference/elementwise_loops.h"

namespace onyx::kernels::ref {
namespace {

Status TypeError(KernelContext& ctx, int i = 0) {
  return ctx.node().NotSupported("input ", i, " has type ", DTypeName(ctx.input(i).dtype()),
                                 ", which this operator does not support");
}

// Y = f(X) for the types `visit` accepts; f receives the compute type.
template <typename Visit, typename F>
Status Activation(KernelContext& ctx, Visit visit, F f) {
  if (!ctx.has_input(0)) return ctx.node().Invalid("input 0 'X' is missing");
  const Tensor& x = ctx.input(0);
  if (!visit(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        Tensor y = ctx.Output(0, x.dtype(), x.shape());
        MapUnary(x.data<T>(), y.data<T>(), x.numel(), ctx.intra_op_threads(), f);
      }))
    return TypeError(ctx);
  return Status::Ok();
}

// Float types only; `f` is a generic lambda over float/double.
template <typename F>
Status FloatActivation(KernelContext& ctx, F f) {
  return Activation(ctx, [](DType t, auto g) { return VisitFloat(t, g); }, f);
}

template <typename C>
C Sigmoid(C v) {
  // Split by sign so exp never overflows.
  if (v >= 0) return C(1) / (C(1) + std::exp(-v));
  const C e = std::exp(v);
  return e / (C(1) + e);
}

template <typename C>
C Softplus(C v) {
  // log(1 + exp(v)) without overflow for large v.
  return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
}

}  // namespace

Status ReluRef(KernelContext& ctx) {
  // Float types; opset 14 adds the signed integers (any numeric type is accepted).
  return Activation(ctx, [](DType t, auto g) { return VisitNumeric(t, g); }, [](auto v) {
    using C = decltype(v);
    return v < C(0) ? C(0) : v;  // NaN passes through
  });
}

Status LeakyReluRef(KernelContext& ctx) {
  const float alpha = ctx.node().attr_float("alpha", 0.01f);
  return FloatActivation(ctx, [alpha](auto v) {
    using C = decltype(v);
    return v < C(0) ? static_cast<C>(alpha) * v : v;
  });
}

Status PReluRef(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  if (!ctx.has_input(0) || !ctx.has_input(1)) return node.Invalid("expected inputs X and slope");
  const Tensor& x = ctx.input(0);
  const Tensor& slope = ctx.input(1);
  if (slope.dtype() != x.dtype())
    return node.Invalid("input 1 'slope' has type ", DTypeName(slope.dtype()), "; expected ",
                        DTypeName(x.dtype()), " to match input 0 'X'");
  // Unidirectional broadcast: slope must broadcast to X's shape (opset 7+). Before opset 7 the
  // slope was per-channel or same-shape; when it has one dim per channel (C) and X is N x C x ...,
  // align it with axis 1.
  Shape slope_shape = slope.shape();
  if (node.opset() < 7 && slope_shape.size() == 1 && x.rank() >= 2 &&
      slope_shape[0] == x.dim(1) && x.dim(x.rank() - 1) != slope_shape[0]) {
    slope_shape.assign(static_cast<size_t>(x.rank() - 1), 1);
    slope_shape[0] = x.dim(1);
  }
  auto out = BroadcastShapes({x.shape(), slope_shape});
  if (!out.ok() || out.value() != x.shape())
    return node.Fail("input 1 'slope' has shape ", ShapeToString(slope.shape()),
                     "; expected it to broadcast to input 0 'X' ", ShapeToString(x.shape()));
  if (!VisitNumeric(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        Tensor y = ctx.Output(0, x.dtype(), x.shape());
        BinaryBroadcast(x.data<T>(), x.shape(), slope.data<T>(), slope_shape, y.data<T>(),
                        x.shape(), ctx.intra_op_threads(), [](auto v, auto s) {
                          using C = decltype(v);
                          return v < C(0) ? static_cast<C>(s * v) : v;
                        });
      }))
    return TypeError(ctx);
  return Status::Ok();
}

Status EluRef(KernelContext& ctx) {
  const float alpha = ctx.node().attr_float("alpha", 1.0f);
  return FloatActivation(ctx, [alpha](auto v) {
    using C = decltype(v);
    return v < C(0) ? static_cast<C>(alpha) * (std::exp(v) - C(1)) : v;
  });
}

Status SeluRef(KernelContext& ctx) {
  const bool v1 = ctx.node().opset() < 6;  // opset 1 documented shorter constants
  const float alpha = ctx.node().attr_float("alpha", v1 ? 1.6732f : 1.67326319217681884765625f);
  const float gamma = ctx.node().attr_float("gamma", v1 ? 1.0507f : 1.05070102214813232421875f);
  return FloatActivation(ctx, [alpha, gamma](auto v) {
    using C = decltype(v);
    const C a = static_cast<C>(alpha), g = static_cast<C>(gamma);
    return v > C(0) ? g * v : g * (a * std::exp(v) - a);
  });
}

Status CeluRef(KernelContext& ctx) {
  const float alpha = ctx.node().attr_float("alpha", 1.0f);
  if (alpha == 0) return ctx.node().Invalid("attribute alpha must not be 0");
  return FloatActivation(ctx, [alpha](auto v) {
    using C = decltype(v);
    const C a = static_cast<C>(alpha);
    const C neg = a * (std::exp(v / a) - C(1));
    return (v > C(0) ? v : C(0)) + (neg < C(0) ? neg : C(0));
  });
}

Status GeluRef(KernelContext& ctx) {
  const std::string approximate = ctx.node().attr_string("approximate", "none");
  if (approximate == "tanh") {
    return FloatActivation(ctx, [](auto v) {
      using C = decltype(v);
      const C kSqrt2OverPi = static_cast<C>(0.7978845608028654);
      const C kCoeff = static_cast<C>(0.044715);
      return C(0.5) * v * (C(1) + std::tanh(kSqrt2OverPi * (v + kCoeff * v * v * v)));
    });
  }
  if (approximate != "none")
    return ctx.node().Invalid("attribute approximate is '", approximate,
                              "'; expected 'none' or 'tanh'");
  return FloatActivation(ctx, [](auto v) {
    using C = decltype(v);
    const C kSqrtHalf = static_cast<C>(0.7071067811865476);
    return C(0.5) * v * (C(1) + std::erf(v * kSqrtHalf));
  });
}

Status SigmoidRef(KernelContext& ctx) {
  return FloatActivation(ctx, [](auto v) { return Sigmoid(v); });
}

Status HardSigmoidRef(KernelContext& ctx) {
  const float alpha = ctx.node().attr_float("alpha", 0.2f);
  const float beta = ctx.node().attr_float("beta", 0.5f);
  return FloatActivation(ctx, [alpha, beta](auto v) {
    using C = decltype(v);
    C r = static_cast<C>(alpha) * v + static_cast<C>(beta);
    r = r < C(0) ? C(0) : r;
    return r > C(1) ? C(1) : r;
  });
}

Status HardSwishRef(KernelContext& ctx) {
  // x * HardSigmoid(x) with alpha = 1/6, beta = 0.5.
  return FloatActivation(ctx, [](auto v) {
    using C = decltype(v);
    C r = v / C(6) + C(0.5);
    r = r < C(0) ? C(0) : r;
    r = r > C(1) ? C(1) : r;
    return v * r;
  });
}

Status SoftplusRef(KernelContext& ctx) {
  return FloatActivation(ctx, [](auto v) { return Softplus(v); });
}

Status SoftsignRef(KernelContext& ctx) {
  return FloatActivation(ctx, [](auto v) {
    using C = decltype(v);
    return v / (C(1) + std::fabs(v));
  });
}

Status MishRef(KernelContext& ctx) {
  return FloatActivation(ctx, [](auto v) { return v * std::tanh(Softplus(v)); });
}

Status SwishRef(KernelContext& ctx) {
  const float alpha = ctx.node().attr_float("alpha", 1.0f);
  return FloatActivation(ctx, [alpha](auto v) {
    using C = decltype(v);
    return v * Sigmoid(static_cast<C>(alpha) * v);
  });
}

Status ThresholdedReluRef(KernelContext& ctx) {
  const float alpha = ctx.node().attr_float("alpha", 1.0f);
  return FloatActivation(ctx, [alpha](auto v) {
    using C = decltype(v);
    return v > static_cast<C>(alpha) ? v : C(0);
  });
}

Status ShrinkRef(KernelContext& ctx) {
  const float lambd = ctx.node().attr_float("lambd", 0.5f);
  const float bias = ctx.node().attr_float("bias", 0.0f);
  // Every numeric type; integers compute in double and convert back.
  return Activation(ctx, [](DType t, auto g) { return VisitNumeric(t, g); },
                    [lambd, bias](auto v) {
                      using C = decltype(v);
                      using W = std::conditional_t<std::is_floating_point_v<C>, C, double>;
                      const W x = static_cast<W>(v);
                      const W l = static_cast<W>(lambd), b = static_cast<W>(bias);
                      const W r = x < -l ? x + b : (x > l ? x - b : W(0));
                      return static_cast<C>(r);
                    });
}

Status TanhRef(KernelContext& ctx) {
  return FloatActivation(ctx, [](auto v) { return std::tanh(v); });
}

}  // namespace onyx::kernels::ref
