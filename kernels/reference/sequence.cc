// Reference kernels for the sequence and optional operators.
#include "kernels/reference/sequence.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/op_helpers.h"
#include "kernels/reference/control_flow_util.h"

namespace onyx::kernels::reference {

namespace {

// Input i as a sequence; an error naming the input otherwise.
StatusOr<const Value*> SequenceInput(KernelContext& ctx, int i, const char* name) {
  if (!ctx.has_input(i)) return ctx.node().Invalid("input ", i, " '", name, "' is missing");
  const Value& v = ctx.input_value(i);
  if (!v.is_sequence())
    return ctx.node().Fail("input ", i, " '", name, "' must be a sequence, got ",
                           v.is_tensor() ? "a tensor" : "an empty optional");
  return &v;
}

// Input i as a tensor; an error naming the input otherwise.
StatusOr<const Tensor*> TensorInput(KernelContext& ctx, int i, const char* name) {
  if (!ctx.has_input(i)) return ctx.node().Invalid("input ", i, " '", name, "' is missing");
  const Value& v = ctx.input_value(i);
  if (!v.is_tensor())
    return ctx.node().Fail("input ", i, " '", name, "' must be a tensor, got ",
                           v.is_sequence() ? "a sequence" : "an empty optional");
  return &v.tensor();
}

// A position input (int32 or int64, one element) normalised against a sequence of length n and
// checked against [-n, n + extra - 1] (extra = 1 for SequenceInsert, which may append).
StatusOr<int64_t> ReadPosition(KernelContext& ctx, int i, int64_t n, int64_t extra) {
  ONYX_ASSIGN_OR_RETURN(const Tensor* t, TensorInput(ctx, i, "position"));
  if ((t->dtype() != DType::kInt64 && t->dtype() != DType::kInt32) || t->numel() != 1)
    return ctx.node().Fail("input ", i, " 'position' must be one int32/int64 element, got ",
                           DTypeName(t->dtype()), ShapeToString(t->shape()));
  const int64_t pos = TensorToInts(*t)[0];
  if (pos < -n || pos > n + extra - 1)
    return ctx.node().Fail("input ", i, " 'position' = ", pos, " is out of range [", -n, ", ",
                           n + extra - 1, "] for a sequence of length ", n);
  return pos < 0 ? pos + n : pos;
}

// Copies the elements [start, start + len) of `src` along `axis` into a new owned tensor.
Tensor SliceAxis(const Tensor& src, int64_t axis, int64_t start, int64_t len) {
  Shape shape = src.shape();
  const int64_t dim = shape[axis];
  shape[axis] = len;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < src.rank(); ++d) {
    if (d < axis) outer *= shape[d];
    if (d > axis) inner *= shape[d];
  }
  Tensor dst = Tensor::Allocate(src.dtype(), shape);
  for (int64_t o = 0; o < outer; ++o)
    CopyElements(src.dtype(), src.raw_data(), (o * dim + start) * inner, dst.raw_data(),
                 o * len * inner, len * inner);
  return dst;
}

}  // namespace

Status SequenceEmptyRef(KernelContext& ctx) {
  const int64_t dtype = ctx.node().attr_int("dtype", static_cast<int64_t>(DType::kFloat));
  if (!IsKnownDType(static_cast<int32_t>(dtype)) || dtype == 0)
    return ctx.node().Invalid("attribute 'dtype' = ", dtype, " is not a tensor element type");
  ctx.SetOutput(0, Value::Sequence({}, static_cast<DType>(dtype)));
  return Status::Ok();
}

Status SequenceConstructRef(KernelContext& ctx) {
  std::vector<Tensor> items;
  DType elem = DType::kUndefined;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    ONYX_ASSIGN_OR_RETURN(const Tensor* t, TensorInput(ctx, i, "inputs"));
    if (i > 0 && t->dtype() != elem)
      return ctx.node().Fail("input ", i, " has type ", DTypeName(t->dtype()), " but input 0 has ",
                             DTypeName(elem), "; sequence elements share one type");
    elem = t->dtype();
    items.push_back(t->Clone());
  }
  if (items.empty()) return ctx.node().Invalid("needs at least one input");
  ctx.SetOutput(0, Value::Sequence(std::move(items), elem));
  return Status::Ok();
}

Status SequenceInsertRef(KernelContext& ctx) {
  ONYX_ASSIGN_OR_RETURN(const Value* seq, SequenceInput(ctx, 0, "input_sequence"));
  ONYX_ASSIGN_OR_RETURN(const Tensor* t, TensorInput(ctx, 1, "tensor"));
  // An empty sequence fed from a file may not know its element type (SequenceProto stores none).
  const DType elem = seq->sequence().empty() && seq->sequence_elem_type() == DType::kUndefined
                         ? t->dtype()
                         : seq->sequence_elem_type();
  if (t->dtype() != elem)
    return ctx.node().Fail("input 1 'tensor' has type ", DTypeName(t->dtype()),
                           " but the sequence holds ", DTypeName(elem));
  std::vector<Tensor> items = seq->sequence();
  const int64_t n = static_cast<int64_t>(items.size());
  int64_t pos = n;
  if (ctx.has_input(2)) {
    ONYX_ASSIGN_OR_RETURN(pos, ReadPosition(ctx, 2, n, 1));
  }
  items.insert(items.begin() + pos, t->Clone());
  ctx.SetOutput(0, Value::Sequence(std::move(items), elem));
  return Status::Ok();
}

Status SequenceAtRef(KernelContext& ctx) {
  ONYX_ASSIGN_OR_RETURN(const Value* seq, SequenceInput(ctx, 0, "input_sequence"));
  const int64_t n = static_cast<int64_t>(seq->sequence().size());
  ONYX_ASSIGN_OR_RETURN(int64_t pos, ReadPosition(ctx, 1, n, 0));
  const Tensor& item = seq->sequence()[pos];
  Tensor dst = ctx.Output(0, item.dtype(), item.shape());
  CopyElements(item.dtype(), item.raw_data(), 0, dst.raw_data(), 0, item.numel());
  return Status::Ok();
}

Status SequenceEraseRef(KernelContext& ctx) {
  ONYX_ASSIGN_OR_RETURN(const Value* seq, SequenceInput(ctx, 0, "input_sequence"));
  std::vector<Tensor> items = seq->sequence();
  const int64_t n = static_cast<int64_t>(items.size());
  int64_t pos = n - 1;
  if (ctx.has_input(1)) {
    ONYX_ASSIGN_OR_RETURN(pos, ReadPosition(ctx, 1, n, 0));
  } else if (n == 0) {
    return ctx.node().Fail("cannot erase from an empty sequence");
  }
  items.erase(items.begin() + pos);
  ctx.SetOutput(0, Value::Sequence(std::move(items), seq->sequence_elem_type()));
  return Status::Ok();
}

Status SequenceLengthRef(KernelContext& ctx) {
  ONYX_ASSIGN_OR_RETURN(const Value* seq, SequenceInput(ctx, 0, "input_sequence"));
  Tensor dst = ctx.Output(0, DType::kInt64, {});
  *dst.data<int64_t>() = static_cast<int64_t>(seq->sequence().size());
  return Status::Ok();
}

Status SplitToSequenceRef(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(const Tensor* x, TensorInput(ctx, 0, "input"));
  if (x->rank() == 0) return node.Fail("input 0 'input' must have rank >= 1, got a scalar");
  ONYX_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, node.attr_int("axis", 0), x->rank()));
  const int64_t dim = x->dim(axis);
  std::vector<Tensor> items;
  if (ctx.has_input(1)) {
    ONYX_ASSIGN_OR_RETURN(const Tensor* split, TensorInput(ctx, 1, "split"));
    if (split->dtype() != DType::kInt64 && split->dtype() != DType::kInt32)
      return node.Fail("input 1 'split' must be int32 or int64, got ", DTypeName(split->dtype()));
    const std::vector<int64_t> sizes = TensorToInts(*split);
    if (split->rank() == 0) {
      // A scalar: pieces of that size, the last one shorter when it does not divide.
      const int64_t size = sizes[0];
      if (size <= 0) return node.Fail("input 1 'split' = ", size, " must be positive");
      for (int64_t start = 0; start < dim; start += size)
        items.push_back(SliceAxis(*x, axis, start, std::min(size, dim - start)));
    } else if (split->rank() == 1) {
      int64_t sum = 0;
      for (int64_t s : sizes) {
        if (s < 0) return node.Fail("input 1 'split' has a negative size ", s);
        sum += s;
      }
      if (sum != dim)
        return node.Fail("input 1 'split' sizes sum to ", sum, " but axis ", axis, " of input 0 ",
                         ShapeToString(x->shape()), " has ", dim, " elements");
      int64_t start = 0;
      for (int64_t s : sizes) {
        items.push_back(SliceAxis(*x, axis, start, s));
        start += s;
      }
    } else {
      return node.Fail("input 1 'split' must be a scalar or 1-D, got shape ",
                       ShapeToString(split->shape()));
    }
  } else {
    // No split: pieces of size 1; keepdims=0 drops the split axis (only in this case).
    const bool keepdims = node.attr_int("keepdims", 1) != 0;
    for (int64_t i = 0; i < dim; ++i) {
      Tensor piece = SliceAxis(*x, axis, i, 1);
      if (!keepdims) {
        Shape s = piece.shape();
        s.erase(s.begin() + axis);
        piece = piece.Reshaped(s);
      }
      items.push_back(std::move(piece));
    }
  }
  ctx.SetOutput(0, Value::Sequence(std::move(items), x->dtype()));
  return Status::Ok();
}

Status ConcatFromSequenceRef(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(const Value* seq, SequenceInput(ctx, 0, "input_sequence"));
  ONYX_ASSIGN_OR_RETURN(int64_t axis_attr, node.RequiredInt("axis"));
  const bool new_axis = node.attr_int("new_axis", 0) != 0;
  const std::vector<Tensor>& items = seq->sequence();
  if (items.empty()) return node.Fail("input 0 'input_sequence' is empty; nothing to concatenate");
  const Tensor& first = items[0];
  const int64_t rank = first.rank();
  // With new_axis the items are stacked: axis may also be `rank` (after the last dim).
  ONYX_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, axis_attr, new_axis ? rank + 1 : rank));
  int64_t total = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const Tensor& t = items[i];
    bool ok = t.dtype() == first.dtype() && t.rank() == rank;
    for (int64_t d = 0; ok && d < rank; ++d)
      ok = t.dim(d) == first.dim(d) || (!new_axis && d == axis);
    if (!ok)
      return node.Fail("sequence element ", i, " is ", DTypeName(t.dtype()),
                       ShapeToString(t.shape()), " but element 0 is ", DTypeName(first.dtype()),
                       ShapeToString(first.shape()), "; they must match except along axis ", axis);
    total += new_axis ? 1 : t.dim(axis);
  }
  Shape out_shape = first.shape();
  if (new_axis)
    out_shape.insert(out_shape.begin() + axis, total);
  else
    out_shape[axis] = total;
  // Every item viewed with the concatenation axis explicit: outer x len_i x inner.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(out_shape.size()); ++d) {
    if (d < axis) outer *= out_shape[d];
    if (d > axis) inner *= out_shape[d];
  }
  Tensor dst = ctx.Output(0, first.dtype(), out_shape);
  int64_t offset = 0;  // along the axis
  for (const Tensor& t : items) {
    const int64_t len = new_axis ? 1 : t.dim(axis);
    for (int64_t o = 0; o < outer; ++o)
      CopyElements(t.dtype(), t.raw_data(), o * len * inner, dst.raw_data(),
                   (o * total + offset) * inner, len * inner);
    offset += len;
  }
  return Status::Ok();
}

Status SequenceMapRef(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const ir::Graph* body = node.attr_graph("body");
  if (!body) return node.Invalid("graph attribute 'body' is missing");
  ONYX_ASSIGN_OR_RETURN(const Value* seq, SequenceInput(ctx, 0, "input_sequence"));
  const size_t n = seq->sequence().size();
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return node.Invalid("input ", i, " 'additional_inputs' is missing");
    const Value& v = ctx.input_value(i);
    if (v.is_sequence() && v.sequence().size() != n)
      return node.Fail("input ", i, " is a sequence of length ", v.sequence().size(),
                       " but input 0 has length ", n);
    if (!v.is_sequence() && !v.is_tensor())
      return node.Fail("input ", i, " must be a tensor or a sequence");
  }
  const size_t num_out = body->outputs.size();
  std::vector<std::vector<Tensor>> results(num_out);
  for (size_t pos = 0; pos < n; ++pos) {
    ONYX_RETURN_IF_ERROR(ctx.CheckCancelled());  // a body without nodes runs no executor step
    std::vector<Value> in;
    in.emplace_back(seq->sequence()[pos]);
    for (int i = 1; i < ctx.num_inputs(); ++i) {
      const Value& v = ctx.input_value(i);
      in.push_back(v.is_sequence() ? Value(v.sequence()[pos]) : v);
    }
    ONYX_ASSIGN_OR_RETURN(std::vector<Value> out, ctx.RunSubgraph("body", in));
    if (out.size() != num_out)
      return node.Fail("body returned ", out.size(), " values; expected ", num_out);
    for (size_t k = 0; k < num_out; ++k) {
      if (!out[k].is_tensor())
        return node.Fail("body output ", k, " must be a tensor to become a sequence element");
      results[k].push_back(std::move(out[k].tensor()));
    }
  }
  for (size_t k = 0; k < num_out && static_cast<int>(k) < ctx.num_outputs(); ++k) {
    if (!ctx.has_output(static_cast<int>(k))) continue;
    DType elem = results[k].empty() ? body->outputs[k].type.elem : results[k][0].dtype();
    if (elem == DType::kUndefined) elem = DType::kFloat;
    ctx.SetOutput(static_cast<int>(k), Value::Sequence(std::move(results[k]), elem));
  }
  return Status::Ok();
}

Status OptionalRef(KernelContext& ctx) {
  if (ctx.has_input(0)) {
    ctx.SetOutput(0, OwnedCopy(ctx.input_value(0)));
    return Status::Ok();
  }
  const ir::Attribute* type = ctx.node().node().attr("type");
  if (!type || type->type != ir::AttrType::kTypeProto)
    return ctx.node().Invalid("without an input, the 'type' attribute must give the element type");
  ctx.SetOutput(0, Value::OptionalNone(type->type_proto));
  return Status::Ok();
}

Status OptionalHasElementRef(KernelContext& ctx) {
  const bool has =
      ctx.has_input(0) && ctx.input_value(0).defined() && !ctx.input_value(0).is_optional_none();
  Tensor dst = ctx.Output(0, DType::kBool, {});
  *dst.data<bool>() = has;
  return Status::Ok();
}

Status OptionalGetElementRef(KernelContext& ctx) {
  if (!ctx.has_input(0)) return ctx.node().Invalid("input 0 'input' is missing");
  const Value& v = ctx.input_value(0);
  if (v.is_optional_none() || !v.defined())
    return ctx.node().Fail("input 0 '", ctx.node().node().inputs[0],
                           "' is an empty optional; it has no element to get");
  ctx.SetOutput(0, OwnedCopy(v));
  return Status::Ok();
}

}  // namespace onyx::kernels::reference
