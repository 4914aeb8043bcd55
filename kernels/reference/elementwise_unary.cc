// Reference kernels for the unary elementwise ops: math functions over float types (computed in
// float for float16/bfloat16), Abs/Neg/Sign over every numeric type, IsNaN/IsInf, Not, BitwiseNot.
#include <cmath>
#include <type_traits>

#include "kernels/reference/elementwise.h"
#include "kernels/reference/elementwise_loops.h"

namespace onyx::kernels::reference {
namespace {

template <typename F>
Status NumericUnary(KernelContext& ctx, F f) {
  return UnaryKernel(
      ctx, [](DType t, auto g) { return VisitNumeric(t, g); }, f);
}

// y = f(x) with a bool output, over float types.
template <typename F>
Status FloatPredicate(KernelContext& ctx, F f) {
  if (!ctx.has_input(0)) return ctx.node().Invalid("input 0 is missing");
  const Tensor& x = ctx.input(0);
  if (!VisitFloat(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        Tensor y = ctx.Output(0, DType::kBool, x.shape());
        MapUnary(x.data<T>(), y.data<bool>(), x.numel(), ctx.intra_op_threads(), f);
      }))
    return UnsupportedInputType(ctx);
  return Status::Ok();
}

}  // namespace

Status AbsRef(KernelContext& ctx) {
  return NumericUnary(ctx, [](auto v) {
    using C = decltype(v);
    if constexpr (std::is_unsigned_v<C>) {
      return v;
    } else if constexpr (std::is_integral_v<C>) {
      return static_cast<C>(v < 0 ? C(0) - v : v);  // MIN stays MIN (wraps), as numpy
    } else {
      return std::fabs(v);
    }
  });
}

Status NegRef(KernelContext& ctx) {
  return NumericUnary(ctx, [](auto v) {
    using C = decltype(v);
    if constexpr (std::is_integral_v<C>) {
      using U = std::make_unsigned_t<std::conditional_t<(sizeof(C) < sizeof(int)), int, C>>;
      return static_cast<C>(U{0} - static_cast<U>(v));
    } else {
      return -v;
    }
  });
}

Status SignRef(KernelContext& ctx) {
  return NumericUnary(ctx, [](auto v) {
    using C = decltype(v);
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(v)) return v;
    }
    return static_cast<C>(v > C(0) ? 1 : (v < C(0) ? -1 : 0));
  });
}

Status ReciprocalRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) { return decltype(v)(1) / v; });
}
Status FloorRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) { return std::floor(v); });
}
Status CeilRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) { return std::ceil(v); });
}
Status RoundRef(KernelContext& ctx) {
  // Half to even: nearbyint under the default rounding mode (round-to-nearest-even).
  return FloatUnaryKernel(ctx, [](auto v) { return std::nearbyint(v); });
}
Status SqrtRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) { return std::sqrt(v); });
}
Status ExpRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) { return std::exp(v); });
}
Status LogRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) { return std::log(v); });
}
Status SinRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) { return std::sin(v); });
}
Status CosRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) { return std::cos(v); });
}
Status TanRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) { return std::tan(v); });
}
Status AsinRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) { return std::asin(v); });
}
Status AcosRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) { return std::acos(v); });
}
Status AtanRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) { return std::atan(v); });
}
Status SinhRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) { return std::sinh(v); });
}
Status CoshRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) { return std::cosh(v); });
}
Status AsinhRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) { return std::asinh(v); });
}
Status AcoshRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) { return std::acosh(v); });
}
Status AtanhRef(KernelContext& ctx) {
  return FloatUnaryKernel(ctx, [](auto v) { return std::atanh(v); });
}

Status ErfRef(KernelContext& ctx) {
  // Opset 13 allows every numeric type; integers go through float (as the ONNX reference does,
  // so erf(5) -> 1) and truncate back.
  return NumericUnary(ctx, [](auto v) {
    using C = decltype(v);
    if constexpr (std::is_floating_point_v<C>) {
      return std::erf(v);
    } else {
      return static_cast<C>(static_cast<float>(std::erf(static_cast<double>(v))));
    }
  });
}

Status IsNaNRef(KernelContext& ctx) {
  return FloatPredicate(ctx, [](auto v) { return std::isnan(v); });
}

Status IsInfRef(KernelContext& ctx) {
  const bool neg = ctx.node().attr_int("detect_negative", 1) != 0;
  const bool pos = ctx.node().attr_int("detect_positive", 1) != 0;
  return FloatPredicate(ctx, [neg, pos](auto v) { return std::isinf(v) && (v > 0 ? pos : neg); });
}

Status NotRef(KernelContext& ctx) {
  return UnaryKernel(
      ctx, [](DType t, auto g) { return t == DType::kBool && (g(TypeTag<bool>{}), true); },
      [](bool v) { return !v; });
}

Status BitwiseNotRef(KernelContext& ctx) {
  return UnaryKernel(
      ctx, [](DType t, auto g) { return VisitInteger(t, g); },
      [](auto v) { return static_cast<decltype(v)>(~v); });
}

}  // namespace onyx::kernels::reference
