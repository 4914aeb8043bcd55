// Activation family: Relu, LeakyRelu, PRelu, Elu, Selu, Celu, Gelu, Sigmoid, HardSigmoid,
// HardSwish, Softplus, Softsign, Mish, Swish, ThresholdedRelu, Shrink, Tanh.
#include "kernels/reference/activation.h"

#include <initializer_list>
#include <string>

#include "kernels/activation_rules.h"
#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"

namespace onyx::kernels {
namespace {

constexpr uint32_t Bit(DType t) {
  return uint32_t{1} << static_cast<int>(t);
}
constexpr uint32_t kFloats =
    Bit(DType::kFloat) | Bit(DType::kDouble) | Bit(DType::kFloat16) | Bit(DType::kBFloat16);
constexpr uint32_t kNumeric = kFloats | Bit(DType::kInt8) | Bit(DType::kInt16) |
                              Bit(DType::kInt32) | Bit(DType::kInt64) | Bit(DType::kUInt8) |
                              Bit(DType::kUInt16) | Bit(DType::kUInt32) | Bit(DType::kUInt64);

// kUnsupported naming the input when its (known) element type is outside `allowed`.
Status CheckType(InferContext& ctx, int i, uint32_t allowed) {
  if (!ctx.has_input(i)) return ctx.node().Invalid("input ", i, " is missing");
  const TypeInfo& t = ctx.input_type(i);
  if (!t.is_tensor() || t.elem == DType::kUndefined) return Status::Ok();  // checked at run time
  if (static_cast<int>(t.elem) <= kMaxDType && (allowed & Bit(t.elem))) return Status::Ok();
  return ctx.node().NotSupported("input ", i, " '", ctx.node().node().inputs[i], "' has type ",
                                 DTypeName(t.elem), ", which ", ctx.node().op_type(),
                                 " does not support");
}

// SwiGLU: A and B of one float type and one shape (no broadcasting); Y like A.
Status InferSwiGLU(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckType(ctx, 0, kFloats));
  ONYX_RETURN_IF_ERROR(CheckType(ctx, 1, kFloats));
  const TypeInfo& a = ctx.input_type(0);
  const TypeInfo& b = ctx.input_type(1);
  if (a.elem != DType::kUndefined && b.elem != DType::kUndefined && a.elem != b.elem)
    return ctx.node().Invalid("inputs A and B have types ", DTypeName(a.elem), " and ",
                              DTypeName(b.elem), "; SwiGLU needs one type");
  if (a.shape_is_static() && b.shape_is_static() && a.static_shape() != b.static_shape())
    return ctx.node().Invalid("inputs A ", a.ToString(), " and B ", b.ToString(),
                              " differ in shape; SwiGLU does not broadcast");
  return InferSameAsInput0(ctx);
}

// An activation of the table: its attributes checked once by ParseActivation (the reference
// kernel reads them the same way); Y has X's type and shape.
template <uint32_t kAllowed>
Status InferActivation(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckType(ctx, 0, kAllowed));
  ONYX_RETURN_IF_ERROR(ParseActivation(ctx.node()).status());
  return InferSameAsInput0(ctx);
}

// Shrink (not in the table): Y has X's type and shape.
Status InferShrink(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckType(ctx, 0, kNumeric));
  return InferSameAsInput0(ctx);
}

// PRelu: slope has X's type and broadcasts unidirectionally onto X; Y is X's type and shape.
Status InferPRelu(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckType(ctx, 0, kNumeric));
  ONYX_RETURN_IF_ERROR(CheckType(ctx, 1, kNumeric));
  const TypeInfo& x = ctx.input_type(0);
  const TypeInfo& slope = ctx.input_type(1);
  if (x.is_tensor() && slope.is_tensor() && x.elem != DType::kUndefined &&
      slope.elem != DType::kUndefined && x.elem != slope.elem)
    return ctx.node().Invalid("input 1 'slope' has type ", DTypeName(slope.elem), "; expected ",
                              DTypeName(x.elem), " to match input 0 'X'");
  return InferSameAsInput0(ctx);
}

}  // namespace

void RegisterActivation(OpRegistry& r) {
  // The table's activations (kernels/activation_rules.cc), each from the opset it appeared in with
  // a definition of its own from the opset its meaning changed (Selu's constants at 6); Relu
  // takes the integer types too (signed ones from opset 14, checked by its kernel).
  for (const ActivationRule& rule : ActivationRules()) {
    if (rule.since == 0) continue;
    std::vector<int64_t> sinces = {rule.since};
    if (rule.changed) sinces.push_back(rule.changed);
    for (size_t i = 0; i < sinces.size(); ++i) {
      const int64_t until = i + 1 < sinces.size() ? sinces[i + 1] - 1 : kLatestOpset;
      OpDef& def = r.Add(
          "", rule.op_type, sinces[i], until,
          rule.kind == ActivationKind::kRelu ? InferActivation<kNumeric> : InferActivation<kFloats>,
          reference::ActivationRef);
      // Traits from the row: every activation is elementwise, so layout-free.
      def.activation = &rule;
      def.layout = LayoutTrait::kUnaryElementwise;
      if (rule.in_place) def.inplace_input = 0;
    }
  }
  // PRelu: opset 7 switched to unidirectional numpy broadcasting of slope.
  AddRanges(r, "PRelu", {1, 7}, InferPRelu, reference::PReluRef)
      .Layout(LayoutTrait::kBroadcastElementwise);
  AddRanges(r, "SwiGLU", {28}, InferSwiGLU, reference::SwiGLURef);
  AddRanges(r, "Shrink", {9}, InferShrink, reference::ShrinkRef);
}

}  // namespace onyx::kernels
