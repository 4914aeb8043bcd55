// Indexing family: Gather, GatherElements, GatherND, Scatter, ScatterElements, ScatterND, Compress,
// NonZero, Unique, OneHot.
// The kernels read and validate every index before the reference loops run (negative indices count
// from the back; out-of-range ones are errors naming the node, the input and the offending value),
// so the loops in kernels/reference/indexing.cc never read or write out of bounds.
#include "kernels/reference/indexing.h"

#include <algorithm>
#include <cmath>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"
#include "kernels/reference/tensor_shape.h"

namespace onyx::kernels {
namespace {

// ---- shared helpers ----

Status ExpectIndexInput(InferContext& ctx, int i) {
  return ExpectInputType(ctx, i, {DType::kInt32, DType::kInt64});
}

// Input i's element type must equal input 0's (updates of a scatter).
Status ExpectSameType(InferContext& ctx, int i) {
  const TypeInfo& a = ctx.input_type(0);
  const TypeInfo& b = ctx.input_type(i);
  if (a.is_tensor() && b.is_tensor() && a.elem != b.elem)
    return ctx.node().Invalid(DescribeInput(ctx.node(), i), " has type ", DTypeName(b.elem),
                              ", expected ", DTypeName(a.elem), " like input 0");
  return Status::Ok();
}

// Reads an index tensor (int32 or int64) as int64.
StatusOr<std::vector<int64_t>> ReadIndices(KernelContext& ctx, int i) {
  const Tensor& t = ctx.input(i);
  if (t.dtype() != DType::kInt64 && t.dtype() != DType::kInt32)
    return ctx.node().NotSupported(DescribeInput(ctx.node(), i), " has type ", DTypeName(t.dtype()),
                                   "; expected int32 or int64");
  return TensorToInts(t);
}

// Index v at flat position pos must lie in [-dim, dim); negative values count from the back.
Status NormalizeIndex(const NodeView& node, int input, int64_t pos, int64_t dim, int64_t* v) {
  if (*v < -dim || *v >= dim)
    return node.Fail(DescribeInput(node, input), " has value ", *v, " at position ", pos,
                     ", out of range [", -dim, ", ", dim - 1, "] for a dim of size ", dim);
  if (*v < 0) *v += dim;
  return Status::Ok();
}

StatusOr<reference::ScatterReduction> Reduction(const NodeView& node) {
  // Opset 16 added add/mul, opset 18 max/min.
  const std::string r = node.attr_string("reduction", "none");
  if (r == "none") return reference::ScatterReduction::kNone;
  if (r == "add") return reference::ScatterReduction::kAdd;
  if (r == "mul") return reference::ScatterReduction::kMul;
  if (r == "max") return reference::ScatterReduction::kMax;
  if (r == "min") return reference::ScatterReduction::kMin;
  return node.Invalid("attribute 'reduction' is '", r, "'; expected none, add, mul, max or min");
}

Status CheckReductionType(const NodeView& node, DType t, reference::ScatterReduction r) {
  if (r != reference::ScatterReduction::kNone &&
      (t == DType::kString || t == DType::kComplex64 || t == DType::kComplex128))
    return node.NotSupported("reduction '", node.attr_string("reduction", "none"),
                             "' on input 0 of type ", DTypeName(t));
  return Status::Ok();
}

// ---- Gather ----

Status InferGather(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(ExpectIndexInput(ctx, 1));
  const TypeInfo& data = ctx.input_type(0);
  const TypeInfo& idx = ctx.input_type(1);
  if (!data.has_shape || !idx.has_shape) {
    const bool rank_known = data.has_shape && idx.has_shape;
    ctx.SetOutputType(0, rank_known ? UnknownDimsType(data.elem, data.rank() + idx.rank() - 1)
                                    : TypeInfo::Tensor(data.elem));
    return Status::Ok();
  }
  if (data.rank() == 0) return node.Invalid("input 0 must have rank >= 1");
  ONYX_ASSIGN_OR_RETURN(
      int64_t axis, NormalizeAxis(node, node.attr_int("axis", 0), data.rank(), "attribute 'axis'"));
  std::vector<Dim> dims(data.dims.begin(), data.dims.begin() + axis);
  dims.insert(dims.end(), idx.dims.begin(), idx.dims.end());
  dims.insert(dims.end(), data.dims.begin() + axis + 1, data.dims.end());
  ctx.SetOutputType(0, RankedType(data.elem, std::move(dims)));
  return Status::Ok();
}

Status GatherKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const NodeView& node = ctx.node();
  const Tensor& data = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  if (data.rank() == 0) return node.Fail("input 0 must have rank >= 1");
  ONYX_ASSIGN_OR_RETURN(
      int64_t axis, NormalizeAxis(node, node.attr_int("axis", 0), data.rank(), "attribute 'axis'"));
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> indices, ReadIndices(ctx, 1));
  for (size_t p = 0; p < indices.size(); ++p)
    ONYX_RETURN_IF_ERROR(NormalizeIndex(node, 1, p, data.dim(axis), &indices[p]));
  Shape shape(data.shape().begin(), data.shape().begin() + axis);
  shape.insert(shape.end(), idx.shape().begin(), idx.shape().end());
  shape.insert(shape.end(), data.shape().begin() + axis + 1, data.shape().end());
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, data.dtype(), shape));
  reference::Gather(data, axis, indices, y);
  return Status::Ok();
}

// ---- GatherElements ----

Status InferGatherElements(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(ExpectIndexInput(ctx, 1));
  const TypeInfo& data = ctx.input_type(0);
  const TypeInfo& idx = ctx.input_type(1);
  if (data.has_shape && idx.has_shape && data.rank() != idx.rank())
    return node.Invalid("input 1 'indices' has rank ", idx.rank(), ", expected ", data.rank(),
                        " like input 0");
  TypeInfo out = idx.has_shape ? RankedType(data.elem, idx.dims) : TypeInfo::Tensor(data.elem);
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

Status GatherElementsKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const NodeView& node = ctx.node();
  const Tensor& data = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  if (data.rank() == 0 || idx.rank() != data.rank())
    return node.Fail("input 1 'indices' has shape ", ShapeToString(idx.shape()),
                     "; expected the rank (>= 1) of input 0 ", ShapeToString(data.shape()));
  ONYX_ASSIGN_OR_RETURN(
      int64_t axis, NormalizeAxis(node, node.attr_int("axis", 0), data.rank(), "attribute 'axis'"));
  for (int64_t d = 0; d < data.rank(); ++d)
    if (d != axis && idx.dim(d) > data.dim(d))
      return node.Fail("input 1 'indices' dim ", d, " (", idx.dim(d), ") exceeds input 0's dim (",
                       data.dim(d), ")");
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> indices, ReadIndices(ctx, 1));
  for (size_t p = 0; p < indices.size(); ++p)
    ONYX_RETURN_IF_ERROR(NormalizeIndex(node, 1, p, data.dim(axis), &indices[p]));
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, data.dtype(), idx.shape()));
  reference::GatherElements(data, axis, indices, idx.shape(), y);
  return Status::Ok();
}

// ---- GatherND ----

Status InferGatherND(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, {DType::kInt64}));
  const TypeInfo& data = ctx.input_type(0);
  const TypeInfo& idx = ctx.input_type(1);
  const int64_t b = node.attr_int("batch_dims", 0);
  if (!data.has_shape || !idx.has_shape || idx.rank() == 0 || !idx.dims.back().known()) {
    ctx.SetOutputType(0, TypeInfo::Tensor(data.elem));
    return Status::Ok();
  }
  const int64_t k = idx.dims.back().value;
  if (b < 0 || b >= std::min(data.rank(), idx.rank()) ||
      k > data.rank() - b)  // not b + k: a declared depth near INT64_MAX overflows
    return node.Invalid("batch_dims ", b, " and index depth ", k, " do not fit input 0 ",
                        data.ToString(), " and input 1 ", idx.ToString());
  std::vector<Dim> dims(idx.dims.begin(), idx.dims.end() - 1);
  dims.insert(dims.end(), data.dims.begin() + b + k, data.dims.end());
  ctx.SetOutputType(0, RankedType(data.elem, std::move(dims)));
  return Status::Ok();
}

Status GatherNDKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const NodeView& node = ctx.node();
  const Tensor& data = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  const int64_t b = node.attr_int("batch_dims", 0);  // opset 12
  if (idx.rank() == 0 || data.rank() == 0) return node.Fail("inputs 0 and 1 must have rank >= 1");
  const int64_t k = idx.dim(idx.rank() - 1);
  if (b < 0 || b >= std::min(data.rank(), idx.rank()) ||
      k > data.rank() - b)  // not b + k: a declared depth near INT64_MAX overflows
    return node.Fail("batch_dims ", b, " and index depth ", k, " do not fit input 0 ",
                     ShapeToString(data.shape()), " and input 1 ", ShapeToString(idx.shape()));
  for (int64_t d = 0; d < b; ++d)
    if (idx.dim(d) != data.dim(d))
      return node.Fail("batch dim ", d, " differs: input 0 ", ShapeToString(data.shape()),
                       ", input 1 ", ShapeToString(idx.shape()));
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> indices, ReadIndices(ctx, 1));
  for (size_t p = 0; p < indices.size(); ++p)
    ONYX_RETURN_IF_ERROR(NormalizeIndex(node, 1, p, data.dim(b + p % k), &indices[p]));
  Shape shape(idx.shape().begin(), idx.shape().end() - 1);
  shape.insert(shape.end(), data.shape().begin() + b + k, data.shape().end());
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, data.dtype(), shape));
  reference::GatherND(data, b, indices, idx.shape(), y);
  return Status::Ok();
}

// ---- Scatter / ScatterElements ----

Status InferScatterElements(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectIndexInput(ctx, 1));
  ONYX_RETURN_IF_ERROR(ExpectSameType(ctx, 2));
  ONYX_ASSIGN_OR_RETURN(reference::ScatterReduction r, Reduction(ctx.node()));
  ONYX_RETURN_IF_ERROR(CheckReductionType(ctx.node(), ctx.input_type(0).elem, r));
  const TypeInfo& idx = ctx.input_type(1);
  const TypeInfo& upd = ctx.input_type(2);
  if (idx.has_shape && upd.has_shape && idx.rank() != upd.rank())
    return ctx.node().Invalid("input 2 'updates' ", upd.ToString(),
                              " must have the shape of input 1 'indices' ", idx.ToString());
  return InferSameAsInput0(ctx);
}

Status ScatterElementsKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 3));
  const NodeView& node = ctx.node();
  const Tensor& data = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  ONYX_ASSIGN_OR_RETURN(reference::ScatterReduction r, Reduction(node));
  ONYX_RETURN_IF_ERROR(CheckReductionType(node, data.dtype(), r));
  if (data.rank() == 0 || idx.rank() != data.rank() || updates.shape() != idx.shape() ||
      updates.dtype() != data.dtype())
    return node.Fail("input 1 'indices' ", ShapeToString(idx.shape()), " and input 2 'updates' ",
                     DTypeName(updates.dtype()), ShapeToString(updates.shape()),
                     " must have one shape, of the rank of input 0 ", DTypeName(data.dtype()),
                     ShapeToString(data.shape()));
  ONYX_ASSIGN_OR_RETURN(
      int64_t axis, NormalizeAxis(node, node.attr_int("axis", 0), data.rank(), "attribute 'axis'"));
  for (int64_t d = 0; d < data.rank(); ++d)
    if (d != axis && idx.dim(d) > data.dim(d))
      return node.Fail("input 1 'indices' dim ", d, " (", idx.dim(d), ") exceeds input 0's dim (",
                       data.dim(d), ")");
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> indices, ReadIndices(ctx, 1));
  for (size_t p = 0; p < indices.size(); ++p)
    ONYX_RETURN_IF_ERROR(NormalizeIndex(node, 1, p, data.dim(axis), &indices[p]));
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, data.dtype(), data.shape()));
  CopyElements(data.dtype(), data.raw_data(), 0, y.raw_data(), 0, data.numel());
  reference::ScatterElements(axis, indices, idx.shape(), updates, r, y);
  return Status::Ok();
}

// ---- ScatterND ----

Status InferScatterND(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, {DType::kInt64}));
  ONYX_RETURN_IF_ERROR(ExpectSameType(ctx, 2));
  ONYX_ASSIGN_OR_RETURN(reference::ScatterReduction r, Reduction(ctx.node()));
  ONYX_RETURN_IF_ERROR(CheckReductionType(ctx.node(), ctx.input_type(0).elem, r));
  return InferSameAsInput0(ctx);
}

Status ScatterNDKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 3));
  const NodeView& node = ctx.node();
  const Tensor& data = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  ONYX_ASSIGN_OR_RETURN(reference::ScatterReduction r, Reduction(node));
  ONYX_RETURN_IF_ERROR(CheckReductionType(node, data.dtype(), r));
  if (idx.rank() == 0) return node.Fail("input 1 'indices' must have rank >= 1");
  const int64_t k = idx.dim(idx.rank() - 1);
  if (k > data.rank())
    return node.Fail("input 1 'indices' has depth ", k, " > rank of input 0 ",
                     ShapeToString(data.shape()));
  // updates = indices.shape[:-1] + data.shape[k:]
  Shape expected(idx.shape().begin(), idx.shape().end() - 1);
  expected.insert(expected.end(), data.shape().begin() + k, data.shape().end());
  if (updates.shape() != expected || updates.dtype() != data.dtype())
    return node.Fail("input 2 'updates' is ", DTypeName(updates.dtype()),
                     ShapeToString(updates.shape()), "; expected ", DTypeName(data.dtype()),
                     ShapeToString(expected));
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> indices, ReadIndices(ctx, 1));
  for (size_t p = 0; p < indices.size(); ++p)
    ONYX_RETURN_IF_ERROR(NormalizeIndex(node, 1, p, data.dim(p % k), &indices[p]));
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, data.dtype(), data.shape()));
  CopyElements(data.dtype(), data.raw_data(), 0, y.raw_data(), 0, data.numel());
  reference::ScatterND(indices, idx.shape(), updates, r, y);
  return Status::Ok();
}

// ---- Compress ----

Status InferCompress(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, {DType::kBool}));
  const TypeInfo& in = ctx.input_type(0);
  if (!node.has_attr("axis")) {
    ctx.SetOutputType(0, UnknownDimsType(in.elem, 1));
    return Status::Ok();
  }
  if (!in.has_shape) {
    ctx.SetOutputType(0, TypeInfo::Tensor(in.elem));
    return Status::Ok();
  }
  ONYX_ASSIGN_OR_RETURN(
      int64_t axis, NormalizeAxis(node, node.attr_int("axis", 0), in.rank(), "attribute 'axis'"));
  std::vector<Dim> dims = in.dims;
  dims[axis] = Dim();
  ctx.SetOutputType(0, RankedType(in.elem, std::move(dims)));
  return Status::Ok();
}

Status CompressKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& cond = ctx.input(1);
  if (cond.dtype() != DType::kBool || cond.rank() != 1)
    return node.Fail("input 1 'condition' must be 1-D bool, got ", DTypeName(cond.dtype()),
                     ShapeToString(cond.shape()));
  int64_t axis = -1;
  if (node.has_attr("axis")) {
    ONYX_ASSIGN_OR_RETURN(
        axis, NormalizeAxis(node, node.attr_int("axis", 0), x.rank(), "attribute 'axis'"));
  }
  const int64_t n = axis >= 0 ? x.dim(axis) : x.numel();
  std::vector<bool> keep(static_cast<size_t>(cond.numel()));
  int64_t count = 0;
  for (int64_t j = 0; j < cond.numel(); ++j) {
    keep[j] = cond.data<bool>()[j];
    if (!keep[j]) continue;
    if (j >= n)
      return node.Fail("input 1 'condition' selects position ", j, " beyond the ", n,
                       " slices of input 0");
    ++count;
  }
  Shape shape = {count};
  if (axis >= 0) {
    shape = x.shape();
    shape[axis] = count;
  }
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, x.dtype(), shape));
  reference::Compress(x, axis, keep, y);
  return Status::Ok();
}

// ---- NonZero ----

Status InferNonZero(InferContext& ctx) {
  const TypeInfo& in = ctx.input_type(0);
  std::vector<Dim> dims(2);
  if (in.has_shape) dims[0] = Dim::Known(std::max<int64_t>(in.rank(), 1));
  ctx.SetOutputType(0, RankedType(DType::kInt64, std::move(dims)));
  return Status::Ok();
}

Status NonZeroKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> pos = reference::NonZeroPositions(x);
  const int64_t n = static_cast<int64_t>(pos.size());
  // A scalar counts as a 1-element vector (numpy's atleast_1d).
  const Shape shape = x.rank() == 0 ? Shape{1} : x.shape();
  const int64_t rank = static_cast<int64_t>(shape.size());
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kInt64, {rank, n}));
  int64_t* dst = y.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    int64_t r = pos[i];
    for (int64_t d = rank - 1; d >= 0; --d) {
      dst[d * n + i] = r % shape[d];
      r /= shape[d];
    }
  }
  return Status::Ok();
}

// ---- Unique ----

Status InferUnique(InferContext& ctx) {
  const NodeView& node = ctx.node();
  const TypeInfo& in = ctx.input_type(0);
  if (in.is_tensor() && !VisitAll(in.elem, [](auto) {}))
    return node.NotSupported("input 0 has type ", DTypeName(in.elem));
  if (node.has_attr("axis")) {
    if (in.has_shape) {
      ONYX_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(node, node.attr_int("axis", 0), in.rank(),
                                                        "attribute 'axis'"));
      std::vector<Dim> dims = in.dims;
      dims[axis] = Dim();
      ctx.SetOutputType(0, RankedType(in.elem, std::move(dims)));
      if (ctx.num_outputs() > 2 && ctx.has_output(2))
        ctx.SetOutputType(2, RankedType(DType::kInt64, {in.dims[axis]}));
    } else {
      ctx.SetOutputType(0, TypeInfo::Tensor(in.elem));
      if (ctx.num_outputs() > 2 && ctx.has_output(2))
        ctx.SetOutputType(2, UnknownDimsType(DType::kInt64, 1));
    }
  } else {
    ctx.SetOutputType(0, UnknownDimsType(in.elem, 1));
    if (ctx.num_outputs() > 2 && ctx.has_output(2)) {
      Dim n;
      if (in.shape_is_static()) n = Dim::Known(ShapeElementCount(in.static_shape()));
      ctx.SetOutputType(2, RankedType(DType::kInt64, {n}));
    }
  }
  for (int i : {1, 3})
    if (ctx.num_outputs() > i && ctx.has_output(i))
      ctx.SetOutputType(i, UnknownDimsType(DType::kInt64, 1));
  return Status::Ok();
}

Status UniqueKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  int64_t axis = -1;
  if (node.has_attr("axis")) {
    ONYX_ASSIGN_OR_RETURN(
        axis, NormalizeAxis(node, node.attr_int("axis", 0), x.rank(), "attribute 'axis'"));
  }
  reference::UniqueResult r;
  if (!reference::Unique(x, axis, node.attr_int("sorted", 1) != 0, &r))
    return node.NotSupported("input 0 has type ", DTypeName(x.dtype()));
  const int64_t u = static_cast<int64_t>(r.first.size());
  if (ctx.has_output(0)) {
    if (axis >= 0) {
      Shape shape = x.shape();
      shape[axis] = u;
      ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, x.dtype(), shape));
      reference::Gather(x, axis, r.first, y);
    } else {
      ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, x.dtype(), {u}));
      reference::Gather(x.Reshaped({x.numel()}), 0, r.first, y);
    }
  }
  const std::vector<int64_t>* outs[] = {nullptr, &r.first, &r.inverse, &r.counts};
  for (int i = 1; i < 4 && i < ctx.num_outputs(); ++i) {
    if (!ctx.has_output(i)) continue;
    const std::vector<int64_t>& v = *outs[i];
    ONYX_ASSIGN_OR_RETURN(Tensor t,
                          NewOutput(ctx, i, DType::kInt64, {static_cast<int64_t>(v.size())}));
    std::copy(v.begin(), v.end(), t.data<int64_t>());
  }
  return Status::Ok();
}

// ---- OneHot ----

// depth: a scalar (or 1-element tensor) of any numeric type, cast to int64.
StatusOr<int64_t> OneHotDepth(const NodeView& node, const Tensor& t) {
  if (t.numel() != 1 || t.dtype() == DType::kString)
    return node.Invalid("input 1 'depth' must hold one number, got ", DTypeName(t.dtype()),
                        ShapeToString(t.shape()));
  const double d = ElementAsDouble(t, 0);
  if (!(d >= 1) || d > 9.0e15) return node.Invalid("input 1 'depth' must be positive, got ", d);
  return static_cast<int64_t>(d);
}

Status InferOneHot(InferContext& ctx) {
  const NodeView& node = ctx.node();
  const TypeInfo& idx = ctx.input_type(0);
  const TypeInfo& values = ctx.input_type(2);
  for (int i = 0; i < 2; ++i) {
    const TypeInfo& t = ctx.input_type(i);
    if (t.is_tensor() && (t.elem == DType::kString || t.elem == DType::kBool ||
                          t.elem == DType::kComplex64 || t.elem == DType::kComplex128))
      return node.NotSupported(DescribeInput(node, i), " has type ", DTypeName(t.elem));
  }
  if (!idx.has_shape) {
    ctx.SetOutputType(0, TypeInfo::Tensor(values.elem));
    return Status::Ok();
  }
  const int64_t rank = idx.rank() + 1;
  ONYX_ASSIGN_OR_RETURN(int64_t axis,
                        NormalizeAxis(node, node.attr_int("axis", -1), rank, "attribute 'axis'"));
  Dim depth;
  if (const Tensor* d = ctx.input_constant(1)) {
    ONYX_ASSIGN_OR_RETURN(int64_t v, OneHotDepth(node, *d));
    depth = Dim::Known(v);
  }
  std::vector<Dim> dims = idx.dims;
  dims.insert(dims.begin() + axis, depth);
  ONYX_RETURN_IF_ERROR(CheckElementCount(node, dims));
  ctx.SetOutputType(0, RankedType(values.elem, std::move(dims)));
  return Status::Ok();
}

Status OneHotKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 3));
  const NodeView& node = ctx.node();
  const Tensor& idx = ctx.input(0);
  const Tensor& values = ctx.input(2);
  if (idx.dtype() == DType::kString || idx.dtype() == DType::kBool ||
      idx.dtype() == DType::kComplex64 || idx.dtype() == DType::kComplex128)
    return node.NotSupported("input 0 'indices' has type ", DTypeName(idx.dtype()));
  ONYX_ASSIGN_OR_RETURN(int64_t depth, OneHotDepth(node, ctx.input(1)));
  if (values.numel() != 2)
    return node.Fail("input 2 'values' must hold [off_value, on_value], got shape ",
                     ShapeToString(values.shape()));
  const int64_t rank = idx.rank() + 1;
  ONYX_ASSIGN_OR_RETURN(int64_t axis,
                        NormalizeAxis(node, node.attr_int("axis", -1), rank, "attribute 'axis'"));
  // Indices (any numeric type, cast to int64) in [-depth, depth) select; others give all-off.
  std::vector<int64_t> indices(static_cast<size_t>(idx.numel()));
  for (int64_t i = 0; i < idx.numel(); ++i) {
    const double v = std::trunc(ElementAsDouble(idx, i));
    int64_t k = -1;
    if (v >= static_cast<double>(-depth) && v < static_cast<double>(depth)) {
      k = static_cast<int64_t>(v);
      if (k < 0) k += depth;
    }
    indices[i] = k;
  }
  Shape shape = idx.shape();
  shape.insert(shape.begin() + axis, depth);
  // Copies of the two values as separate elements (strings too).
  Tensor off = Tensor::Allocate(values.dtype(), {});
  Tensor on = Tensor::Allocate(values.dtype(), {});
  CopyElements(values.dtype(), values.raw_data(), 0, off.raw_data(), 0, 1);
  CopyElements(values.dtype(), values.raw_data(), 1, on.raw_data(), 0, 1);
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, values.dtype(), shape));
  reference::OneHot(indices, idx.shape(), depth, axis, off.raw_data(), on.raw_data(), y);
  return Status::Ok();
}

}  // namespace

void RegisterIndexing(OpRegistry& r) {
  // Opset 11: negative indices (accepted everywhere; out of range is an error).
  r.Add("", "Gather", 1, 10, InferGather, GatherKernel);
  r.Add("", "Gather", 11, kLatestOpset, InferGather, GatherKernel);
  r.Add("", "GatherElements", 11, kLatestOpset, InferGatherElements, GatherElementsKernel);
  // Opset 12: batch_dims.
  r.Add("", "GatherND", 11, 11, InferGatherND, GatherNDKernel);
  r.Add("", "GatherND", 12, kLatestOpset, InferGatherND, GatherNDKernel);
  // Scatter was deprecated in opset 11 in favour of ScatterElements (same semantics).
  r.Add("", "Scatter", 9, 10, InferScatterElements, ScatterElementsKernel);
  r.Add("", "Scatter", 11, kLatestOpset, InferScatterElements, ScatterElementsKernel);
  // Opset 16: reduction add/mul; 18: max/min.
  r.Add("", "ScatterElements", 11, 15, InferScatterElements, ScatterElementsKernel);
  r.Add("", "ScatterElements", 16, 17, InferScatterElements, ScatterElementsKernel);
  r.Add("", "ScatterElements", 18, kLatestOpset, InferScatterElements, ScatterElementsKernel);
  r.Add("", "ScatterND", 11, 15, InferScatterND, ScatterNDKernel);
  r.Add("", "ScatterND", 16, 17, InferScatterND, ScatterNDKernel);
  r.Add("", "ScatterND", 18, kLatestOpset, InferScatterND, ScatterNDKernel);
  // Opset 11: negative axis.
  r.Add("", "Compress", 9, 10, InferCompress, CompressKernel);
  r.Add("", "Compress", 11, kLatestOpset, InferCompress, CompressKernel);
  r.Add("", "NonZero", 9, kLatestOpset, InferNonZero, NonZeroKernel);
  r.Add("", "Unique", 11, kLatestOpset, InferUnique, UniqueKernel);
  r.Add("", "OneHot", 9, 10, InferOneHot, OneHotKernel);
  r.Add("", "OneHot", 11, kLatestOpset, InferOneHot, OneHotKernel);
}

}  // namespace onyx::kernels
