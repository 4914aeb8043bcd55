// Reference kernels for the binary elementwise ops: arithmetic, Pow, Mod, bit shifts, bitwise and
// boolean logic, comparisons. All broadcast multidirectionally (numpy) from opset 7; before that B
// is broadcast onto A under the legacy `broadcast`/`axis` attributes.
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "kernels/op_helpers.h"
#include "kernels/reference/elementwise.h"
#include "kernels/reference/elementwise_loops.h"

namespace onyx::kernels::reference {
namespace {

// Shapes of one binary evaluation: A and B as they broadcast (B possibly re-aligned under the
// legacy rules) and the output's.
struct BinaryShapes {
  Shape a, b, out;
};

// Opset < 7 (Add, Sub, Mul, Div, Pow, And, Or, Xor, Equal, Greater, Less): without broadcast=1 the
// shapes must match; with it, B's dims line up with A's starting at `axis` (default: trailing).
StatusOr<BinaryShapes> LegacyShapes(const NodeView& node, const Shape& a, const Shape& b) {
  BinaryShapes s{a, b, a};
  if (node.attr_int("broadcast", 0) == 0) {
    if (a != b)
      return node.Fail("input 1 'B' has shape ", ShapeToString(b), "; expected ", ShapeToString(a),
                       " to match input 0 'A' (broadcast=0 before opset 7)");
    return s;
  }
  const int64_t ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
  if (rb > ra)
    return node.Fail("input 1 'B' has rank ", rb, "; expected at most the rank ", ra,
                     " of input 0 'A' for legacy broadcasting");
  const int64_t axis = node.has_attr("axis") ? node.attr_int("axis", 0) : ra - rb;
  const int64_t start = axis < 0 ? axis + ra : axis;
  if (start < 0 || start + rb > ra)
    return node.Fail("attribute axis ", axis, " does not place input 1 'B' ", ShapeToString(b),
                     " inside input 0 'A' ", ShapeToString(a));
  Shape eff(a.size(), 1);
  for (int64_t i = 0; i < rb; ++i) {
    if (b[i] != 1 && b[i] != a[start + i])
      return node.Fail("input 1 'B' ", ShapeToString(b), " cannot broadcast onto input 0 'A' ",
                       ShapeToString(a), " at axis ", axis);
    eff[start + i] = b[i];
  }
  s.b = std::move(eff);
  return s;
}

StatusOr<BinaryShapes> ResolveShapes(KernelContext& ctx, bool legacy_broadcast_attrs) {
  const NodeView& node = ctx.node();
  if (!ctx.has_input(0) || !ctx.has_input(1))
    return node.Invalid("expected two inputs, got ", ctx.num_inputs());
  const Shape& a = ctx.input(0).shape();
  const Shape& b = ctx.input(1).shape();
  if (legacy_broadcast_attrs && node.opset() < 7) return LegacyShapes(node, a, b);
  auto out = BroadcastShapes({a, b});
  if (!out.ok()) return node.Fail("inputs 0 'A' and 1 'B': ", out.status().message());
  return BinaryShapes{a, b, std::move(out).value()};
}

Status TypeError(KernelContext& ctx, int i) {
  return ctx.node().NotSupported("input ", i, " has type ", DTypeName(ctx.input(i).dtype()),
                                 ", which this operator does not support");
}

Status ExpectSameTypes(KernelContext& ctx) {
  if (ctx.input(0).dtype() != ctx.input(1).dtype())
    return ctx.node().Invalid("input 1 has type ", DTypeName(ctx.input(1).dtype()), "; expected ",
                              DTypeName(ctx.input(0).dtype()), " to match input 0");
  return Status::Ok();
}

// Runs op over A and B (both of type T) into an output of type R (bool for comparisons).
template <typename T, typename R, typename Op>
Status RunBinary(KernelContext& ctx, DType out_type, bool legacy, Op op) {
  ONYX_ASSIGN_OR_RETURN(BinaryShapes s, ResolveShapes(ctx, legacy));
  Tensor y = ctx.Output(0, out_type, s.out);
  BinaryBroadcast(ctx.input(0).data<T>(), s.a, ctx.input(1).data<T>(), s.b, y.data<R>(), s.out,
                  ctx.intra_op_threads(), op);
  return Status::Ok();
}

// Same-type op whose output has the input type; `Visit` picks the supported type set.
template <typename Visit, typename Op>
Status SameTypeBinary(KernelContext& ctx, Visit visit, Op op) {
  ONYX_RETURN_IF_ERROR(ExpectSameTypes(ctx));
  const DType t = ctx.input(0).dtype();
  Status st;
  if (!visit(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        st = RunBinary<T, T>(ctx, t, /*legacy=*/true, op);
      }))
    return TypeError(ctx, 0);
  return st;
}

// Two's-complement wrapping for integer arithmetic (signed overflow is undefined in C++).
template <typename C, bool kInt = std::is_integral_v<C> && !std::is_same_v<C, bool>>
struct Wrap {
  using type = C;
};
template <typename C>
struct Wrap<C, true> {
  using type = std::make_unsigned_t<std::conditional_t<(sizeof(C) < sizeof(int)), int, C>>;
};
template <typename C>
using WrapT = typename Wrap<C>::type;

struct AddOp {
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(static_cast<WrapT<C>>(a) + static_cast<WrapT<C>>(b));
  }
};
struct SubOp {
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(static_cast<WrapT<C>>(a) - static_cast<WrapT<C>>(b));
  }
};
struct MulOp {
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(static_cast<WrapT<C>>(a) * static_cast<WrapT<C>>(b));
  }
};
struct DivOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return 0;  // undefined in ONNX; numpy gives 0
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return static_cast<C>(WrapT<C>{0} - static_cast<WrapT<C>>(a));  // MIN / -1
      }
      return static_cast<C>(a / b);  // C++ truncates toward zero, as ONNX requires
    } else {
      return a / b;
    }
  }
};

}  // namespace

Status AddRef(KernelContext& ctx) {
  return SameTypeBinary(
      ctx, [](DType t, auto f) { return VisitNumeric(t, f); }, AddOp{});
}
Status SubRef(KernelContext& ctx) {
  return SameTypeBinary(
      ctx, [](DType t, auto f) { return VisitNumeric(t, f); }, SubOp{});
}
Status MulRef(KernelContext& ctx) {
  return SameTypeBinary(
      ctx, [](DType t, auto f) { return VisitNumeric(t, f); }, MulOp{});
}
Status DivRef(KernelContext& ctx) {
  return SameTypeBinary(
      ctx, [](DType t, auto f) { return VisitNumeric(t, f); }, DivOp{});
}

// ---- Mod ----
namespace {
template <bool kFmod>
struct ModOp {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return 0;  // undefined in ONNX; numpy gives 0
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return 0;  // avoids the MIN % -1 trap
      }
      C r = static_cast<C>(a % b);
      if constexpr (!kFmod && std::is_signed_v<C>) {
        if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
      }
      return r;
    } else {
      C r = std::fmod(a, b);
      // fmod=0 on floats (not allowed by the spec, accepted here): numpy's mod, sign of divisor.
      if constexpr (!kFmod) {
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
      }
      return r;
    }
  }
};
}  // namespace

Status ModRef(KernelContext& ctx) {
  const bool fmod = ctx.node().attr_int("fmod", 0) != 0;
  auto visit = [](DType t, auto f) { return VisitNumeric(t, f); };
  return fmod ? SameTypeBinary(ctx, visit, ModOp<true>{})
              : SameTypeBinary(ctx, visit, ModOp<false>{});
}

// ---- Pow ----
namespace {

// Integer power by squaring with wrapping; negative exponents truncate 1/a^|b| toward zero.
template <typename C>
C IntPow(C base, int64_t exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<C>) {
      if (base == -1) return (exp & 1) ? C(-1) : C(1);
    }
    return 0;  // |1 / base^|exp|| < 1 (and 1/0 is undefined: 0)
  }
  using U = WrapT<C>;
  U result = 1, b = static_cast<U>(base);
  while (exp > 0) {
    if (exp & 1) result = static_cast<U>(result * b);
    b = static_cast<U>(b * b);
    exp >>= 1;
  }
  return static_cast<C>(result);
}

// Float -> integer with truncation; NaN and out-of-range give 0 / the saturated bound.
template <typename C>
C FloatToIntTrunc(double v) {
  if (std::isnan(v)) return 0;
  constexpr double lo = static_cast<double>(std::numeric_limits<C>::lowest());
  constexpr double hi = static_cast<double>(std::numeric_limits<C>::max());
  if (v <= lo) return std::numeric_limits<C>::lowest();
  if (v >= hi) return std::numeric_limits<C>::max();
  return static_cast<C>(v);
}

struct PowOp {
  template <typename CA, typename CB>
  CA operator()(CA a, CB b) const {
    if constexpr (std::is_floating_point_v<CA>) {
      if constexpr (std::is_same_v<CA, CB>) {
        return std::pow(a, b);
      } else {
        return static_cast<CA>(std::pow(static_cast<double>(a), static_cast<double>(b)));
      }
    } else if constexpr (std::is_integral_v<CB>) {
      return IntPow<CA>(a, static_cast<int64_t>(b));
    } else {
      return FloatToIntTrunc<CA>(std::pow(static_cast<double>(a), static_cast<double>(b)));
    }
  }
};

}  // namespace

Status PowRef(KernelContext& ctx) {
  ONYX_ASSIGN_OR_RETURN(BinaryShapes s, ResolveShapes(ctx, /*legacy=*/true));
  const Tensor& x = ctx.input(0);
  const Tensor& e = ctx.input(1);
  Status st;
  // Before opset 12 both have one type; from 12 the exponent may be any numeric type.
  bool ok = VisitNumeric(x.dtype(), [&](auto xtag) {
    using T = typename decltype(xtag)::type;
    if (!VisitNumeric(e.dtype(), [&](auto etag) {
          using E = typename decltype(etag)::type;
          Tensor y = ctx.Output(0, x.dtype(), s.out);
          BinaryBroadcast(x.data<T>(), s.a, e.data<E>(), s.b, y.data<T>(), s.out,
                          ctx.intra_op_threads(), PowOp{});
        }))
      st = TypeError(ctx, 1);
  });
  if (!ok) return TypeError(ctx, 0);
  return st;
}

// ---- BitShift and bitwise ----
Status BitShiftRef(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectSameTypes(ctx));
  const std::string dir = ctx.node().attr_string("direction", "");
  if (dir != "LEFT" && dir != "RIGHT")
    return ctx.node().Invalid("attribute direction is '", dir, "'; expected LEFT or RIGHT");
  const bool left = dir == "LEFT";
  // Opset 28: signed right shifts are arithmetic; a shift outside [0, bits) leaves only the sign
  // extension (-1 for a negative value shifted right, else 0). Left shifts wrap as unsigned.
  auto shift = [left](auto a, auto b) {
    using C = decltype(a);
    constexpr int kBits = static_cast<int>(sizeof(C) * 8);
    if constexpr (std::is_signed_v<C>) {
      if (b < 0 || b >= static_cast<C>(kBits)) return C(!left && a < 0 ? -1 : 0);
    } else if (b >= static_cast<C>(kBits)) {
      return C(0);
    }
    using U = WrapT<C>;
    return left ? static_cast<C>(static_cast<U>(a) << b) : static_cast<C>(a >> b);
  };
  const DType t = ctx.input(0).dtype();
  Status st;
  bool ok = false;
  const bool is_signed =
      t == DType::kInt8 || t == DType::kInt16 || t == DType::kInt32 || t == DType::kInt64;
  if (!is_signed || ctx.node().opset() >= 28) {  // opset 28 added the signed types
    ok = VisitInteger(t, [&](auto tag) {
      using C = typename decltype(tag)::type;
      st = RunBinary<C, C>(ctx, t, false, shift);
    });
  }
  if (!ok) return TypeError(ctx, 0);
  return st;
}

namespace {
template <typename Op>
Status BitwiseBinary(KernelContext& ctx, Op op) {
  ONYX_RETURN_IF_ERROR(ExpectSameTypes(ctx));
  const DType t = ctx.input(0).dtype();
  Status st;
  if (!VisitInteger(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        st = RunBinary<T, T>(ctx, t, false, [op](T a, T b) { return static_cast<T>(op(a, b)); });
      }))
    return TypeError(ctx, 0);
  return st;
}

template <typename Op>
Status LogicBinary(KernelContext& ctx, Op op) {
  ONYX_RETURN_IF_ERROR(ExpectSameTypes(ctx));
  if (ctx.input(0).dtype() != DType::kBool) return TypeError(ctx, 0);
  return RunBinary<bool, bool>(ctx, DType::kBool, true, op);
}

// Comparisons over every numeric type, bool and (when kStrings) string; bool output.
template <bool kStrings, typename Op>
Status CompareBinary(KernelContext& ctx, Op op) {
  ONYX_RETURN_IF_ERROR(ExpectSameTypes(ctx));
  const DType t = ctx.input(0).dtype();
  if (kStrings && t == DType::kString)
    return RunBinary<std::string, bool>(ctx, DType::kBool, true, op);
  Status st;
  if (!VisitNumericOrBool(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        st = RunBinary<T, bool>(ctx, DType::kBool, true, op);
      }))
    return TypeError(ctx, 0);
  return st;
}
}  // namespace

Status BitwiseAndRef(KernelContext& ctx) {
  return BitwiseBinary(ctx, [](auto a, auto b) { return a & b; });
}
Status BitwiseOrRef(KernelContext& ctx) {
  return BitwiseBinary(ctx, [](auto a, auto b) { return a | b; });
}
Status BitwiseXorRef(KernelContext& ctx) {
  return BitwiseBinary(ctx, [](auto a, auto b) { return a ^ b; });
}
Status AndRef(KernelContext& ctx) {
  return LogicBinary(ctx, [](bool a, bool b) { return a && b; });
}
Status OrRef(KernelContext& ctx) {
  return LogicBinary(ctx, [](bool a, bool b) { return a || b; });
}
Status XorRef(KernelContext& ctx) {
  return LogicBinary(ctx, [](bool a, bool b) { return a != b; });
}
Status EqualRef(KernelContext& ctx) {
  return CompareBinary<true>(ctx, [](const auto& a, const auto& b) { return a == b; });
}
Status GreaterRef(KernelContext& ctx) {
  return CompareBinary<false>(ctx, [](auto a, auto b) { return a > b; });
}
Status LessRef(KernelContext& ctx) {
  return CompareBinary<false>(ctx, [](auto a, auto b) { return a < b; });
}
Status GreaterOrEqualRef(KernelContext& ctx) {
  return CompareBinary<false>(ctx, [](auto a, auto b) { return a >= b; });
}
Status LessOrEqualRef(KernelContext& ctx) {
  return CompareBinary<false>(ctx, [](auto a, auto b) { return a <= b; });
}

}  // namespace onyx::kernels::reference
