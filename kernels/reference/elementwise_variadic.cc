// Reference kernels for the variadic ops (Sum, Mean, Max, Min: multidirectional broadcasting from
// opset 8, equal shapes before) and for Where and Clip.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/op_helpers.h"
#include "kernels/reference/elementwise.h"
#include "kernels/reference/elementwise_loops.h"

namespace onyx::kernels::reference {
namespace {

Status TypeError(KernelContext& ctx, int i) {
  return ctx.node().NotSupported("input ", i, " has type ", DTypeName(ctx.input(i).dtype()),
                                 ", which this operator does not support");
}

// Folds every input into the output: y = in0 (broadcast), then y = op(y, in_k) for k >= 1.
template <typename T, typename Op>
void FoldInputs(KernelContext& ctx, T* dst, const Shape& out, Op op) {
  const int threads = ctx.intra_op_threads();
  const Tensor& x0 = ctx.input(0);
  if (ctx.num_inputs() == 1) {
    // Copy (broadcast to `out` is the identity here).
    std::copy(x0.data<T>(), x0.data<T>() + x0.numel(), dst);
    return;
  }
  const Tensor& x1 = ctx.input(1);
  BinaryBroadcast(x0.data<T>(), x0.shape(), x1.data<T>(), x1.shape(), dst, out, threads, op);
  for (int k = 2; k < ctx.num_inputs(); ++k) {
    const Tensor& xk = ctx.input(k);
    BinaryBroadcast(static_cast<const T*>(dst), out, xk.data<T>(), xk.shape(), dst, out, threads,
                    op);
  }
}

// Checks that every input is present and has input 0's type; returns the broadcast shape.
StatusOr<Shape> VariadicShape(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  if (ctx.num_inputs() < 1) return node.Invalid("expected at least one input");
  std::vector<Shape> shapes;
  const DType t = ctx.input(0).dtype();
  for (int k = 0; k < ctx.num_inputs(); ++k) {
    if (!ctx.has_input(k)) return node.Invalid("input ", k, " is missing");
    if (ctx.input(k).dtype() != t)
      return node.Invalid("input ", k, " has type ", DTypeName(ctx.input(k).dtype()), "; expected ",
                          DTypeName(t), " to match input 0");
    shapes.push_back(ctx.input(k).shape());
  }
  // Opsets < 8 required equal shapes; broadcasting them anyway accepts a superset.
  auto out = BroadcastShapes(shapes);
  if (!out.ok()) return node.Fail(out.status().message());
  return out;
}

template <typename Visit, typename Op>
Status Variadic(KernelContext& ctx, Visit visit, Op op) {
  ONYX_ASSIGN_OR_RETURN(Shape out, VariadicShape(ctx));
  const DType t = ctx.input(0).dtype();
  if (!visit(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        Tensor y = ctx.Output(0, t, out);
        FoldInputs<T>(ctx, y.data<T>(), out, op);
      }))
    return TypeError(ctx, 0);
  return Status::Ok();
}

// NaN propagates, as numpy.maximum/minimum; written as pure selects so float loops vectorise.
struct MaxOp {
  template <typename C>
  C operator()(C a, C b) const {
    return b != b ? b : (a < b ? b : a);  // a NaN: a < b is false and a is returned
  }
};
struct MinOp {
  template <typename C>
  C operator()(C a, C b) const {
    return b != b ? b : (b < a ? b : a);
  }
};
struct SumOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      using U = std::make_unsigned_t<std::conditional_t<(sizeof(C) < sizeof(int)), int, C>>;
      return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
    } else {
      return a + b;
    }
  }
};

}  // namespace

Status MaxRef(KernelContext& ctx) {
  return Variadic(
      ctx, [](DType t, auto f) { return VisitNumeric(t, f); }, MaxOp{});
}
Status MinRef(KernelContext& ctx) {
  return Variadic(
      ctx, [](DType t, auto f) { return VisitNumeric(t, f); }, MinOp{});
}
Status SumRef(KernelContext& ctx) {
  return Variadic(
      ctx, [](DType t, auto f) { return VisitNumeric(t, f); }, SumOp{});
}

Status MeanRef(KernelContext& ctx) {
  // Sum in the element type (as the ONNX reference does), then divide by the input count.
  ONYX_ASSIGN_OR_RETURN(Shape out, VariadicShape(ctx));
  const DType t = ctx.input(0).dtype();
  if (!VisitNumeric(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        using C = ComputeT<T>;
        Tensor y = ctx.Output(0, t, out);
        T* dst = y.data<T>();
        FoldInputs<T>(ctx, dst, out, SumOp{});
        const C count = static_cast<C>(ctx.num_inputs());
        const int64_t n = y.numel();
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(static_cast<C>(dst[i]) / count);
      }))
    return TypeError(ctx, 0);
  return Status::Ok();
}

// ---- Where ----
namespace {
// Selects with any element type, given as a same-sized stand-in (bytes are copied) or string.
template <typename T>
void WhereLoop(const bool* cond, const Shape& cs, const T* x, const Shape& xs, const T* y,
               const Shape& ys, T* dst, const Shape& out, int threads) {
  const int64_t n = ShapeElementCount(out);
  if (n == 0) return;
  if (ShapeElementCount(cs) == n && ShapeElementCount(xs) == n && ShapeElementCount(ys) == n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = cond[i] ? x[i] : y[i];
    return;
  }
  const BroadcastPlan plan = MakeBroadcastPlan({cs, xs, ys}, out);
  const int64_t sc = plan.inner_stride[0], sx = plan.inner_stride[1], sy = plan.inner_stride[2];
  ForEachRunParallel(plan, threads, [&](int64_t o, const int64_t* off, int64_t len) {
    const bool* pc = cond + off[0];
    const T* px = x + off[1];
    const T* py = y + off[2];
    T* pd = dst + o;
    // A scalar X or Y against a full condition (attention's NaN-to-zero after Softmax): loops
    // with fixed strides, which the compiler vectorizes (the general one ran at 0.5 ns an element).
    if constexpr (std::is_integral_v<T>) {
      // Masks instead of branches: bool is 0 or 1, so -T(c) is all ones or zero.
      if (sc == 1 && sx == 0 && sy == 1) {
        const T xv = *px;
        for (int64_t i = 0; i < len; ++i) pd[i] = py[i] ^ ((xv ^ py[i]) & -static_cast<T>(pc[i]));
        return;
      }
      if (sc == 1 && sx == 1 && sy == 0) {
        const T yv = *py;
        for (int64_t i = 0; i < len; ++i) pd[i] = yv ^ ((px[i] ^ yv) & -static_cast<T>(pc[i]));
        return;
      }
    }
    for (int64_t i = 0; i < len; ++i) pd[i] = pc[i * sc] ? px[i * sx] : py[i * sy];
  });
}
}  // namespace

Status WhereRef(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  if (!ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_input(2))
    return node.Invalid("expected three inputs (condition, X, Y)");
  const Tensor& c = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  if (c.dtype() != DType::kBool)
    return node.Invalid("input 0 'condition' has type ", DTypeName(c.dtype()), "; expected bool");
  if (x.dtype() != y.dtype())
    return node.Invalid("input 2 'Y' has type ", DTypeName(y.dtype()), "; expected ",
                        DTypeName(x.dtype()), " to match input 1 'X'");
  auto out = BroadcastShapes({c.shape(), x.shape(), y.shape()});
  if (!out.ok()) return node.Fail(out.status().message());
  const Shape& os = out.value();
  Tensor z = ctx.Output(0, x.dtype(), os);
  const int threads = ctx.intra_op_threads();
  const bool* cond = c.data<bool>();
  if (x.dtype() == DType::kString) {
    WhereLoop(cond, c.shape(), x.strings(), x.shape(), y.strings(), y.shape(), z.strings(), os,
              threads);
    return Status::Ok();
  }
  // Every other type is moved as raw bits of its size.
  switch (DTypeSize(x.dtype())) {
    case 1:
      WhereLoop(cond, c.shape(), x.data<uint8_t>(), x.shape(), y.data<uint8_t>(), y.shape(),
                z.data<uint8_t>(), os, threads);
      break;
    case 2:
      WhereLoop(cond, c.shape(), x.data<uint16_t>(), x.shape(), y.data<uint16_t>(), y.shape(),
                z.data<uint16_t>(), os, threads);
      break;
    case 4:
      WhereLoop(cond, c.shape(), x.data<uint32_t>(), x.shape(), y.data<uint32_t>(), y.shape(),
                z.data<uint32_t>(), os, threads);
      break;
    case 8:
      WhereLoop(cond, c.shape(), x.data<uint64_t>(), x.shape(), y.data<uint64_t>(), y.shape(),
                z.data<uint64_t>(), os, threads);
      break;
    case 16: {
      struct Pair {
        uint64_t lo, hi;
      };
      WhereLoop(cond, c.shape(), x.data<Pair>(), x.shape(), y.data<Pair>(), y.shape(),
                z.data<Pair>(), os, threads);
      break;
    }
    default:
      return TypeError(ctx, 1);
  }
  return Status::Ok();
}

// ---- Clip ----
namespace {
template <typename T>
Status ClipTyped(KernelContext& ctx) {
  using C = ComputeT<T>;
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  C lo = std::numeric_limits<C>::lowest();
  C hi = std::numeric_limits<C>::max();
  if (node.opset() < 11) {
    // Attributes (the op was float-only then); opset 6 documents the defaults as +-FLT_MAX.
    constexpr float kFltMax = std::numeric_limits<float>::max();
    lo = static_cast<C>(node.attr_float("min", -kFltMax));
    hi = static_cast<C>(node.attr_float("max", kFltMax));
  } else {
    static const char* const kNames[] = {"", "min", "max"};
    for (int i = 1; i <= 2; ++i) {
      if (!ctx.has_input(i)) continue;
      const Tensor& b = ctx.input(i);
      if (b.dtype() != x.dtype())
        return node.Invalid("input ", i, " '", kNames[i], "' has type ", DTypeName(b.dtype()),
                            "; expected ", DTypeName(x.dtype()), " to match input 0");
      if (b.numel() != 1)
        return node.Invalid("input ", i, " '", kNames[i], "' has shape ", ShapeToString(b.shape()),
                            "; expected a scalar");
      (i == 1 ? lo : hi) = static_cast<C>(b.data<T>()[0]);
    }
  }
  Tensor y = ctx.Output(0, x.dtype(), x.shape());
  // max then min: when min > max every element becomes max, as the spec says. NaN stays NaN.
  MapUnary(x.data<T>(), y.data<T>(), x.numel(), ctx.intra_op_threads(), [lo, hi](C v) {
    v = v < lo ? lo : v;
    return hi < v ? hi : v;
  });
  return Status::Ok();
}
}  // namespace

Status ClipRef(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.node().Invalid("input 0 'input' is missing");
  Status st;
  if (!VisitNumeric(ctx.input(0).dtype(),
                    [&](auto tag) { st = ClipTyped<typename decltype(tag)::type>(ctx); }))
    return TypeError(ctx, 0);
  return st;
}

}  // namespace onyx::kernels::reference
