// Reference kernels of the activation family: the table's activations run its scalar definitions
// (kernels/activation_rules.h, written so the float32 loops vectorise); PRelu, SwiGLU and Shrink,
// which are not unary functions of X with scalar parameters, are here.
#include "kernels/reference/activation.h"

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "kernels/activation_rules.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/elementwise_loops.h"

namespace onyx::kernels::reference {

Status ActivationRef(KernelContext& ctx) {
  ONYX_ASSIGN_OR_RETURN(const Activation a, ParseActivation(ctx.node()));
  if (a.kind == ActivationKind::kRelu) {
    // Float types; opset 14 adds the signed integers (any numeric type is accepted).
    return UnaryKernel(
        ctx, [](DType t, auto g) { return VisitNumeric(t, g); },
        [](auto v) {
          using C = decltype(v);
          return ActivationScalar<ActivationKind::kRelu>(v, C(0), C(0), C(0));
        });
  }
  return VisitActivationKind(a.kind, [&](auto k) {
    return FloatUnaryKernel(ctx, [a](auto v) {
      using C = decltype(v);
      return ActivationScalar<decltype(k)::value>(v, static_cast<C>(a.alpha),
                                                  static_cast<C>(a.beta), static_cast<C>(a.gamma));
    });
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
      py[i] = static_cast<T>(v * activation_math::Sigmoid(static_cast<C>(alpha) * v) *
                             static_cast<C>(pb[i]));
    }
  });
  if (!ok) return node.NotSupported("input A has type ", DTypeName(a.dtype()));
  return Status::Ok();
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

}  // namespace onyx::kernels::reference
