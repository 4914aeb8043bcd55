// Input checks shared by the attention-era operator definitions (attention.cc,
// rotary_embedding.cc, tensor_scatter.cc, bit_cast.cc, causal_conv_with_state.cc,
// linear_attention.cc): dtype sets, type checks naming the input, static and run-time shapes.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/op_helpers.h"
#include "kernels/reference/attention.h"

namespace onyx::kernels::attention_ops {

inline const std::vector<DType> kFloatTypes = {DType::kFloat, DType::kFloat16, DType::kBFloat16,
                                               DType::kDouble};
inline const std::vector<DType> kHalfOrFloat = {DType::kFloat, DType::kFloat16, DType::kBFloat16};

inline bool Contains(const std::vector<DType>& set, DType t) {
  return std::find(set.begin(), set.end(), t) != set.end();
}

inline std::string Describe(const NodeView& node, int i) {
  return StrCat("input ", i, " '", InputName(node, i), "'");
}

inline Status CheckDType(const NodeView& node, int i, DType t, const std::vector<DType>& allowed) {
  if (Contains(allowed, t)) return Status::Ok();
  return node.NotSupported(Describe(node, i), " has type ", DTypeName(t),
                           ", which this operator does not support");
}

// Plan-time type check of input i when its type is known.
inline Status CheckInputType(InferContext& ctx, int i, const std::vector<DType>& allowed) {
  if (!ctx.has_input(i) || !ctx.input_type(i).is_tensor()) return Status::Ok();
  return CheckDType(ctx.node(), i, ctx.input_type(i).elem, allowed);
}

// Fails unless inputs i and j (when both known) have the same element type.
inline Status CheckSameType(InferContext& ctx, int i, int j) {
  if (!ctx.has_input(i) || !ctx.has_input(j)) return Status::Ok();
  const TypeInfo& a = ctx.input_type(i);
  const TypeInfo& b = ctx.input_type(j);
  if (!a.is_tensor() || !b.is_tensor() || a.elem == b.elem) return Status::Ok();
  return ctx.node().Invalid(Describe(ctx.node(), j), " has type ", DTypeName(b.elem),
                            "; expected the type of ", Describe(ctx.node(), i), " (",
                            DTypeName(a.elem), ")");
}

// The concrete shapes of the present inputs when all are static at plan time (null when absent).
inline bool StaticShapes(InferContext& ctx, std::vector<Shape>* shapes,
                         std::vector<const Shape*>* ptrs) {
  shapes->assign(ctx.num_inputs(), Shape());
  ptrs->assign(ctx.num_inputs(), nullptr);
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    if (!ctx.input_type(i).shape_is_static()) return false;
    (*shapes)[i] = ctx.input_type(i).static_shape();
    (*ptrs)[i] = &(*shapes)[i];
  }
  return true;
}

inline std::vector<const Shape*> RuntimeShapes(KernelContext& ctx) {
  std::vector<const Shape*> ptrs(ctx.num_inputs(), nullptr);
  for (int i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) ptrs[i] = &ctx.input(i).shape();
  return ptrs;
}

inline const Tensor* OptionalInput(KernelContext& ctx, int i) {
  return i < ctx.num_inputs() && ctx.has_input(i) ? &ctx.input(i) : nullptr;
}

inline TypeInfo TensorType(DType t, const Shape& s) {
  return TypeInfo::TensorWithShape(t, s);
}

inline DType InputElem(InferContext& ctx, int i) {
  return ctx.has_input(i) && ctx.input_type(i).is_tensor() ? ctx.input_type(i).elem
                                                           : DType::kUndefined;
}

}  // namespace onyx::kernels::attention_ops
