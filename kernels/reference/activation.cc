// Reference kernels of the activation family: plain per-element formulas from the ONNX specs,
// written so the float32 loops vectorise (no calls but libm, no branches that block if-conversion
// for Relu/LeakyRelu/HardSigmoid/HardSwish).
#include "kernels/reference/activation.h"

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "kernels/op_helpers.h"
#include "kernels/reference/elementwise_loops.h"

namespace onyx::kernels::reference {
namespace {

// exp for activations: the branch-free float version (vectorises), libm for double.
template <typename C>
ONYX_ELEMENT_INLINE C ActExp(C v) {
  if constexpr (std::is_same_v<C, float>) {
    return ExpClampedF32(v);
  } else {
    return std::exp(v);
  }
}

template <typename C>
ONYX_ELEMENT_INLINE C Sigmoid(C v) {
  // e = exp(-|v|) never overflows; sigmoid(v) = 1/(1+e) for v >= 0, e/(1+e) below.
  const C e = ActExp(-std::fabs(v));
  const C s = C(1) / (C(1) + e);
  return Select(v >= C(0), s, e * s);
}

template <typename C>
ONYX_ELEMENT_INLINE C Tanh(C v) {
  if constexpr (std::is_same_v<C, float>) {
    // Cephes tanhf: an odd polynomial below 0.625, 1 - 2/(exp(2|v|)+1) above; both computed and
    // selected so the loop stays branch-free. NaN propagates through both.
    const C a = std::fabs(v);
    const C z = v * v;
    C p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    const C small = p * z * v + v;
    const C big = C(1) - C(2) / (ExpClampedF32(C(2) * a) + C(1));
    return Select(a < C(0.625), small, std::copysign(big, v));
  } else {
    return std::tanh(v);
  }
}

template <typename C>
ONYX_ELEMENT_INLINE C Softplus(C v) {
  // log(1 + exp(v)) without overflow for large v.
  return Select(v > C(0), v, C(0)) + std::log1p(ActExp(-std::fabs(v)));
}

}  // namespace

Status ReluRef(KernelContext& ctx) {
  // Float types; opset 14 adds the signed integers (any numeric type is accepted).
  return UnaryKernel(
      ctx, [](DType t, auto g) { return VisitNumeric(t, g); },
      [](auto v) {
        using C = decltype(v);
        return Select(v < C(0), C(0), v);  // NaN passes through
      });
}

Status LeakyReluRef(KernelContext& ctx) {
  const float alpha = ctx.node().attr_float("alpha", 0.01f);
  return FloatUnaryKernel(ctx, [alpha](auto v) {
    using C = decltype(v);
    return Select(v < C(0), static_cast<C>(alpha) * v, v);
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
  if (node.opset() < 7 && slope_shape.size() == 1 && x.rank() >= 2 && slope_shape[0] == x.dim(1) &&
      x.dim(x.rank() - 1) != slope_shape[0]) {
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
                          return Select(v < C(0), static_cast<C>(s * v), v);
                        });
      }))
    return UnsupportedInputType(ctx);
  return Status::Ok();
}

Status EluRef(KernelContext& ctx) {
  const float alpha = ctx.node().attr_float("alpha", 1.0f);
  return FloatUnaryKernel(ctx, [alpha](auto v) {
    using C = decltype(v);
    return Select(v < C(0), static_cast<C>(alpha) * (ActExp(v) - C(1)), v);
  });
}

Status SeluRef(KernelContext& ctx) {
  const bool v1 = ctx.node().opset() < 6;  // opset 1 documented shorter constants
  const float alpha = ctx.node().attr_float("alpha", v1 ? 1.6732f : 1.67326319217681884765625f);
  const float gamma = ctx.node().attr_float("gamma", v1 ? 1.0507f : 1.05070102214813232421875f);
  return FloatUnaryKernel(ctx, [alpha, gamma](auto v) {
    using C = decltype(v);
    const C a = static_cast<C>(alpha), g = static_cast<C>(gamma);
    return Select(v > C(0), g * v, g * (a * ActExp(v) - a));
  });
}

Status CeluRef(KernelContext& ctx) {
  const float alpha = ctx.node().attr_float("alpha", 1.0f);
  if (alpha == 0) return ctx.node().Invalid("attribute alpha must not be 0");
  return FloatUnaryKernel(ctx, [alpha](auto v) {
    using C = decltype(v);
    const C a = static_cast<C>(alpha);
    // max(0, x) + min(0, a(exp(x/a) - 1)) is x for x > 0 and the second term otherwise; picking
    // by x keeps NaN inputs NaN (summing two clamps turned them into 0).
    const C neg = a * (ActExp(v / a) - C(1));
    return Select(v > C(0), v, neg);
  });
}

Status GeluRef(KernelContext& ctx) {
  const std::string approximate = ctx.node().attr_string("approximate", "none");
  if (approximate == "tanh") {
    return FloatUnaryKernel(ctx, [](auto v) {
      using C = decltype(v);
      const C kSqrt2OverPi = static_cast<C>(0.7978845608028654);
      const C kCoeff = static_cast<C>(0.044715);
      return C(0.5) * v * (C(1) + Tanh(kSqrt2OverPi * (v + kCoeff * v * v * v)));
    });
  }
  if (approximate != "none")
    return ctx.node().Invalid("attribute approximate is '", approximate,
                              "'; expected 'none' or 'tanh'");
  return FloatUnaryKernel(ctx, [](auto v) {
    using C = decltype(v);
    const C kSqrtHalf = static_cast<C>(0.7071067811865476);
    return C(0.5) * v * (C(1) + std::erf(v * kSqrtHalf));
  });
}

Status SigmoidRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) { return Sigmoid(v); });
}

Status HardSigmoidRef(KernelContext& ctx) {
  const float alpha = ctx.node().attr_float("alpha", 0.2f);
  const float beta = ctx.node().attr_float("beta", 0.5f);
  return FloatUnaryKernel(ctx, [alpha, beta](auto v) {
    using C = decltype(v);
    const C r = Select(static_cast<C>(alpha) * v + static_cast<C>(beta) < C(0), C(0),
                       static_cast<C>(alpha) * v + static_cast<C>(beta));
    return Select(r > C(1), C(1), r);
  });
}

Status HardSwishRef(KernelContext& ctx) {
  // x * HardSigmoid(x) with alpha = 1/6, beta = 0.5.
  return FloatUnaryKernel(ctx, [](auto v) {
    using C = decltype(v);
    const C h = v / C(6) + C(0.5);
    const C r = Select(h > C(1), C(1), Select(h < C(0), C(0), h));
    return v * r;
  });
}

Status SoftplusRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) { return Softplus(v); });
}

Status SoftsignRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) {
    using C = decltype(v);
    return v / (C(1) + std::fabs(v));
  });
}

Status MishRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) {
    using C = decltype(v);
    if constexpr (std::is_same_v<C, float>) {
      // tanh(log(1 + n)) = n(n + 2) / (n(n + 2) + 2) with n = e^v: no log, so it vectorises.
      // Above 20 the ratio is 1 in float (and n(n + 2) would overflow).
      // At -inf the formula is -inf * tanh(softplus(-inf)) = -inf * 0 = NaN, as the reference
      // evaluator and ONNX Runtime give; the clamped exp would otherwise return -inf.
      const C n = ExpClampedF32(v);
      const C m = n * (n + C(2));
      const C r = Select(v > C(20), v, v * m / (m + C(2)));
      return Select(v < -std::numeric_limits<C>::max(), v * C(0), r);
    } else {
      return v * std::tanh(Softplus(v));
    }
  });
}

Status SwishRef(KernelContext& ctx) {
  const float alpha = ctx.node().attr_float("alpha", 1.0f);
  return FloatUnaryKernel(ctx, [alpha](auto v) {
    using C = decltype(v);
    return v * Sigmoid(static_cast<C>(alpha) * v);
  });
}

Status SwiGLURef(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (b.dtype() != a.dtype())
    return node.Fail("inputs A and B have types ", DTypeName(a.dtype()), " and ",
                     DTypeName(b.dtype()), "; SwiGLU needs one type");
  if (b.shape() != a.shape())
    return node.Fail("inputs A ", ShapeToString(a.shape()), " and B ", ShapeToString(b.shape()),
                     " differ in shape; SwiGLU does not broadcast");
  const float alpha = node.attr_float("alpha", 1.0f);
  Tensor y = ctx.Output(0, a.dtype(), a.shape());
  const int64_t n = a.numel();
  const bool ok = VisitFloat(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      const C v = static_cast<C>(pa[i]);
      py[i] = static_cast<T>(v * Sigmoid(static_cast<C>(alpha) * v) * static_cast<C>(pb[i]));
    }
  });
  if (!ok) return node.NotSupported("input A has type ", DTypeName(a.dtype()));
  return Status::Ok();
}

Status ThresholdedReluRef(KernelContext& ctx) {
  const float alpha = ctx.node().attr_float("alpha", 1.0f);
  return FloatUnaryKernel(ctx, [alpha](auto v) {
    using C = decltype(v);
    return Select(v > static_cast<C>(alpha), v, C(0));
  });
}

Status ShrinkRef(KernelContext& ctx) {
  const float lambd = ctx.node().attr_float("lambd", 0.5f);
  const float bias = ctx.node().attr_float("bias", 0.0f);
  // Every numeric type; integers compute in double and convert back.
  return UnaryKernel(
      ctx, [](DType t, auto g) { return VisitNumeric(t, g); },
      [lambd, bias](auto v) {
        using C = decltype(v);
        using W = std::conditional_t<std::is_floating_point_v<C>, C, double>;
        const W x = static_cast<W>(v);
        const W l = static_cast<W>(lambd), b = static_cast<W>(bias);
        const W r = Select(x < -l, x + b, Select(x > l, x - b, W(0)));
        return static_cast<C>(r);
      });
}

Status TanhRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) { return Tanh(v); });
}

}  // namespace onyx::kernels::reference
