// Sequence family: Sequence*, SplitToSequence, ConcatFromSequence, SequenceMap, Optional,
// OptionalHasElement, OptionalGetElement. Shape functions here; kernels in
// kernels/reference/sequence.cc. Sequences and optionals are pure data movement, so every
// element type is accepted.
#include "kernels/reference/sequence.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"
#include "kernels/reference/control_flow_util.h"

namespace onyx::kernels {

namespace {

using reference::MergeTypes;
using Kind = TypeInfo::Kind;

TypeInfo SequenceOf(const TypeInfo& elem) {
  TypeInfo t;
  t.kind = Kind::kSequence;
  if (elem.kind != Kind::kUnknown) t.inner = std::make_shared<TypeInfo>(elem);
  return t;
}

TypeInfo OptionalOf(const TypeInfo& elem) {
  TypeInfo t;
  t.kind = Kind::kOptional;
  if (elem.kind != Kind::kUnknown) t.inner = std::make_shared<TypeInfo>(elem);
  return t;
}

// Element type of a sequence input; kUnknown when not known.
TypeInfo ElementOf(const TypeInfo& seq) {
  if (seq.kind == Kind::kSequence && seq.inner) return *seq.inner;
  return TypeInfo();
}

Status ExpectSequence(InferContext& ctx, int i) {
  if (!ctx.has_input(i)) return ctx.node().Invalid("input ", i, " is missing");
  const TypeInfo& t = ctx.input_type(i);
  if (t.kind != Kind::kUnknown && t.kind != Kind::kSequence)
    return ctx.node().Invalid("input ", i, " '", ctx.node().node().inputs[i],
                              "' must be a sequence, got ", t.ToString());
  return Status::Ok();
}

Status ExpectTensor(InferContext& ctx, int i, const std::vector<DType>& allowed = {}) {
  if (!ctx.has_input(i)) return Status::Ok();
  const TypeInfo& t = ctx.input_type(i);
  if (t.kind == Kind::kUnknown) return Status::Ok();
  if (t.kind != Kind::kTensor)
    return ctx.node().Invalid("input ", i, " '", ctx.node().node().inputs[i],
                              "' must be a tensor, got ", t.ToString());
  if (allowed.empty() || t.elem == DType::kUndefined ||
      std::find(allowed.begin(), allowed.end(), t.elem) != allowed.end())
    return Status::Ok();
  return ctx.node().NotSupported("input ", i, " '", ctx.node().node().inputs[i], "' has type ",
                                 DTypeName(t.elem), ", which this operator does not support");
}

// False only when both element types are known and differ (undefined means not inferred).
bool SameElem(const TypeInfo& a, const TypeInfo& b) {
  return a.elem == b.elem || a.elem == DType::kUndefined || b.elem == DType::kUndefined;
}

const std::vector<DType> kIndexTypes = {DType::kInt32, DType::kInt64};

Status InferSequenceEmpty(InferContext& ctx) {
  const int64_t dtype = ctx.node().attr_int("dtype", static_cast<int64_t>(DType::kFloat));
  if (dtype == 0 || !IsKnownDType(static_cast<int32_t>(dtype)))
    return ctx.node().Invalid("attribute 'dtype' = ", dtype, " is not a tensor element type");
  ctx.SetOutputType(0, SequenceOf(TypeInfo::Tensor(static_cast<DType>(dtype))));
  return Status::Ok();
}

Status InferSequenceConstruct(InferContext& ctx) {
  if (ctx.num_inputs() == 0) return ctx.node().Invalid("needs at least one input");
  TypeInfo elem;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    ONYX_RETURN_IF_ERROR(ExpectTensor(ctx, i));
    const TypeInfo& t = ctx.input_type(i);
    if (i > 0 && t.kind == Kind::kTensor && elem.kind == Kind::kTensor && !SameElem(t, elem))
      return ctx.node().Invalid("input ", i, " has type ", t.ToString(), " but input 0 has ",
                                elem.ToString(), "; sequence elements share one type");
    elem = i == 0 ? t : MergeTypes(elem, t);
  }
  ctx.SetOutputType(0, SequenceOf(elem));
  return Status::Ok();
}

Status InferSequenceInsert(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectSequence(ctx, 0));
  ONYX_RETURN_IF_ERROR(ExpectTensor(ctx, 1));
  ONYX_RETURN_IF_ERROR(ExpectTensor(ctx, 2, kIndexTypes));
  const TypeInfo elem = ElementOf(ctx.input_type(0));
  const TypeInfo& t = ctx.input_type(1);
  if (elem.kind == Kind::kTensor && t.kind == Kind::kTensor && !SameElem(elem, t))
    return ctx.node().Invalid("input 1 'tensor' has type ", t.ToString(),
                              " but the sequence holds ", elem.ToString());
  if ((elem.kind == Kind::kUnknown || elem.elem == DType::kUndefined) && t.kind == Kind::kTensor)
    ctx.SetOutputType(0, SequenceOf(TypeInfo::Tensor(t.elem)));
  else
    ctx.SetOutputType(0, SequenceOf(MergeTypes(elem, t)));
  return Status::Ok();
}

Status InferSequenceAt(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectSequence(ctx, 0));
  ONYX_RETURN_IF_ERROR(ExpectTensor(ctx, 1, kIndexTypes));
  const TypeInfo elem = ElementOf(ctx.input_type(0));
  if (elem.kind != Kind::kUnknown) ctx.SetOutputType(0, elem);
  return Status::Ok();
}

Status InferSequenceErase(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectSequence(ctx, 0));
  ONYX_RETURN_IF_ERROR(ExpectTensor(ctx, 1, kIndexTypes));
  ctx.SetOutputType(0, ctx.input_type(0));
  return Status::Ok();
}

Status InferSequenceLength(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectSequence(ctx, 0));
  ctx.SetOutputType(0, TypeInfo::TensorWithShape(DType::kInt64, {}));
  return Status::Ok();
}

Status InferSplitToSequence(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectTensor(ctx, 0));
  ONYX_RETURN_IF_ERROR(ExpectTensor(ctx, 1, kIndexTypes));
  const TypeInfo& x = ctx.input_type(0);
  if (x.kind != Kind::kTensor) {
    ctx.SetOutputType(0, SequenceOf(TypeInfo()));
    return Status::Ok();
  }
  TypeInfo elem = TypeInfo::Tensor(x.elem);
  if (x.has_shape) {
    if (x.rank() == 0) return ctx.node().Invalid("input 0 'input' must have rank >= 1");
    ONYX_ASSIGN_OR_RETURN(int64_t axis,
                          NormalizeAxis(ctx.node(), ctx.node().attr_int("axis", 0), x.rank()));
    elem.has_shape = true;
    elem.dims = x.dims;
    if (ctx.has_input(1)) {
      elem.dims[axis] = Dim();  // piece sizes may differ
    } else if (ctx.node().attr_int("keepdims", 1) != 0) {
      elem.dims[axis] = Dim::Known(1);
    } else {
      elem.dims.erase(elem.dims.begin() + axis);
    }
  }
  ctx.SetOutputType(0, SequenceOf(elem));
  return Status::Ok();
}

Status InferConcatFromSequence(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectSequence(ctx, 0));
  ONYX_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.node().RequiredInt("axis"));
  const bool new_axis = ctx.node().attr_int("new_axis", 0) != 0;
  const TypeInfo elem = ElementOf(ctx.input_type(0));
  if (elem.kind != Kind::kTensor) return Status::Ok();
  TypeInfo out = TypeInfo::Tensor(elem.elem);
  if (elem.has_shape) {
    const int64_t rank = elem.rank();
    ONYX_ASSIGN_OR_RETURN(int64_t axis,
                          NormalizeAxis(ctx.node(), axis_attr, new_axis ? rank + 1 : rank));
    out.has_shape = true;
    out.dims = elem.dims;
    if (new_axis)
      out.dims.insert(out.dims.begin() + axis, Dim());
    else
      out.dims[axis] = Dim();
  }
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

Status InferSequenceMap(InferContext& ctx) {
  if (!ctx.node().attr_graph("body"))
    return ctx.node().Invalid("graph attribute 'body' is missing");
  ONYX_RETURN_IF_ERROR(ExpectSequence(ctx, 0));
  std::vector<TypeInfo> in = {ElementOf(ctx.input_type(0))};
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    const TypeInfo& t = ctx.input_type(i);
    in.push_back(t.kind == Kind::kSequence ? ElementOf(t) : t);
  }
  ONYX_ASSIGN_OR_RETURN(std::vector<TypeInfo> out, ctx.InferSubgraph("body", in));
  for (int k = 0; k < ctx.num_outputs() && k < static_cast<int>(out.size()); ++k)
    if (ctx.has_output(k)) ctx.SetOutputType(k, SequenceOf(out[k]));
  return Status::Ok();
}

Status InferOptional(InferContext& ctx) {
  if (ctx.has_input(0)) {
    ctx.SetOutputType(0, OptionalOf(ctx.input_type(0)));
    return Status::Ok();
  }
  const ir::Attribute* type = ctx.node().node().attr("type");
  if (!type || type->type != ir::AttrType::kTypeProto)
    return ctx.node().Invalid("without an input, the 'type' attribute must give the element type");
  ctx.SetOutputType(0, OptionalOf(type->type_proto));
  return Status::Ok();
}

// Opsets 15-17 require the input; 18 allows omitting it (the result is then false).
Status InferOptionalHasElement15(InferContext& ctx) {
  if (!ctx.has_input(0)) return ctx.node().Invalid("input 0 'input' is required before opset 18");
  ctx.SetOutputType(0, TypeInfo::TensorWithShape(DType::kBool, {}));
  return Status::Ok();
}

Status InferOptionalHasElement18(InferContext& ctx) {
  ctx.SetOutputType(0, TypeInfo::TensorWithShape(DType::kBool, {}));
  return Status::Ok();
}

Status InferOptionalGetElement(InferContext& ctx) {
  if (!ctx.has_input(0)) return ctx.node().Invalid("input 0 'input' is missing");
  const TypeInfo& t = ctx.input_type(0);
  if (t.kind == Kind::kOptional) {
    if (t.inner) ctx.SetOutputType(0, *t.inner);
  } else if (t.kind != Kind::kUnknown) {
    ctx.SetOutputType(0, t);  // opset 18: a plain tensor or sequence comes back as it is
  }
  return Status::Ok();
}

}  // namespace

void RegisterSequence(OpRegistry& r) {
  r.Add("", "SequenceEmpty", 11, kLatestOpset, InferSequenceEmpty, reference::SequenceEmptyRef);
  r.Add("", "SequenceConstruct", 11, kLatestOpset, InferSequenceConstruct,
        reference::SequenceConstructRef);
  r.Add("", "SequenceInsert", 11, kLatestOpset, InferSequenceInsert, reference::SequenceInsertRef);
  r.Add("", "SequenceAt", 11, kLatestOpset, InferSequenceAt, reference::SequenceAtRef);
  r.Add("", "SequenceErase", 11, kLatestOpset, InferSequenceErase, reference::SequenceEraseRef);
  r.Add("", "SequenceLength", 11, kLatestOpset, InferSequenceLength, reference::SequenceLengthRef);
  // Opset 24 only widens the element types (float8, int4, ...); the kernel copies any type.
  r.Add("", "SplitToSequence", 11, kLatestOpset, InferSplitToSequence,
        reference::SplitToSequenceRef);
  r.Add("", "ConcatFromSequence", 11, kLatestOpset, InferConcatFromSequence,
        reference::ConcatFromSequenceRef);
  r.Add("", "SequenceMap", 17, kLatestOpset, InferSequenceMap, reference::SequenceMapRef);
  r.Add("", "Optional", 15, kLatestOpset, InferOptional, reference::OptionalRef);
  r.Add("", "OptionalHasElement", 15, 17, InferOptionalHasElement15,
        reference::OptionalHasElementRef);
  r.Add("", "OptionalHasElement", 18, kLatestOpset, InferOptionalHasElement18,
        reference::OptionalHasElementRef);
  // Opset 18 also accepts plain tensors and sequences; the same kernel returns them unchanged.
  r.Add("", "OptionalGetElement", 15, kLatestOpset, InferOptionalGetElement,
        reference::OptionalGetElementRef);
}

}  // namespace onyx::kernels
