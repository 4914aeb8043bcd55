// Elementwise family: unary math, binary arithmetic with broadcasting, comparison, logic, bitwise,
// Where, Clip, Cast/CastLike, Sum/Mean/Max/Min.
#include "kernels/reference/elementwise.h"

#include <cctype>
#include <initializer_list>
#include <string>

#include "kernels/activation_rules.h"
#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"

namespace onyx::kernels {
namespace {

// ---- type sets as bit masks over DType ----
constexpr uint32_t Bit(DType t) {
  return uint32_t{1} << static_cast<int>(t);
}
constexpr uint32_t kFloats =
    Bit(DType::kFloat) | Bit(DType::kDouble) | Bit(DType::kFloat16) | Bit(DType::kBFloat16);
constexpr uint32_t kUnsigned =
    Bit(DType::kUInt8) | Bit(DType::kUInt16) | Bit(DType::kUInt32) | Bit(DType::kUInt64);
constexpr uint32_t kSigned =
    Bit(DType::kInt8) | Bit(DType::kInt16) | Bit(DType::kInt32) | Bit(DType::kInt64);
constexpr uint32_t kInts = kSigned | kUnsigned;
constexpr uint32_t kNumeric = kFloats | kInts;
constexpr uint32_t kBool = Bit(DType::kBool);
constexpr uint32_t kString = Bit(DType::kString);
// Cast handles every type onyx stores except complex.
constexpr uint32_t kCastable = kNumeric | kBool | kString | Bit(DType::kFloat8E4M3FN) |
                               Bit(DType::kFloat8E4M3FNUZ) | Bit(DType::kFloat8E5M2) |
                               Bit(DType::kFloat8E5M2FNUZ) | Bit(DType::kFloat8E8M0) |
                               Bit(DType::kFloat4E2M1) | Bit(DType::kInt4) | Bit(DType::kUInt4) |
                               Bit(DType::kInt2) | Bit(DType::kUInt2);

const std::string& InputName(InferContext& ctx, int i) {
  return kernels::InputName(ctx.node(), i);
}

// kUnsupported naming the input when its (known) element type is outside `allowed`.
Status CheckType(InferContext& ctx, int i, uint32_t allowed) {
  if (!ctx.has_input(i)) return Status::Ok();
  const TypeInfo& t = ctx.input_type(i);
  if (!t.is_tensor() || t.elem == DType::kUndefined) return Status::Ok();  // checked at run time
  if (static_cast<int>(t.elem) <= kMaxDType && (allowed & Bit(t.elem))) return Status::Ok();
  return ctx.node().NotSupported("input ", i, " '", InputName(ctx, i), "' has type ",
                                 DTypeName(t.elem), ", which ", ctx.node().op_type(),
                                 " does not support");
}

// kInvalidModel when inputs i and j both have known, different element types.
Status CheckSameType(InferContext& ctx, int i, int j) {
  if (!ctx.has_input(i) || !ctx.has_input(j)) return Status::Ok();
  const TypeInfo& a = ctx.input_type(i);
  const TypeInfo& b = ctx.input_type(j);
  if (!a.is_tensor() || !b.is_tensor() || a.elem == DType::kUndefined ||
      b.elem == DType::kUndefined || a.elem == b.elem)
    return Status::Ok();
  return ctx.node().Invalid("input ", j, " '", InputName(ctx, j), "' has type ", DTypeName(b.elem),
                            "; expected ", DTypeName(a.elem), " to match input ", i, " '",
                            InputName(ctx, i), "'");
}

// Input 0's type and shape with element type `elem` (kUndefined: keep input 0's).
void SetLikeInput0(InferContext& ctx, DType elem) {
  if (!ctx.has_output(0) || !ctx.has_input(0)) return;
  TypeInfo t = ctx.input_type(0);
  if (elem != DType::kUndefined) {
    if (t.kind == TypeInfo::Kind::kUnknown) t.kind = TypeInfo::Kind::kTensor;
    t.elem = elem;
  }
  ctx.SetOutputType(0, t);
}

template <uint32_t kAllowed>
Status InferUnary(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckType(ctx, 0, kAllowed));
  SetLikeInput0(ctx, DType::kUndefined);
  return Status::Ok();
}

template <uint32_t kAllowed>
Status InferPredicate(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckType(ctx, 0, kAllowed));
  SetLikeInput0(ctx, DType::kBool);
  return Status::Ok();
}

// Two inputs of one type from kAllowed; bool output when kBoolOut. Before opset 7 the legacy
// broadcast makes the output take input 0's shape.
template <uint32_t kAllowed, bool kBoolOut>
Status InferBinary(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckType(ctx, 0, kAllowed));
  ONYX_RETURN_IF_ERROR(CheckType(ctx, 1, kAllowed));
  ONYX_RETURN_IF_ERROR(CheckSameType(ctx, 0, 1));
  if (ctx.node().opset() < 7) {
    SetLikeInput0(ctx, kBoolOut ? DType::kBool : DType::kUndefined);
    return Status::Ok();
  }
  return InferBroadcast(ctx, {0, 1}, kBoolOut ? DType::kBool : ctx.input_type(0).elem);
}

Status InferPow(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckType(ctx, 0, kNumeric));
  ONYX_RETURN_IF_ERROR(CheckType(ctx, 1, kNumeric));
  if (ctx.node().opset() < 12) ONYX_RETURN_IF_ERROR(CheckSameType(ctx, 0, 1));
  if (ctx.node().opset() < 7) {
    SetLikeInput0(ctx, DType::kUndefined);
    return Status::Ok();
  }
  return InferBroadcast(ctx, {0, 1}, ctx.input_type(0).elem);
}

// Sum/Mean/Max/Min: every input of input 0's type, broadcast together.
template <uint32_t kAllowed>
Status InferVariadic(InferContext& ctx) {
  if (ctx.num_inputs() < 1) return ctx.node().Invalid("expected at least one input");
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.node().Invalid("input ", i, " is missing");
    ONYX_RETURN_IF_ERROR(CheckType(ctx, i, kAllowed));
    ONYX_RETURN_IF_ERROR(CheckSameType(ctx, 0, i));
  }
  return InferBroadcastAll(ctx);
}

Status InferWhere(InferContext& ctx) {
  for (int i = 0; i < 3; ++i)
    if (!ctx.has_input(i)) return ctx.node().Invalid("input ", i, " is missing");
  const TypeInfo& cond = ctx.input_type(0);
  if (cond.is_tensor() && cond.elem != DType::kUndefined && cond.elem != DType::kBool)
    return ctx.node().Invalid("input 0 '", InputName(ctx, 0), "' has type ", DTypeName(cond.elem),
                              "; expected bool");
  ONYX_RETURN_IF_ERROR(CheckType(ctx, 1, kCastable));
  ONYX_RETURN_IF_ERROR(CheckSameType(ctx, 1, 2));
  return InferBroadcast(ctx, {0, 1, 2}, ctx.input_type(1).elem);
}

Status InferClip(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckType(ctx, 0, kNumeric));
  for (int i = 1; i <= 2 && i < ctx.num_inputs(); ++i) {
    ONYX_RETURN_IF_ERROR(CheckSameType(ctx, 0, i));
    if (!ctx.has_input(i)) continue;
    const TypeInfo& t = ctx.input_type(i);
    const bool scalar =
        t.has_shape &&
        (t.dims.empty() || (t.dims.size() == 1 && t.dims[0].known() && t.dims[0].value == 1));
    if (t.has_shape && !scalar)
      return ctx.node().Invalid("input ", i, " '", InputName(ctx, i), "' has type ", t.ToString(),
                                "; expected a scalar");
  }
  SetLikeInput0(ctx, DType::kUndefined);
  return Status::Ok();
}

// Cast's target type: the int attribute `to`, or (opset < 6) its upper-case name as a string.
StatusOr<DType> CastTarget(const NodeView& node) {
  const ir::Attribute* a = node.node().attr("to");
  if (!a) return node.Invalid("attribute 'to' is missing");
  DType to = DType::kUndefined;
  if (a->type == ir::AttrType::kString) {
    std::string lower;
    for (char c : a->s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    to = DTypeFromName(lower);
  } else if (IsKnownDType(static_cast<int32_t>(a->i))) {
    to = static_cast<DType>(a->i);
  }
  if (to == DType::kUndefined || !(kCastable & Bit(to)))
    return node.NotSupported("attribute 'to' names type ",
                             a->type == ir::AttrType::kString ? a->s
                             : IsKnownDType(static_cast<int32_t>(a->i))
                                 ? std::string(DTypeName(static_cast<DType>(a->i)))
                                 : std::to_string(a->i),
                             ", which ", node.op_type(), " does not support");
  return to;
}

Status InferCast(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckType(ctx, 0, kCastable));
  ONYX_ASSIGN_OR_RETURN(DType to, CastTarget(ctx.node()));
  SetLikeInput0(ctx, to);
  return Status::Ok();
}

Status InferCastLike(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckType(ctx, 0, kCastable));
  ONYX_RETURN_IF_ERROR(CheckType(ctx, 1, kCastable));
  if (!ctx.has_input(1)) return ctx.node().Invalid("input 1 'target_type' is missing");
  const TypeInfo& target = ctx.input_type(1);
  if (target.is_tensor() && target.elem != DType::kUndefined) {
    SetLikeInput0(ctx, target.elem);
  } else if (ctx.has_output(0)) {
    ctx.SetOutputType(0, TypeInfo());  // unknown until run time
  }
  return Status::Ok();
}

Status InferBitShift(InferContext& ctx) {
  const std::string dir = ctx.node().attr_string("direction", "");
  if (dir != "LEFT" && dir != "RIGHT")
    return ctx.node().Invalid("attribute direction is '", dir, "'; expected LEFT or RIGHT");
  // Opset 28 added the signed types.
  if (ctx.node().opset() >= 28) return InferBinary<kInts, false>(ctx);
  return InferBinary<kUnsigned, false>(ctx);
}

Status InferIsInf(InferContext& ctx) {
  return InferPredicate<kFloats>(ctx);
}

}  // namespace

// Traits: InPlace where the kernel reads input-0 element i before writing output element i
// (kernels/reference/elementwise_loops.cc; variadic Sum/Max/Min are left out, their output must
// not overlap inputs beyond the second); Layout for the ops that run on channels-last storage
// unchanged (planner/layout.cc).
void RegisterElementwise(OpRegistry& r) {
  // Hot in light models first.
  AddRanges(r, "Add", {1, 7}, InferBinary<kNumeric, false>, reference::AddRef)
      .InPlace()
      .Layout(LayoutTrait::kBroadcastElementwise);
  AddRanges(r, "Mul", {1, 7}, InferBinary<kNumeric, false>, reference::MulRef)
      .InPlace()
      .Layout(LayoutTrait::kBroadcastElementwise);
  AddRanges(r, "Sum", {1, 8}, InferVariadic<kNumeric>, reference::SumRef)
      .Layout(LayoutTrait::kBroadcastElementwise);
  AddRanges(r, "Clip", {1, 11}, InferClip, reference::ClipRef)
      .Layout(LayoutTrait::kUnaryElementwise)
      .Activation(FindActivationRule(ActivationKind::kClip));

  // Arithmetic (opset < 7: legacy broadcast attributes).
  AddRanges(r, "Sub", {1, 7}, InferBinary<kNumeric, false>, reference::SubRef)
      .InPlace()
      .Layout(LayoutTrait::kBroadcastElementwise);
  AddRanges(r, "Div", {1, 7}, InferBinary<kNumeric, false>, reference::DivRef)
      .InPlace()
      .Layout(LayoutTrait::kBroadcastElementwise);
  AddRanges(r, "Pow", {1, 7, 12}, InferPow, reference::PowRef)
      .Layout(LayoutTrait::kBroadcastElementwise);  // 12: exponent type may differ
  AddRanges(r, "Mod", {10}, InferBinary<kNumeric, false>, reference::ModRef);
  AddRanges(r, "BitShift", {11, 28}, InferBitShift, reference::BitShiftRef);
  AddRanges(r, "BitwiseAnd", {18}, InferBinary<kInts, false>, reference::BitwiseAndRef);
  AddRanges(r, "BitwiseOr", {18}, InferBinary<kInts, false>, reference::BitwiseOrRef);
  AddRanges(r, "BitwiseXor", {18}, InferBinary<kInts, false>, reference::BitwiseXorRef);
  AddRanges(r, "And", {1, 7}, InferBinary<kBool, true>, reference::AndRef);
  AddRanges(r, "Or", {1, 7}, InferBinary<kBool, true>, reference::OrRef);
  AddRanges(r, "Xor", {1, 7}, InferBinary<kBool, true>, reference::XorRef);
  // Comparisons: bool output; Equal takes strings from opset 19.
  AddRanges(r, "Equal", {1, 7, 19}, InferBinary<kNumeric | kBool | kString, true>,
            reference::EqualRef);
  AddRanges(r, "Greater", {1, 7}, InferBinary<kNumeric | kBool, true>, reference::GreaterRef);
  AddRanges(r, "Less", {1, 7}, InferBinary<kNumeric | kBool, true>, reference::LessRef);
  AddRanges(r, "GreaterOrEqual", {12}, InferBinary<kNumeric | kBool, true>,
            reference::GreaterOrEqualRef);
  AddRanges(r, "LessOrEqual", {12}, InferBinary<kNumeric | kBool, true>, reference::LessOrEqualRef);

  // Variadic (multidirectional broadcasting from opset 8) and selection.
  AddRanges(r, "Max", {1, 8}, InferVariadic<kNumeric>, reference::MaxRef)
      .Layout(LayoutTrait::kBroadcastElementwise);
  AddRanges(r, "Min", {1, 8}, InferVariadic<kNumeric>, reference::MinRef)
      .Layout(LayoutTrait::kBroadcastElementwise);
  AddRanges(r, "Mean", {1, 8}, InferVariadic<kFloats>, reference::MeanRef);
  AddRanges(r, "Where", {9}, InferWhere, reference::WhereRef);

  // Conversion: `to` is a type-name string before opset 6; saturate from 19; round_mode from 24.
  AddRanges(r, "Cast", {1, 6, 19, 24}, InferCast, reference::CastRef);
  AddRanges(r, "CastLike", {15, 19, 24}, InferCastLike, reference::CastLikeRef);

  // Unary math.
  AddRanges(r, "Abs", {1}, InferUnary<kNumeric>, reference::AbsRef)
      .InPlace()
      .Layout(LayoutTrait::kUnaryElementwise);
  AddRanges(r, "Neg", {1}, InferUnary<kNumeric>, reference::NegRef)
      .InPlace()
      .Layout(LayoutTrait::kUnaryElementwise);
  AddRanges(r, "Sign", {9}, InferUnary<kNumeric>, reference::SignRef)
      .Layout(LayoutTrait::kUnaryElementwise);
  AddRanges(r, "Reciprocal", {1}, InferUnary<kFloats>, reference::ReciprocalRef)
      .InPlace()
      .Layout(LayoutTrait::kUnaryElementwise);
  AddRanges(r, "Floor", {1}, InferUnary<kFloats>, reference::FloorRef)
      .InPlace()
      .Layout(LayoutTrait::kUnaryElementwise);
  AddRanges(r, "Ceil", {1}, InferUnary<kFloats>, reference::CeilRef)
      .InPlace()
      .Layout(LayoutTrait::kUnaryElementwise);
  AddRanges(r, "Round", {11}, InferUnary<kFloats>, reference::RoundRef)
      .Layout(LayoutTrait::kUnaryElementwise);
  AddRanges(r, "Sqrt", {1}, InferUnary<kFloats>, reference::SqrtRef)
      .InPlace()
      .Layout(LayoutTrait::kUnaryElementwise);
  AddRanges(r, "Exp", {1}, InferUnary<kFloats>, reference::ExpRef)
      .InPlace()
      .Layout(LayoutTrait::kUnaryElementwise);
  AddRanges(r, "Log", {1}, InferUnary<kFloats>, reference::LogRef)
      .InPlace()
      .Layout(LayoutTrait::kUnaryElementwise);
  AddRanges(r, "Sin", {7}, InferUnary<kFloats>, reference::SinRef)
      .InPlace()
      .Layout(LayoutTrait::kUnaryElementwise);
  AddRanges(r, "Cos", {7}, InferUnary<kFloats>, reference::CosRef)
      .InPlace()
      .Layout(LayoutTrait::kUnaryElementwise);
  AddRanges(r, "Tan", {7}, InferUnary<kFloats>, reference::TanRef);
  AddRanges(r, "Asin", {7}, InferUnary<kFloats>, reference::AsinRef);
  AddRanges(r, "Acos", {7}, InferUnary<kFloats>, reference::AcosRef);
  AddRanges(r, "Atan", {7}, InferUnary<kFloats>, reference::AtanRef);
  AddRanges(r, "Sinh", {9}, InferUnary<kFloats>, reference::SinhRef);
  AddRanges(r, "Cosh", {9}, InferUnary<kFloats>, reference::CoshRef);
  AddRanges(r, "Asinh", {9}, InferUnary<kFloats>, reference::AsinhRef);
  AddRanges(r, "Acosh", {9}, InferUnary<kFloats>, reference::AcoshRef);
  AddRanges(r, "Atanh", {9}, InferUnary<kFloats>, reference::AtanhRef);
  AddRanges(r, "Erf", {9}, InferUnary<kNumeric>, reference::ErfRef)
      .Layout(LayoutTrait::kUnaryElementwise);
  AddRanges(r, "IsNaN", {9}, InferPredicate<kFloats>, reference::IsNaNRef)
      .Layout(LayoutTrait::kUnaryElementwise);
  AddRanges(r, "IsInf", {10}, InferIsInf, reference::IsInfRef)
      .Layout(LayoutTrait::kUnaryElementwise);
  AddRanges(r, "Not", {1}, InferUnary<kBool>, reference::NotRef)
      .Layout(LayoutTrait::kUnaryElementwise);
  AddRanges(r, "BitwiseNot", {18}, InferUnary<kInts>, reference::BitwiseNotRef);
}

}  // namespace onyx::kernels
