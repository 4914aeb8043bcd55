// TensorShape family: Reshape, Flatten, Squeeze/Unsqueeze, Transpose, Concat, Split, Slice, Pad,
// Tile, Expand, Shape, Size, Identity, Constant, ConstantOfShape, Range, EyeLike, Trilu,
// DepthToSpace/SpaceToDepth, CenterCropPad, Col2Im.
// Each op: an infer function (types and shapes; shape-carrying inputs are read from constants so
// the planner can place outputs in the arena) and a kernel that validates the run-time values and
// calls the reference loops in kernels/reference/tensor_shape.cc. Data movement copies elements by
// storage size, so every dtype (strings, float8, int4 ...) works.
#include "kernels/reference/tensor_shape.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"

namespace onyx::kernels {
namespace {

// ---- shared helpers ----

// Reads an int32/int64 input (a shape, axes, pads ...) at run time.
StatusOr<std::vector<int64_t>> IntsInput(KernelContext& ctx, int i) {
  const Tensor& t = ctx.input(i);
  if (t.dtype() != DType::kInt64 && t.dtype() != DType::kInt32)
    return ctx.node().Fail(DescribeInput(ctx.node(), i), " must be int64, got ",
                           DTypeName(t.dtype()));
  if (t.rank() > 1)
    return ctx.node().Fail(DescribeInput(ctx.node(), i), " must be 1-D, got shape ",
                           ShapeToString(t.shape()));
  return TensorToInts(t);
}

// Infer-time check of an int32/int64 input.
Status ExpectIntInput(InferContext& ctx, int i) {
  return ExpectInputType(ctx, i, {DType::kInt32, DType::kInt64});
}

std::vector<Dim> KnownDims(const std::vector<int64_t>& v) {
  std::vector<Dim> d;
  for (int64_t x : v) d.push_back(x >= 0 ? Dim::Known(x) : Dim());
  return d;
}

// Longest static shape input whose length becomes an output rank; beyond it the rank is left
// unknown, so that a declared [2^40] shape input does not build a type with 2^40 dims.
constexpr int64_t kMaxStaticRank = 1024;

// The number of entries of a 1-D input whose shape is static, else -1 (for ranks of outputs whose
// shape input is not constant).
int64_t StaticLength(InferContext& ctx, int i) {
  if (!ctx.has_input(i)) return -1;
  const TypeInfo& t = ctx.input_type(i);
  if (t.rank() == 1 && t.dims[0].known() && t.dims[0].value <= kMaxStaticRank)
    return t.dims[0].value;
  if (t.rank() == 0) return 1;
  return -1;
}

// Product of dims [begin, end): known when all are known; a single non-1 symbolic dim passes.
// A product beyond int64 is left unknown (the run-time kernel then reports it).
Dim DimProduct(const std::vector<Dim>& dims, size_t begin, size_t end) {
  int64_t known = 1;
  bool overflow = false;
  const Dim* symbolic = nullptr;
  int unknown = 0;
  for (size_t i = begin; i < end; ++i) {
    if (dims[i].known()) {
      if (dims[i].value == 0) return Dim::Known(0);
      overflow = overflow || !CheckedMul(known, dims[i].value, &known);
    } else {
      ++unknown;
      symbolic = &dims[i];
    }
  }
  if (overflow) return Dim();
  if (unknown == 0) return Dim::Known(known);
  if (unknown == 1 && known == 1) return *symbolic;
  return Dim();
}

// Normalised, duplicate-free axes (in the given order).
StatusOr<std::vector<int64_t>> NormalizeAxes(const NodeView& node, const std::vector<int64_t>& axes,
                                             int64_t rank, const char* what) {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    ONYX_ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(node, a, rank, what));
    if (std::find(out.begin(), out.end(), n) != out.end())
      return node.Invalid(what, " contains axis ", a, " more than once");
    out.push_back(n);
  }
  return out;
}

// Output tensor filled with a copy of x's elements (Reshape, Flatten, Squeeze, Unsqueeze,
// Identity). When the planner gave the output x's own buffer (they run in place, see
// register_all.cc), there is nothing to copy.
Status CopyToOutput(KernelContext& ctx, const Tensor& x, const Shape& shape) {
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, x.dtype(), shape));
  if (y.raw_data() == x.raw_data() && x.dtype() != DType::kString) return Status::Ok();
  CopyElements(x.dtype(), x.raw_data(), 0, y.raw_data(), 0, x.numel());
  return Status::Ok();
}

// ---- Reshape ----

// Output dims of Reshape for the requested `shape` (ONNX: 0 copies the input dim unless allowzero,
// one -1 is inferred). Works on symbolic input dims: matching symbols cancel out.
StatusOr<std::vector<Dim>> ReshapeDims(const NodeView& node, const TypeInfo& in,
                                       const std::vector<int64_t>& shape, bool allowzero) {
  std::vector<Dim> out(shape.size());
  int infer_at = -1;
  bool has_zero = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t v = shape[i];
    if (v == -1) {
      if (infer_at >= 0)
        return node.Invalid(DescribeInput(node, 1), " ", ShapeToString(shape),
                            " contains -1 more than once");
      infer_at = static_cast<int>(i);
      continue;
    }
    if (v < -1) return node.Invalid(DescribeInput(node, 1), " has invalid dim ", v, " at ", i);
    if (v == 0) has_zero = true;
    if (v == 0 && !allowzero) {
      if (!in.has_shape) {
        out[i] = Dim();
      } else if (static_cast<int64_t>(i) >= in.rank()) {
        return node.Invalid(DescribeInput(node, 1), " has 0 at position ", i,
                            " (copy the input dim) but the input has rank ", in.rank());
      } else {
        out[i] = in.dims[i];
      }
      continue;
    }
    out[i] = Dim::Known(v);
  }
  if (allowzero && has_zero && infer_at >= 0)
    return node.Invalid(DescribeInput(node, 1), " has both 0 and -1 while allowzero=1");
  if (!in.has_shape) {
    return out;
  }
  // Cancel input dims against the output dims (other than -1): known values divide out, equal
  // symbols pair off.
  // Products are checked: dims [2^62, 4] must not wrap around to a small element count.
  int64_t in_known = 1, out_known = 1;
  for (const Dim& d : in.dims)
    if (d.known() && d.value == 0) in_known = 0;
  for (size_t i = 0; i < out.size(); ++i)
    if (static_cast<int>(i) != infer_at && out[i].known() && out[i].value == 0) out_known = 0;
  std::vector<const Dim*> in_symbols;
  bool in_opaque = false;
  for (const Dim& d : in.dims) {
    if (d.known()) {
      if (in_known != 0 && !CheckedMul(in_known, d.value, &in_known))
        return node.Error(ErrorCode::kLimit, "input 0 of shape ", in.ToString(),
                          " has more elements than 64 bits can count");
    } else if (!d.symbol.empty()) {
      in_symbols.push_back(&d);
    } else {
      in_opaque = true;
    }
  }
  bool out_opaque = false;
  for (size_t i = 0; i < out.size(); ++i) {
    if (static_cast<int>(i) == infer_at) continue;
    const Dim& d = out[i];
    if (d.known()) {
      if (out_known != 0 && !CheckedMul(out_known, d.value, &out_known))
        return node.Error(ErrorCode::kLimit, DescribeInput(node, 1), " ", ShapeToString(shape),
                          " has more elements than 64 bits can count");
      continue;
    }
    auto it = std::find_if(in_symbols.begin(), in_symbols.end(), [&](const Dim* s) {
      return !d.symbol.empty() && s->symbol == d.symbol;
    });
    if (it != in_symbols.end()) {
      in_symbols.erase(it);
    } else {
      out_opaque = true;
    }
  }
  const bool in_static = !in_opaque && in_symbols.empty();
  if (infer_at < 0) {
    if (in_static && !out_opaque && in_known != out_known)
      return node.Invalid("cannot reshape input ", in.ToString(), " (", in_known, " elements) to ",
                          ShapeToString(shape), " (", out_known, " elements)");
    return out;
  }
  if (in_opaque || out_opaque) {
    out[infer_at] = Dim();
  } else if (in_symbols.empty()) {
    if (out_known == 0)
      return node.Invalid("cannot infer the -1 dim of ", ShapeToString(shape),
                          ": the other dims have 0 elements");
    if (in_known % out_known != 0)
      return node.Invalid("cannot reshape input ", in.ToString(), " (", in_known, " elements) to ",
                          ShapeToString(shape));
    out[infer_at] = Dim::Known(in_known / out_known);
  } else if (in_symbols.size() == 1 && in_known == out_known) {
    out[infer_at] = *in_symbols[0];
  } else {
    out[infer_at] = Dim();
  }
  return out;
}

bool ReshapeAllowZero(const NodeView& node) {
  return node.opset() >= 14 && node.attr_int("allowzero", 0) != 0;
}

// Opset 1-4 carry the shape as an attribute, later opsets as input 1.
bool ReshapeShape(InferContext& ctx, std::vector<int64_t>* shape) {
  if (ctx.node().opset() < 5) {
    if (!ctx.node().has_attr("shape")) return false;
    *shape = ctx.node().attr_ints("shape");
    return true;
  }
  return ConstantInts(ctx, 1, shape);
}

Status InferReshape(InferContext& ctx) {
  const TypeInfo& in = ctx.input_type(0);
  if (ctx.node().opset() >= 5) ONYX_RETURN_IF_ERROR(ExpectIntInput(ctx, 1));
  std::vector<int64_t> shape;
  if (!ReshapeShape(ctx, &shape)) {
    const int64_t len = ctx.node().opset() >= 5 ? StaticLength(ctx, 1) : -1;
    ctx.SetOutputType(0, len >= 0 ? UnknownDimsType(in.elem, len) : TypeInfo::Tensor(in.elem));
    return Status::Ok();
  }
  ONYX_ASSIGN_OR_RETURN(std::vector<Dim> dims,
                        ReshapeDims(ctx.node(), in, shape, ReshapeAllowZero(ctx.node())));
  ctx.SetOutputType(0, RankedType(in.elem, std::move(dims)));
  return Status::Ok();
}

Status ReshapeKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> shape;
  if (node.opset() < 5) {
    ONYX_ASSIGN_OR_RETURN(shape, node.RequiredInts("shape"));
  } else {
    if (!ctx.has_input(1)) return node.Invalid("missing ", DescribeInput(node, 1));
    ONYX_ASSIGN_OR_RETURN(shape, IntsInput(ctx, 1));
  }
  ONYX_ASSIGN_OR_RETURN(std::vector<Dim> dims,
                        ReshapeDims(node, TypeInfo::TensorWithShape(x.dtype(), x.shape()), shape,
                                    ReshapeAllowZero(node)));
  Shape out;
  for (const Dim& d : dims) out.push_back(d.value);
  if (ShapeElementCount(out) != x.numel())
    return node.Fail("cannot reshape input 0 of shape ", ShapeToString(x.shape()), " to ",
                     ShapeToString(shape));
  ONYX_RETURN_IF_ERROR(CopyToOutput(ctx, x, out));
  return Status::Ok();
}

// ---- Flatten ----

StatusOr<int64_t> FlattenAxis(const NodeView& node, int64_t rank) {
  int64_t axis = node.attr_int("axis", 1);
  // Negative axes arrived in opset 11; the valid range is [-r, r].
  if (axis < -rank || axis > rank || (axis < 0 && node.opset() < 11))
    return node.Invalid("attribute 'axis' ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

Status InferFlatten(InferContext& ctx) {
  const TypeInfo& in = ctx.input_type(0);
  if (!in.has_shape) {
    ctx.SetOutputType(0, UnknownDimsType(in.elem, 2));
    return Status::Ok();
  }
  ONYX_ASSIGN_OR_RETURN(int64_t axis, FlattenAxis(ctx.node(), in.rank()));
  ctx.SetOutputType(0, RankedType(in.elem, {DimProduct(in.dims, 0, axis),
                                            DimProduct(in.dims, axis, in.dims.size())}));
  return Status::Ok();
}

Status FlattenKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  const Tensor& x = ctx.input(0);
  ONYX_ASSIGN_OR_RETURN(int64_t axis, FlattenAxis(ctx.node(), x.rank()));
  int64_t outer = 1, inner = 1;
  bool ok = true;
  for (int64_t d = 0; d < axis; ++d) ok = ok && CheckedMul(outer, x.dim(d), &outer);
  for (int64_t d = axis; d < x.rank(); ++d) ok = ok && CheckedMul(inner, x.dim(d), &inner);
  if (!ok)
    return ctx.node().Error(ErrorCode::kLimit, "input 0 of shape ", ShapeToString(x.shape()),
                            " has more elements than 64 bits can count");
  ONYX_RETURN_IF_ERROR(CopyToOutput(ctx, x, {outer, inner}));
  return Status::Ok();
}

// ---- Squeeze / Unsqueeze ----

// Axes of Squeeze/Unsqueeze: an attribute before opset 13, input 1 from 13 on. false when they
// are not known at plan time (or absent: `present` says which).
bool AxesAtPlanTime(InferContext& ctx, std::vector<int64_t>* axes, bool* present) {
  if (ctx.node().opset() < 13) {
    *present = ctx.node().has_attr("axes");
    *axes = ctx.node().attr_ints("axes");
    return true;
  }
  *present = ctx.has_input(1);
  if (!*present) return true;
  return ConstantInts(ctx, 1, axes);
}

StatusOr<std::vector<int64_t>> AxesAtRunTime(KernelContext& ctx, bool* present) {
  if (ctx.node().opset() < 13) {
    *present = ctx.node().has_attr("axes");
    return ctx.node().attr_ints("axes");
  }
  *present = ctx.has_input(1);
  if (!*present) return std::vector<int64_t>{};
  return IntsInput(ctx, 1);
}

// Squeezed dims; `axes` empty and !present removes every dim equal to 1.
StatusOr<std::vector<Dim>> SqueezeDims(const NodeView& node, const std::vector<Dim>& dims,
                                       const std::vector<int64_t>& axes, bool present) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<bool> drop(dims.size(), false);
  if (present) {
    ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> norm, NormalizeAxes(node, axes, rank, "axes"));
    for (int64_t a : norm) {
      if (dims[a].known() && dims[a].value != 1)
        return node.Invalid("cannot squeeze axis ", a, " of size ", dims[a].value,
                            " (it must be 1)");
      drop[a] = true;
    }
  } else {
    for (size_t i = 0; i < dims.size(); ++i) drop[i] = dims[i].known() && dims[i].value == 1;
  }
  std::vector<Dim> out;
  for (size_t i = 0; i < dims.size(); ++i)
    if (!drop[i]) out.push_back(dims[i]);
  return out;
}

Status InferSqueeze(InferContext& ctx) {
  const TypeInfo& in = ctx.input_type(0);
  if (ctx.node().opset() >= 13) ONYX_RETURN_IF_ERROR(ExpectIntInput(ctx, 1));
  std::vector<int64_t> axes;
  bool present = false;
  const bool known = AxesAtPlanTime(ctx, &axes, &present);
  if (!in.has_shape || !known) {
    const int64_t len = StaticLength(ctx, 1);
    if (in.has_shape && !known && len >= 0 && len <= in.rank())
      ctx.SetOutputType(0, UnknownDimsType(in.elem, in.rank() - len));
    else
      ctx.SetOutputType(0, TypeInfo::Tensor(in.elem));
    return Status::Ok();
  }
  if (!present) {
    for (const Dim& d : in.dims) {
      if (!d.known()) {  // might be 1 at run time: rank unknown
        ctx.SetOutputType(0, TypeInfo::Tensor(in.elem));
        return Status::Ok();
      }
    }
  }
  ONYX_ASSIGN_OR_RETURN(std::vector<Dim> dims, SqueezeDims(ctx.node(), in.dims, axes, present));
  ctx.SetOutputType(0, RankedType(in.elem, std::move(dims)));
  return Status::Ok();
}

Status SqueezeKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  const Tensor& x = ctx.input(0);
  bool present = false;
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesAtRunTime(ctx, &present));
  ONYX_ASSIGN_OR_RETURN(std::vector<Dim> dims,
                        SqueezeDims(ctx.node(), KnownDims(x.shape()), axes, present));
  Shape out;
  for (const Dim& d : dims) out.push_back(d.value);
  ONYX_RETURN_IF_ERROR(CopyToOutput(ctx, x, out));
  return Status::Ok();
}

StatusOr<std::vector<Dim>> UnsqueezeDims(const NodeView& node, const std::vector<Dim>& dims,
                                         const std::vector<int64_t>& axes) {
  const int64_t out_rank = static_cast<int64_t>(dims.size() + axes.size());
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> norm, NormalizeAxes(node, axes, out_rank, "axes"));
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : norm) inserted[a] = true;
  std::vector<Dim> out;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) out.push_back(inserted[i] ? Dim::Known(1) : dims[next++]);
  return out;
}

Status InferUnsqueeze(InferContext& ctx) {
  const TypeInfo& in = ctx.input_type(0);
  if (ctx.node().opset() >= 13) ONYX_RETURN_IF_ERROR(ExpectIntInput(ctx, 1));
  std::vector<int64_t> axes;
  bool present = false;
  const bool known = AxesAtPlanTime(ctx, &axes, &present);
  if (known && !present) return ctx.node().Invalid("the axes are missing");
  if (!in.has_shape || !known) {
    const int64_t len = StaticLength(ctx, 1);
    if (in.has_shape && len >= 0)
      ctx.SetOutputType(0, UnknownDimsType(in.elem, in.rank() + len));
    else
      ctx.SetOutputType(0, TypeInfo::Tensor(in.elem));
    return Status::Ok();
  }
  ONYX_ASSIGN_OR_RETURN(std::vector<Dim> dims, UnsqueezeDims(ctx.node(), in.dims, axes));
  ctx.SetOutputType(0, RankedType(in.elem, std::move(dims)));
  return Status::Ok();
}

Status UnsqueezeKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  const Tensor& x = ctx.input(0);
  bool present = false;
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesAtRunTime(ctx, &present));
  if (!present) return ctx.node().Invalid("the axes are missing");
  ONYX_ASSIGN_OR_RETURN(std::vector<Dim> dims,
                        UnsqueezeDims(ctx.node(), KnownDims(x.shape()), axes));
  Shape out;
  for (const Dim& d : dims) out.push_back(d.value);
  ONYX_RETURN_IF_ERROR(CopyToOutput(ctx, x, out));
  return Status::Ok();
}

// ---- Transpose ----

StatusOr<std::vector<int64_t>> TransposePerm(const NodeView& node, int64_t rank) {
  std::vector<int64_t> perm;
  if (node.has_attr("perm")) {
    perm = node.attr_ints("perm");
    if (static_cast<int64_t>(perm.size()) != rank)
      return node.Invalid("attribute 'perm' has ", perm.size(), " entries for an input of rank ",
                          rank);
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (int64_t& p : perm) {
      if (p < -rank || p >= rank || seen[p < 0 ? p + rank : p])
        return node.Invalid("attribute 'perm' is not a permutation of [0, ", rank, ")");
      if (p < 0) p += rank;
      seen[p] = true;
    }
  } else {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);  // default: reverse the dims
  }
  return perm;
}

Status InferTranspose(InferContext& ctx) {
  const TypeInfo& in = ctx.input_type(0);
  if (!in.has_shape) {
    const int64_t n = static_cast<int64_t>(ctx.node().attr_ints("perm").size());
    ctx.SetOutputType(
        0, ctx.node().has_attr("perm") ? UnknownDimsType(in.elem, n) : TypeInfo::Tensor(in.elem));
    return Status::Ok();
  }
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> perm, TransposePerm(ctx.node(), in.rank()));
  std::vector<Dim> dims;
  for (int64_t p : perm) dims.push_back(in.dims[p]);
  ctx.SetOutputType(0, RankedType(in.elem, std::move(dims)));
  return Status::Ok();
}

Status TransposeKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  const Tensor& x = ctx.input(0);
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> perm, TransposePerm(ctx.node(), x.rank()));
  Shape shape;
  for (int64_t p : perm) shape.push_back(x.dim(p));
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, x.dtype(), shape));
  reference::Transpose(x, perm, y);
  return Status::Ok();
}

// ---- Concat ----

StatusOr<int64_t> ConcatAxis(const NodeView& node, int64_t rank) {
  if (node.opset() >= 4 && !node.has_attr("axis"))
    return node.Invalid("required attribute 'axis' is missing");
  return NormalizeAxis(node, node.attr_int("axis", 1), rank, "attribute 'axis'");
}

Status InferConcat(InferContext& ctx) {
  if (ctx.num_inputs() == 0) return ctx.node().Invalid("needs at least one input");
  const DType elem = ctx.input_type(0).elem;
  int64_t rank = -1;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const TypeInfo& t = ctx.input_type(i);
    if (t.is_tensor() && elem != DType::kUndefined && t.elem != elem)
      return ctx.node().Invalid(DescribeInput(ctx.node(), i), " has type ", DTypeName(t.elem),
                                ", expected ", DTypeName(elem), " like input 0");
    if (!t.has_shape) continue;
    if (rank >= 0 && t.rank() != rank)
      return ctx.node().Invalid(DescribeInput(ctx.node(), i), " has rank ", t.rank(), ", expected ",
                                rank, " like the inputs before it");
    rank = t.rank();
  }
  if (rank < 0) {
    ctx.SetOutputType(0, TypeInfo::Tensor(elem));
    return Status::Ok();
  }
  if (rank == 0) return ctx.node().Invalid("cannot concatenate scalars");
  ONYX_ASSIGN_OR_RETURN(int64_t axis, ConcatAxis(ctx.node(), rank));
  std::vector<Dim> dims(static_cast<size_t>(rank));
  int64_t axis_sum = 0;
  bool axis_known = true;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const TypeInfo& t = ctx.input_type(i);
    if (!t.has_shape) {
      axis_known = false;
      continue;
    }
    for (int64_t d = 0; d < rank; ++d) {
      const Dim& td = t.dims[d];
      if (d == axis) {
        if (td.known()) {
          if (!CheckedAdd(axis_sum, td.value, &axis_sum))
            return ctx.node().Error(ErrorCode::kLimit, "the inputs' dims on axis ", axis,
                                    " add up to more than 64 bits can count");
        } else {
          axis_known = false;
        }
        continue;
      }
      if (td.known() && dims[d].known() && td.value != dims[d].value)
        return ctx.node().Invalid(DescribeInput(ctx.node(), i), " has shape ", t.ToString(),
                                  " whose dim ", d, " differs from the other inputs (",
                                  dims[d].value, ")");
      if (!dims[d].known() && (td.known() || dims[d].symbol.empty())) dims[d] = td;
    }
  }
  dims[axis] = axis_known ? Dim::Known(axis_sum) : Dim();
  if (ctx.num_inputs() == 1 && ctx.input_type(0).has_shape)
    dims[axis] = ctx.input_type(0).dims[axis];
  ctx.SetOutputType(0, RankedType(elem, std::move(dims)));
  return Status::Ok();
}

Status ConcatKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  const NodeView& node = ctx.node();
  std::vector<const Tensor*> inputs;
  for (int i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) inputs.push_back(&ctx.input(i));
  if (inputs.empty()) return node.Invalid("needs at least one input");
  const Tensor& first = *inputs[0];
  if (first.rank() == 0) return node.Fail("cannot concatenate scalars");
  ONYX_ASSIGN_OR_RETURN(int64_t axis, ConcatAxis(node, first.rank()));
  Shape shape = first.shape();
  shape[axis] = 0;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const Tensor& t = ctx.input(i);
    bool ok = t.rank() == first.rank() && t.dtype() == first.dtype();
    for (int64_t d = 0; ok && d < t.rank(); ++d) ok = d == axis || t.dim(d) == first.dim(d);
    if (!ok)
      return node.Fail(DescribeInput(node, i), " is ", DTypeName(t.dtype()),
                       ShapeToString(t.shape()), ", which does not match input 0 ",
                       DTypeName(first.dtype()), ShapeToString(first.shape()), " outside axis ",
                       axis);
    // Empty inputs can have any length on the axis: [2^62, 0] twice must not wrap around.
    if (!CheckedAdd(shape[axis], t.dim(axis), &shape[axis]))
      return node.Error(ErrorCode::kLimit, "the inputs' dims on axis ", axis,
                        " add up to more than 64 bits can count");
  }
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, first.dtype(), shape));
  reference::Concat(inputs, axis, y);
  return Status::Ok();
}

// ---- Split ----

// Split sizes along an axis of length `dim` into `n` outputs; `split` may be null (equal parts).
StatusOr<std::vector<int64_t>> SplitSizes(const NodeView& node, int64_t dim, int n,
                                          const std::vector<int64_t>* split) {
  if (split) {
    if (static_cast<int>(split->size()) != n)
      return node.Invalid("'split' has ", split->size(), " entries for ", n, " outputs");
    int64_t sum = 0;
    for (int64_t s : *split) {
      if (s < 0) return node.Invalid("'split' has a negative entry ", s);
      // Huge entries must not wrap around to the axis length.
      if (!CheckedAdd(sum, s, &sum))
        return node.Invalid("'split' entries ", ShapeToString(*split),
                            " sum to more than 64 bits can count");
    }
    if (sum != dim)
      return node.Invalid("'split' entries sum to ", sum, " but the axis has length ", dim);
    return *split;
  }
  if (n <= 0) return node.Invalid("has no outputs");
  if (dim % n == 0) return std::vector<int64_t>(n, dim / n);
  // Opset 18 (num_outputs): ceil(dim / n) per output, the last one gets what is left.
  if (node.opset() >= 18) {
    const int64_t chunk = dim / n + 1;  // ceil: dim % n != 0 here; dim + n - 1 could overflow
    int64_t used = 0;
    const int64_t last = CheckedMul(chunk, n - 1, &used) ? dim - used : -1;
    if (last >= 0) {
      std::vector<int64_t> sizes(n, chunk);
      sizes.back() = last;
      return sizes;
    }
  }
  return node.Invalid("cannot split an axis of length ", dim, " into ", n, " equal parts");
}

Status CheckNumOutputs(const NodeView& node, int num_outputs) {
  if (node.opset() >= 18 && node.has_attr("num_outputs") &&
      node.attr_int("num_outputs", 0) != num_outputs)
    return node.Invalid("attribute 'num_outputs' is ", node.attr_int("num_outputs", 0),
                        " but the node has ", num_outputs, " outputs");
  return Status::Ok();
}

// The 'split' sizes: attribute (opset < 13; opset 1 also takes input 1) or input 1 (>= 13).
// Returns false when they exist but are not known at plan time.
bool SplitAtPlanTime(InferContext& ctx, std::vector<int64_t>* split, bool* present) {
  const NodeView& node = ctx.node();
  if (node.opset() < 13 && node.has_attr("split")) {
    *present = true;
    *split = node.attr_ints("split");
    return true;
  }
  if ((node.opset() >= 13 || node.opset() == 1) && ctx.has_input(1)) {
    *present = true;
    return ConstantInts(ctx, 1, split);
  }
  *present = false;
  return true;
}

Status InferSplit(InferContext& ctx) {
  const NodeView& node = ctx.node();
  const TypeInfo& in = ctx.input_type(0);
  ONYX_RETURN_IF_ERROR(CheckNumOutputs(node, ctx.num_outputs()));
  if (node.opset() >= 13) ONYX_RETURN_IF_ERROR(ExpectIntInput(ctx, 1));
  if (!in.has_shape) {
    for (int i = 0; i < ctx.num_outputs(); ++i)
      if (ctx.has_output(i)) ctx.SetOutputType(i, TypeInfo::Tensor(in.elem));
    return Status::Ok();
  }
  ONYX_ASSIGN_OR_RETURN(
      int64_t axis, NormalizeAxis(node, node.attr_int("axis", 0), in.rank(), "attribute 'axis'"));
  std::vector<int64_t> split;
  bool present = false;
  const bool known = SplitAtPlanTime(ctx, &split, &present);
  std::vector<int64_t> sizes;
  if (known && in.dims[axis].known()) {
    // Sizes that do not fit leave the dims unknown rather than failing here: a Split inside an
    // If branch that never runs (AffineGrid's function body) must not stop the session; a Split
    // that does run reports the error from its kernel.
    auto fit = SplitSizes(node, in.dims[axis].value, ctx.num_outputs(), present ? &split : nullptr);
    if (fit.ok()) sizes = *fit;
  } else if (known && present) {
    sizes = split;
  }
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    if (!ctx.has_output(i)) continue;
    std::vector<Dim> dims = in.dims;
    dims[axis] = i < static_cast<int>(sizes.size()) ? Dim::Known(sizes[i]) : Dim();
    ctx.SetOutputType(i, RankedType(in.elem, std::move(dims)));
  }
  return Status::Ok();
}

Status SplitKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  ONYX_RETURN_IF_ERROR(CheckNumOutputs(node, ctx.num_outputs()));
  ONYX_ASSIGN_OR_RETURN(
      int64_t axis, NormalizeAxis(node, node.attr_int("axis", 0), x.rank(), "attribute 'axis'"));
  std::vector<int64_t> split;
  bool present = false;
  if (node.opset() < 13 && node.has_attr("split")) {
    present = true;
    split = node.attr_ints("split");
  } else if ((node.opset() >= 13 || node.opset() == 1) && ctx.has_input(1)) {
    present = true;
    ONYX_ASSIGN_OR_RETURN(split, IntsInput(ctx, 1));
  }
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, SplitSizes(node, x.dim(axis), ctx.num_outputs(),
                                                               present ? &split : nullptr));
  std::vector<int64_t> starts(x.rank(), 0), steps(x.rank(), 1);
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    if (ctx.has_output(i)) {
      Shape shape = x.shape();
      shape[axis] = sizes[i];
      ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, i, x.dtype(), shape));
      reference::Slice(x, starts, steps, y);
    }
    starts[axis] += sizes[i];
  }
  return Status::Ok();
}

// ---- Slice ----

struct SliceAxis {
  int64_t start = 0;  // first element read
  int64_t step = 1;
  int64_t count = -1;  // output length; -1 when the input dim is unknown
};

// ONNX Slice rules: negative starts/ends count from the back, then clamp to [0, dim] for positive
// steps and to [0, dim-1] / [-1, dim-1] for negative steps. `dims` holds -1 for unknown dims.
StatusOr<std::vector<SliceAxis>> ComputeSlice(
    const NodeView& node, const std::vector<int64_t>& dims, const std::vector<int64_t>& starts,
    const std::vector<int64_t>& ends, std::vector<int64_t> axes, std::vector<int64_t> steps) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (starts.size() != ends.size())
    return node.Invalid("'starts' has ", starts.size(), " entries but 'ends' has ", ends.size());
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    return node.Invalid("'starts', 'ends', 'axes' and 'steps' must have the same length (",
                        starts.size(), ", ", ends.size(), ", ", axes.size(), ", ", steps.size(),
                        ")");
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> norm, NormalizeAxes(node, axes, rank, "'axes'"));
  std::vector<SliceAxis> out(static_cast<size_t>(rank));
  for (int64_t a = 0; a < rank; ++a) out[a].count = dims[a];
  for (size_t i = 0; i < norm.size(); ++i) {
    const int64_t a = norm[i];
    const int64_t step = steps[i];
    if (step == 0) return node.Invalid("'steps' has a 0 entry for axis ", a);
    SliceAxis& s = out[a];
    s.step = step;
    const int64_t dim = dims[a];
    if (dim < 0) {
      // Unknown dim: only a full forward slice keeps it (start stays 0 to say so).
      s.count = -1;
      const bool full = step == 1 && starts[i] == 0 && ends[i] >= INT32_MAX;
      if (!full) s.start = -1;
      continue;
    }
    const SliceRange r = ResolveSliceRange(starts[i], ends[i], step, dim);
    s.start = r.start;
    s.count = r.count;
  }
  return out;
}

struct SliceArgs {
  std::vector<int64_t> starts, ends, axes, steps;
};

// Reads starts/ends/axes/steps: attributes in opset 1-9, inputs 1-4 from opset 10.
// Returns false when some are inputs without a plan-time constant.
bool SliceArgsAtPlanTime(InferContext& ctx, SliceArgs* args) {
  const NodeView& node = ctx.node();
  if (node.opset() < 10) {
    args->starts = node.attr_ints("starts");
    args->ends = node.attr_ints("ends");
    args->axes = node.attr_ints("axes");
    return true;
  }
  if (!ConstantInts(ctx, 1, &args->starts) || !ConstantInts(ctx, 2, &args->ends)) return false;
  if (ctx.has_input(3) && !ConstantInts(ctx, 3, &args->axes)) return false;
  if (ctx.has_input(4) && !ConstantInts(ctx, 4, &args->steps)) return false;
  return true;
}

Status InferSlice(InferContext& ctx) {
  const NodeView& node = ctx.node();
  const TypeInfo& in = ctx.input_type(0);
  if (node.opset() >= 10)
    for (int i = 1; i <= 4; ++i) ONYX_RETURN_IF_ERROR(ExpectIntInput(ctx, i));
  if (!in.has_shape) {
    ctx.SetOutputType(0, TypeInfo::Tensor(in.elem));
    return Status::Ok();
  }
  SliceArgs args;
  if (!SliceArgsAtPlanTime(ctx, &args)) {
    // Unknown bounds: axes that are surely not sliced keep their dim.
    std::vector<Dim> dims(in.dims.size());
    std::vector<int64_t> axes;
    if (ctx.has_input(3) && ConstantInts(ctx, 3, &axes)) {
      dims = in.dims;
      for (int64_t a : axes)
        if (a >= -in.rank() && a < in.rank()) dims[a < 0 ? a + in.rank() : a] = Dim();
    }
    ctx.SetOutputType(0, RankedType(in.elem, std::move(dims)));
    return Status::Ok();
  }
  std::vector<int64_t> known;
  for (const Dim& d : in.dims) known.push_back(d.known() ? d.value : -1);
  ONYX_ASSIGN_OR_RETURN(std::vector<SliceAxis> sl,
                        ComputeSlice(node, known, args.starts, args.ends, args.axes, args.steps));
  std::vector<Dim> dims = in.dims;
  for (size_t a = 0; a < dims.size(); ++a) {
    const bool untouched = sl[a].step == 1 && sl[a].start == 0 && sl[a].count == known[a];
    if (!untouched) dims[a] = sl[a].count >= 0 ? Dim::Known(sl[a].count) : Dim();
  }
  ctx.SetOutputType(0, RankedType(in.elem, std::move(dims)));
  return Status::Ok();
}

Status SliceKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  SliceArgs args;
  if (node.opset() < 10) {
    ONYX_ASSIGN_OR_RETURN(args.starts, node.RequiredInts("starts"));
    ONYX_ASSIGN_OR_RETURN(args.ends, node.RequiredInts("ends"));
    args.axes = node.attr_ints("axes");
  } else {
    if (!ctx.has_input(1) || !ctx.has_input(2))
      return node.Invalid("inputs 'starts' and 'ends' are required");
    ONYX_ASSIGN_OR_RETURN(args.starts, IntsInput(ctx, 1));
    ONYX_ASSIGN_OR_RETURN(args.ends, IntsInput(ctx, 2));
    if (ctx.has_input(3)) {
      ONYX_ASSIGN_OR_RETURN(args.axes, IntsInput(ctx, 3));
    }
    if (ctx.has_input(4)) {
      ONYX_ASSIGN_OR_RETURN(args.steps, IntsInput(ctx, 4));
    }
  }
  ONYX_ASSIGN_OR_RETURN(std::vector<SliceAxis> sl, ComputeSlice(node, x.shape(), args.starts,
                                                                args.ends, args.axes, args.steps));
  Shape shape;
  std::vector<int64_t> starts, steps;
  for (const SliceAxis& s : sl) {
    shape.push_back(s.count);
    starts.push_back(s.start);
    steps.push_back(s.step);
  }
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, x.dtype(), shape));
  reference::Slice(x, starts, steps, y);
  return Status::Ok();
}

// ---- Pad ----

StatusOr<reference::PadMode> PadMode(const NodeView& node) {
  const std::string mode = node.attr_string("mode", "constant");
  if (mode == "constant") return reference::PadMode::kConstant;
  if (mode == "reflect") return reference::PadMode::kReflect;
  if (mode == "edge") return reference::PadMode::kEdge;
  if (mode == "wrap") return reference::PadMode::kWrap;  // opset 19
  return node.Invalid("attribute 'mode' is '", mode, "'; expected constant, reflect, edge or wrap");
}

// Per-axis begin/end pads from the flat ONNX list [b_axes..., e_axes...] over `axes`
// (empty = every axis).
Status PadsPerAxis(const NodeView& node, int64_t rank, const std::vector<int64_t>& pads,
                   const std::vector<int64_t>& axes_in, std::vector<int64_t>* begin,
                   std::vector<int64_t>* end) {
  std::vector<int64_t> axes = axes_in;
  if (axes.empty())
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> norm, NormalizeAxes(node, axes, rank, "'axes'"));
  if (pads.size() != 2 * norm.size())
    return node.Invalid("'pads' has ", pads.size(), " entries; expected ", 2 * norm.size(),
                        " (2 per padded axis)");
  begin->assign(static_cast<size_t>(rank), 0);
  end->assign(static_cast<size_t>(rank), 0);
  for (int64_t p : pads)
    if (p > kMaxOutputElements || p < -kMaxOutputElements)
      return node.Invalid("'pads' entry ", p, " is out of range");
  for (size_t i = 0; i < norm.size(); ++i) {
    (*begin)[norm[i]] = pads[i];
    (*end)[norm[i]] = pads[norm.size() + i];
  }
  return Status::Ok();
}

// Output dim of one padded axis; checks that cropping leaves a valid range and that a non-constant
// mode has something to extend.
StatusOr<int64_t> PaddedDim(const NodeView& node, int64_t axis, int64_t dim, int64_t b, int64_t e,
                            reference::PadMode mode) {
  const int64_t left = dim - std::max<int64_t>(0, -b) - std::max<int64_t>(0, -e);
  if (left < 0)
    return node.Invalid("pads ", b, ", ", e, " crop more than the ", dim, " elements of axis ",
                        axis);
  if (mode != reference::PadMode::kConstant && left == 0 && (b > 0 || e > 0))
    return node.Invalid("cannot pad the empty axis ", axis, " in mode '",
                        node.attr_string("mode", "constant"), "'");
  // A declared (or empty) axis near 2^63 plus pads must not wrap around.
  int64_t out = 0;
  if (!CheckedAdd(left, std::max<int64_t>(0, b), &out) ||
      !CheckedAdd(out, std::max<int64_t>(0, e), &out))
    return node.Error(ErrorCode::kLimit, "pads ", b, ", ", e, " make axis ", axis, " of size ", dim,
                      " longer than 64 bits can count");
  return out;
}

bool PadArgsAtPlanTime(InferContext& ctx, std::vector<int64_t>* pads, std::vector<int64_t>* axes) {
  const NodeView& node = ctx.node();
  if (node.opset() < 11) {
    *pads = node.attr_ints(node.opset() < 2 ? "paddings" : "pads");
    return true;
  }
  if (!ConstantInts(ctx, 1, pads)) return false;
  if (node.opset() >= 18 && ctx.has_input(3) && !ConstantInts(ctx, 3, axes)) return false;
  return true;
}

Status InferPad(InferContext& ctx) {
  const NodeView& node = ctx.node();
  const TypeInfo& in = ctx.input_type(0);
  ONYX_ASSIGN_OR_RETURN(reference::PadMode mode, PadMode(node));
  if (node.opset() >= 11) {
    ONYX_RETURN_IF_ERROR(ExpectIntInput(ctx, 1));
    ONYX_RETURN_IF_ERROR(ExpectIntInput(ctx, 3));
    if (ctx.has_input(2) && ctx.input_type(2).is_tensor() && in.is_tensor() &&
        ctx.input_type(2).elem != in.elem)
      return node.Invalid(DescribeInput(node, 2), " has type ", DTypeName(ctx.input_type(2).elem),
                          ", expected ", DTypeName(in.elem), " like input 0");
  }
  if (!in.has_shape) {
    ctx.SetOutputType(0, TypeInfo::Tensor(in.elem));
    return Status::Ok();
  }
  std::vector<int64_t> pads, axes, begin, end;
  if (!PadArgsAtPlanTime(ctx, &pads, &axes)) {
    ctx.SetOutputType(0, UnknownDimsType(in.elem, in.rank()));
    return Status::Ok();
  }
  ONYX_RETURN_IF_ERROR(PadsPerAxis(node, in.rank(), pads, axes, &begin, &end));
  std::vector<Dim> dims = in.dims;
  for (int64_t a = 0; a < in.rank(); ++a) {
    if (begin[a] == 0 && end[a] == 0) continue;
    if (!dims[a].known()) {
      dims[a] = Dim();
      continue;
    }
    ONYX_ASSIGN_OR_RETURN(int64_t d, PaddedDim(node, a, dims[a].value, begin[a], end[a], mode));
    dims[a] = Dim::Known(d);
  }
  ONYX_RETURN_IF_ERROR(CheckElementCount(ctx.node(), dims));
  ctx.SetOutputType(0, RankedType(in.elem, std::move(dims)));
  return Status::Ok();
}

Status PadKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  ONYX_ASSIGN_OR_RETURN(reference::PadMode mode, PadMode(node));
  std::vector<int64_t> pads, axes, begin, end;
  // The constant: attribute 'value' (float) before opset 11, input 2 (of x's type) after.
  Tensor value = Tensor::Allocate(x.dtype(), {});
  if (node.opset() < 11) {
    pads = node.attr_ints(node.opset() < 2 ? "paddings" : "pads");
    if (x.dtype() != DType::kString)
      StoreFromDouble(x.dtype(), value.raw_data(), 0, node.attr_float("value", 0.0f));
  } else {
    if (!ctx.has_input(1)) return node.Invalid("input 'pads' is required");
    ONYX_ASSIGN_OR_RETURN(pads, IntsInput(ctx, 1));
    if (ctx.has_input(2)) {
      const Tensor& v = ctx.input(2);
      if (v.dtype() != x.dtype() || v.numel() != 1)
        return node.Fail(DescribeInput(node, 2), " must be one ", DTypeName(x.dtype()),
                         " element, got ", DTypeName(v.dtype()), ShapeToString(v.shape()));
      CopyElements(x.dtype(), v.raw_data(), 0, value.raw_data(), 0, 1);
    }
    if (node.opset() >= 18 && ctx.has_input(3)) {
      ONYX_ASSIGN_OR_RETURN(axes, IntsInput(ctx, 3));
    }
  }
  ONYX_RETURN_IF_ERROR(PadsPerAxis(node, x.rank(), pads, axes, &begin, &end));
  Shape shape(x.shape());
  for (int64_t a = 0; a < x.rank(); ++a) {
    ONYX_ASSIGN_OR_RETURN(shape[a], PaddedDim(node, a, x.dim(a), begin[a], end[a], mode));
  }
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, x.dtype(), shape));
  reference::Pad(x, begin, end, mode, value.raw_data(), y);
  return Status::Ok();
}

// ---- Tile ----

Status InferTile(InferContext& ctx) {
  const NodeView& node = ctx.node();
  const TypeInfo& in = ctx.input_type(0);
  ONYX_RETURN_IF_ERROR(ExpectIntInput(ctx, 1));
  if (!in.has_shape) {
    ctx.SetOutputType(0, TypeInfo::Tensor(in.elem));
    return Status::Ok();
  }
  std::vector<int64_t> repeats;
  if (node.opset() < 6 || !ConstantInts(ctx, 1, &repeats)) {
    ctx.SetOutputType(0, UnknownDimsType(in.elem, in.rank()));
    return Status::Ok();
  }
  if (static_cast<int64_t>(repeats.size()) != in.rank())
    return node.Invalid(DescribeInput(node, 1), " has ", repeats.size(),
                        " entries for an input of rank ", in.rank());
  std::vector<Dim> dims = in.dims;
  for (size_t a = 0; a < dims.size(); ++a) {
    if (repeats[a] < 0) return node.Invalid(DescribeInput(node, 1), " has a negative repeat");
    if (repeats[a] == 1) continue;
    if (dims[a].known() && repeats[a] > 0 && dims[a].value > kMaxOutputElements / repeats[a])
      return node.Invalid(DescribeInput(node, 1), " repeat ", repeats[a], " makes axis ", a,
                          " too large");
    dims[a] = dims[a].known() ? Dim::Known(dims[a].value * repeats[a])
                              : (repeats[a] == 0 ? Dim::Known(0) : Dim());
  }
  ONYX_RETURN_IF_ERROR(CheckElementCount(ctx.node(), dims));
  ctx.SetOutputType(0, RankedType(in.elem, std::move(dims)));
  return Status::Ok();
}

Status TileKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> repeats;
  if (node.opset() < 6) {
    // Opset 1: scalar inputs 'tiles' and 'axis' repeat one axis.
    if (!ctx.has_input(1) || !ctx.has_input(2))
      return node.Invalid("inputs 'tiles' and 'axis' are required");
    ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> tiles, IntsInput(ctx, 1));
    ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> axis, IntsInput(ctx, 2));
    if (tiles.size() != 1 || axis.size() != 1)
      return node.Fail("inputs 'tiles' and 'axis' must be scalars");
    ONYX_ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(node, axis[0], x.rank(), "input 'axis'"));
    repeats.assign(x.rank(), 1);
    repeats[a] = tiles[0];
  } else {
    if (!ctx.has_input(1)) return node.Invalid("input 'repeats' is required");
    ONYX_ASSIGN_OR_RETURN(repeats, IntsInput(ctx, 1));
  }
  if (static_cast<int64_t>(repeats.size()) != x.rank())
    return node.Fail(DescribeInput(node, 1), " has ", repeats.size(),
                     " entries for an input of rank ", x.rank());
  Shape shape = x.shape();
  for (size_t a = 0; a < shape.size(); ++a) {
    if (repeats[a] < 0)
      return node.Fail(DescribeInput(node, 1), " has a negative repeat ", repeats[a]);
    if (repeats[a] > 0 && shape[a] > kMaxOutputElements / repeats[a])
      return node.Fail(DescribeInput(node, 1), " repeat ", repeats[a], " makes axis ", a,
                       " too large");
    shape[a] *= repeats[a];
  }
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, x.dtype(), shape));
  reference::Tile(x, y);
  return Status::Ok();
}

// ---- Expand ----

Status InferExpand(InferContext& ctx) {
  const NodeView& node = ctx.node();
  const TypeInfo& in = ctx.input_type(0);
  ONYX_RETURN_IF_ERROR(ExpectIntInput(ctx, 1));
  std::vector<int64_t> shape;
  if (!ConstantInts(ctx, 1, &shape)) {
    const int64_t len = StaticLength(ctx, 1);
    if (in.has_shape && len >= 0)
      ctx.SetOutputType(0, UnknownDimsType(in.elem, std::max(len, in.rank())));
    else
      ctx.SetOutputType(0, TypeInfo::Tensor(in.elem));
    return Status::Ok();
  }
  for (int64_t s : shape)
    if (s < 0) return node.Invalid(DescribeInput(node, 1), " has a negative dim ", s);
  if (!in.has_shape) {
    ctx.SetOutputType(0, UnknownDimsType(in.elem, static_cast<int64_t>(shape.size())));
    return Status::Ok();
  }
  auto dims = BroadcastDims(in.dims, KnownDims(shape));
  if (!dims.ok())
    return node.Invalid("input 0 ", in.ToString(), " cannot expand to ", ShapeToString(shape), ": ",
                        dims.status().message());
  ONYX_RETURN_IF_ERROR(CheckElementCount(node, *dims));
  ctx.SetOutputType(0, RankedType(in.elem, std::move(dims).value()));
  return Status::Ok();
}

Status ExpandKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  if (!ctx.has_input(1)) return node.Invalid("input 'shape' is required");
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> shape, IntsInput(ctx, 1));
  for (int64_t s : shape)
    if (s < 0) return node.Fail(DescribeInput(node, 1), " has a negative dim ", s);
  auto out = BroadcastShapes({x.shape(), shape});
  if (!out.ok()) return node.Fail("cannot expand input 0: ", out.status().message());
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, x.dtype(), *out));
  reference::Expand(x, y);
  return Status::Ok();
}

// ---- Shape / Size ----

// [start, end) of the dims Shape returns (opset 15: negative counts from the back, clamped).
std::pair<int64_t, int64_t> ShapeRange(const NodeView& node, int64_t rank) {
  int64_t start = 0, end = rank;
  if (node.opset() >= 15) {
    start = node.attr_int("start", 0);
    end = node.attr_int("end", rank);
  }
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  return {start, std::max(start, end)};
}

Status InferShape(InferContext& ctx) {
  const TypeInfo& in = ctx.input_type(0);
  if (!in.has_shape) {
    ctx.SetOutputType(0, UnknownDimsType(DType::kInt64, 1));
    return Status::Ok();
  }
  auto [start, end] = ShapeRange(ctx.node(), in.rank());
  ctx.SetOutputType(0, TypeInfo::TensorWithShape(DType::kInt64, {end - start}));
  return Status::Ok();
}

Status ShapeKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  const Tensor& x = ctx.input(0);
  auto [start, end] = ShapeRange(ctx.node(), x.rank());
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kInt64, {end - start}));
  for (int64_t i = start; i < end; ++i) y.data<int64_t>()[i - start] = x.dim(i);
  return Status::Ok();
}

Status InferSize(InferContext& ctx) {
  ctx.SetOutputType(0, TypeInfo::TensorWithShape(DType::kInt64, {}));
  return Status::Ok();
}

Status SizeKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kInt64, {}));
  *y.data<int64_t>() = ctx.input(0).numel();
  return Status::Ok();
}

// ---- Identity ----

Status IdentityKernel(KernelContext& ctx) {
  const Value& v = ctx.input_value(0);
  if (v.is_tensor()) {
    ONYX_RETURN_IF_ERROR(CopyToOutput(ctx, v.tensor(), v.tensor().shape()));
  } else {
    // Sequences and empty optionals are immutable shared values: pass the same Value on.
    ctx.SetOutput(0, v);
  }
  return Status::Ok();
}

// ---- Constant ----

// The value a Constant node holds: exactly one of value, sparse_value, value_float(s),
// value_int(s), value_string(s).
StatusOr<Tensor> ConstantValue(const NodeView& node) {
  const ir::Node& n = node.node();
  if (n.attributes.size() != 1)
    return node.Invalid("needs exactly one value attribute, got ", n.attributes.size());
  const ir::Attribute& a = n.attributes[0];
  auto vec_shape = [](size_t n) { return Shape{static_cast<int64_t>(n)}; };
  if (a.name == "value" || a.name == "sparse_value") {
    if (a.type != ir::AttrType::kTensor && a.type != ir::AttrType::kSparseTensor)
      return node.Invalid("attribute '", a.name, "' must be a tensor");
    return a.t;
  }
  if (a.name == "value_float" && a.type == ir::AttrType::kFloat)
    return Tensor::Scalar(DType::kFloat, a.f);
  if (a.name == "value_int" && a.type == ir::AttrType::kInt)
    return Tensor::Scalar(DType::kInt64, a.i);
  if (a.name == "value_floats" && a.type == ir::AttrType::kFloats) {
    Tensor t = Tensor::Allocate(DType::kFloat, vec_shape(a.floats.size()));
    std::copy(a.floats.begin(), a.floats.end(), t.data<float>());
    return t;
  }
  if (a.name == "value_ints" && a.type == ir::AttrType::kInts) {
    Tensor t = Tensor::Allocate(DType::kInt64, vec_shape(a.ints.size()));
    std::copy(a.ints.begin(), a.ints.end(), t.data<int64_t>());
    return t;
  }
  if (a.name == "value_string" && a.type == ir::AttrType::kString) {
    Tensor t = Tensor::Allocate(DType::kString, {});
    t.strings()[0] = a.s;
    return t;
  }
  if (a.name == "value_strings" && a.type == ir::AttrType::kStrings) {
    Tensor t = Tensor::Allocate(DType::kString, vec_shape(a.strings.size()));
    std::copy(a.strings.begin(), a.strings.end(), t.strings());
    return t;
  }
  return node.Invalid("unexpected attribute '", a.name, "' of type ", ir::AttrTypeName(a.type));
}

Status InferConstant(InferContext& ctx) {
  ONYX_ASSIGN_OR_RETURN(Tensor t, ConstantValue(ctx.node()));
  ctx.SetOutputType(0, TypeInfo::TensorWithShape(t.dtype(), t.shape()));
  return Status::Ok();
}

Status ConstantKernel(KernelContext& ctx) {
  ONYX_ASSIGN_OR_RETURN(Tensor t, ConstantValue(ctx.node()));
  ONYX_RETURN_IF_ERROR(CopyToOutput(ctx, t, t.shape()));
  return Status::Ok();
}

// ---- ConstantOfShape ----

// The fill value: attribute 'value' (one element of any type), default float 0.
StatusOr<Tensor> FillValue(const NodeView& node) {
  const Tensor* v = node.attr_tensor("value");
  if (!v) return Tensor::Scalar(DType::kFloat, 0.0f);
  if (v->numel() != 1)
    return node.Invalid("attribute 'value' must hold one element, got shape ",
                        ShapeToString(v->shape()));
  return *v;
}

Status InferConstantOfShape(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(Tensor value, FillValue(node));
  ONYX_RETURN_IF_ERROR(ExpectIntInput(ctx, 0));
  std::vector<int64_t> shape;
  if (!ConstantInts(ctx, 0, &shape)) {
    const int64_t len = StaticLength(ctx, 0);
    ctx.SetOutputType(
        0, len >= 0 ? UnknownDimsType(value.dtype(), len) : TypeInfo::Tensor(value.dtype()));
    return Status::Ok();
  }
  for (int64_t s : shape)
    if (s < 0) return node.Invalid(DescribeInput(node, 0), " has a negative dim ", s);
  const TypeInfo out = TypeInfo::TensorWithShape(value.dtype(), shape);
  ONYX_RETURN_IF_ERROR(CheckElementCount(node, out.dims));
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

Status ConstantOfShapeKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(Tensor value, FillValue(node));
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> shape, IntsInput(ctx, 0));
  for (int64_t s : shape)
    if (s < 0) return node.Fail(DescribeInput(node, 0), " has a negative dim ", s);
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, value.dtype(), shape));
  reference::FillElements(value.dtype(), value.raw_data(), y.raw_data(), y.numel());
  return Status::Ok();
}

// ---- Range ----

const std::vector<DType> kRangeTypes = {DType::kFloat,   DType::kDouble, DType::kInt16,
                                        DType::kInt32,   DType::kInt64,  DType::kFloat16,
                                        DType::kBFloat16};
constexpr int64_t kMaxRangeLength = int64_t{1} << 40;

// number_of_elements = max(ceil((limit - start) / delta), 0), exactly for integers.
StatusOr<int64_t> RangeLength(const NodeView& node, const Tensor& start, const Tensor& limit,
                              const Tensor& delta) {
  for (const Tensor* t : {&start, &limit, &delta}) {
    if (t->numel() != 1 || t->dtype() != start.dtype())
      return node.Invalid("'start', 'limit' and 'delta' must be scalars of one type, got ",
                          DTypeName(t->dtype()), ShapeToString(t->shape()));
  }
  int64_t n;
  if (IsInteger(start.dtype())) {
    const __int128 s = TensorToInts(start)[0], l = TensorToInts(limit)[0],
                   d = TensorToInts(delta)[0];
    if (d == 0) return node.Invalid("'delta' is 0");
    const __int128 diff = l - s;
    __int128 count = 0;
    if (d > 0 && diff > 0) count = (diff + d - 1) / d;
    if (d < 0 && diff < 0) count = (-diff + -d - 1) / -d;
    if (count > kMaxRangeLength) return node.Invalid("range has more than 2^40 elements");
    n = static_cast<int64_t>(count);
  } else {
    const double s = ElementAsDouble(start, 0), l = ElementAsDouble(limit, 0),
                 d = ElementAsDouble(delta, 0);
    if (d == 0) return node.Invalid("'delta' is 0");
    const double count = std::ceil((l - s) / d);
    if (!std::isfinite(count) && !(count < 0))
      return node.Invalid("range length is not finite (start ", s, ", limit ", l, ", delta ", d,
                          ")");
    if (count > static_cast<double>(kMaxRangeLength))
      return node.Invalid("range has more than 2^40 elements");
    n = count > 0 ? static_cast<int64_t>(count) : 0;
  }
  return n;
}

Status InferRange(InferContext& ctx) {
  const NodeView& node = ctx.node();
  for (int i = 0; i < 3; ++i) ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, i, kRangeTypes));
  const DType elem = ctx.input_type(0).elem;
  const Tensor* s = ctx.input_constant(0);
  const Tensor* l = ctx.input_constant(1);
  const Tensor* d = ctx.input_constant(2);
  if (s && l && d) {
    ONYX_ASSIGN_OR_RETURN(int64_t n, RangeLength(node, *s, *l, *d));
    ctx.SetOutputType(0, TypeInfo::TensorWithShape(elem, {n}));
  } else {
    ctx.SetOutputType(0, UnknownDimsType(elem, 1));
  }
  return Status::Ok();
}

Status RangeKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  const NodeView& node = ctx.node();
  for (int i = 0; i < 3; ++i)
    if (!ctx.has_input(i)) return node.Invalid("missing ", DescribeInput(node, i));
  const Tensor& start = ctx.input(0);
  if (std::find(kRangeTypes.begin(), kRangeTypes.end(), start.dtype()) == kRangeTypes.end())
    return node.NotSupported("input 0 'start' has type ", DTypeName(start.dtype()));
  ONYX_ASSIGN_OR_RETURN(int64_t n, RangeLength(node, start, ctx.input(1), ctx.input(2)));
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, start.dtype(), {n}));
  reference::Range(start, ctx.input(2), y);
  return Status::Ok();
}

// ---- EyeLike ----

StatusOr<DType> EyeLikeType(const NodeView& node, DType input) {
  if (!node.has_attr("dtype")) return input;
  const int64_t v = node.attr_int("dtype", 0);
  // Range first: 2^32 + 1 must not truncate to a known type.
  if (v < INT32_MIN || v > INT32_MAX || !IsKnownDType(static_cast<int32_t>(v)) ||
      static_cast<DType>(v) == DType::kString)
    return node.NotSupported("attribute 'dtype' ", v, " is not a supported output type");
  return static_cast<DType>(v);
}

Status InferEyeLike(InferContext& ctx) {
  const TypeInfo& in = ctx.input_type(0);
  ONYX_ASSIGN_OR_RETURN(DType t, EyeLikeType(ctx.node(), in.elem));
  if (in.has_shape && in.rank() != 2)
    return ctx.node().Invalid("input 0 must be 2-D, got ", in.ToString());
  if (in.is_tensor() && in.elem == DType::kString)
    return ctx.node().NotSupported("input 0 has type string");
  TypeInfo out = in;
  out.kind = TypeInfo::Kind::kTensor;
  out.elem = t;
  if (!out.has_shape) out = UnknownDimsType(t, 2);
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

Status EyeLikeKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  const Tensor& x = ctx.input(0);
  if (x.rank() != 2)
    return ctx.node().Fail("input 0 must be 2-D, got shape ", ShapeToString(x.shape()));
  ONYX_ASSIGN_OR_RETURN(DType t, EyeLikeType(ctx.node(), x.dtype()));
  if (t == DType::kString) return ctx.node().NotSupported("input 0 has type string");
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, t, x.shape()));
  reference::EyeLike(ctx.node().attr_int("k", 0), y);
  return Status::Ok();
}

// ---- Trilu ----

Status InferTrilu(InferContext& ctx) {
  const TypeInfo& in = ctx.input_type(0);
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, {DType::kInt64}));
  if (in.has_shape && in.rank() < 2)
    return ctx.node().Invalid("input 0 must have rank >= 2, got ", in.ToString());
  ctx.SetOutputType(0, in);
  return Status::Ok();
}

Status TriluKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2)
    return node.Fail("input 0 must have rank >= 2, got shape ", ShapeToString(x.shape()));
  int64_t k = 0;
  if (ctx.has_input(1)) {
    ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> kv, IntsInput(ctx, 1));
    if (kv.size() != 1) return node.Fail(DescribeInput(node, 1), " must hold one value");
    k = kv[0];
  }
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, x.dtype(), x.shape()));
  reference::Trilu(x, k, node.attr_int("upper", 1) != 0, y);
  return Status::Ok();
}

// ---- DepthToSpace / SpaceToDepth ----

StatusOr<int64_t> Blocksize(const NodeView& node) {
  ONYX_ASSIGN_OR_RETURN(int64_t b, node.RequiredInt("blocksize"));
  if (b <= 0) return node.Invalid("attribute 'blocksize' must be positive, got ", b);
  return b;
}

// Output dims of DepthToSpace (to_space) or SpaceToDepth for a 4-D input of known dims (-1
// unknown).
StatusOr<std::vector<int64_t>> DepthSpaceDims(const NodeView& node, const std::vector<int64_t>& in,
                                              bool to_space) {
  ONYX_ASSIGN_OR_RETURN(int64_t b, Blocksize(node));
  if (in.size() != 4) return node.Invalid("input 0 must be 4-D [N, C, H, W], got rank ", in.size());
  std::vector<int64_t> out = in;
  // A blocksize of 2^32 (b * b) or a large dim times b must not wrap around.
  int64_t b2 = 0;
  if (!CheckedMul(b, b, &b2))
    return node.Invalid("attribute 'blocksize' ", b, " squared is more than 64 bits can count");
  auto scale = [&](int64_t d, int64_t m, const char* what) -> StatusOr<int64_t> {
    int64_t r = -1;
    if (d >= 0 && !CheckedMul(d, m, &r))
      return node.Error(ErrorCode::kLimit, "input 0 ", what, " ", d, " times ", m,
                        " is more than 64 bits can count");
    return r;
  };
  auto divide = [&](int64_t d, int64_t m, const char* what) -> StatusOr<int64_t> {
    if (d < 0) return int64_t{-1};
    if (d % m != 0) return node.Invalid("input 0 ", what, " ", d, " is not a multiple of ", m);
    return d / m;
  };
  if (to_space) {
    ONYX_ASSIGN_OR_RETURN(out[1], divide(in[1], b2, "channels"));
    ONYX_ASSIGN_OR_RETURN(out[2], scale(in[2], b, "height"));
    ONYX_ASSIGN_OR_RETURN(out[3], scale(in[3], b, "width"));
  } else {
    ONYX_ASSIGN_OR_RETURN(out[1], scale(in[1], b2, "channels"));
    ONYX_ASSIGN_OR_RETURN(out[2], divide(in[2], b, "height"));
    ONYX_ASSIGN_OR_RETURN(out[3], divide(in[3], b, "width"));
  }
  return out;
}

// DepthToSpace's mode (opset 11) and SpaceToDepth's (opset 28): true for CRD.
StatusOr<bool> DepthSpaceCrd(const NodeView& node) {
  const std::string mode = node.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD")
    return node.Invalid("attribute 'mode' is '", mode, "'; expected DCR or CRD");
  return mode == "CRD";
}

template <bool kToSpace>
Status InferDepthSpace(InferContext& ctx) {
  const TypeInfo& in = ctx.input_type(0);
  ONYX_RETURN_IF_ERROR(DepthSpaceCrd(ctx.node()).status());
  if (!in.has_shape) {
    ctx.SetOutputType(0, UnknownDimsType(in.elem, 4));
    return Status::Ok();
  }
  std::vector<int64_t> known;
  for (const Dim& d : in.dims) known.push_back(d.known() ? d.value : -1);
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> out, DepthSpaceDims(ctx.node(), known, kToSpace));
  std::vector<Dim> dims = KnownDims(out);
  dims[0] = in.dims[0];
  ctx.SetOutputType(0, RankedType(in.elem, std::move(dims)));
  return Status::Ok();
}

Status DepthToSpaceKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  const Tensor& x = ctx.input(0);
  ONYX_ASSIGN_OR_RETURN(bool crd, DepthSpaceCrd(ctx.node()));
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> shape, DepthSpaceDims(ctx.node(), x.shape(), true));
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, x.dtype(), shape));
  reference::DepthToSpace(x, ctx.node().attr_int("blocksize", 1), crd, y);
  return Status::Ok();
}

Status SpaceToDepthKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  const Tensor& x = ctx.input(0);
  ONYX_ASSIGN_OR_RETURN(bool crd, DepthSpaceCrd(ctx.node()));
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> shape, DepthSpaceDims(ctx.node(), x.shape(), false));
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, x.dtype(), shape));
  reference::SpaceToDepth(x, ctx.node().attr_int("blocksize", 1), crd, y);
  return Status::Ok();
}

// ---- CenterCropPad ----

// The target size per axis (-1: unchanged), from input 1 'shape' over attribute 'axes'.
StatusOr<std::vector<int64_t>> CropPadTargets(const NodeView& node, int64_t rank,
                                              const std::vector<int64_t>& shape) {
  std::vector<int64_t> axes = node.attr_ints("axes");
  if (!node.has_attr("axes"))
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> norm, NormalizeAxes(node, axes, rank, "'axes'"));
  if (shape.size() != norm.size())
    return node.Invalid(DescribeInput(node, 1), " has ", shape.size(), " entries for ", norm.size(),
                        " axes");
  std::vector<int64_t> target(static_cast<size_t>(rank), -1);
  for (size_t i = 0; i < norm.size(); ++i) {
    if (shape[i] < 0)
      return node.Invalid(DescribeInput(node, 1), " has a negative size ", shape[i]);
    target[norm[i]] = shape[i];
  }
  return target;
}

Status InferCenterCropPad(InferContext& ctx) {
  const TypeInfo& in = ctx.input_type(0);
  ONYX_RETURN_IF_ERROR(ExpectIntInput(ctx, 1));
  std::vector<int64_t> shape;
  if (!in.has_shape) {
    ctx.SetOutputType(0, TypeInfo::Tensor(in.elem));
    return Status::Ok();
  }
  if (!ConstantInts(ctx, 1, &shape)) {
    std::vector<Dim> dims(in.dims.size());
    if (ctx.node().has_attr("axes")) {
      dims = in.dims;
      for (int64_t a : ctx.node().attr_ints("axes"))
        if (a >= -in.rank() && a < in.rank()) dims[a < 0 ? a + in.rank() : a] = Dim();
    }
    ctx.SetOutputType(0, RankedType(in.elem, std::move(dims)));
    return Status::Ok();
  }
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> target, CropPadTargets(ctx.node(), in.rank(), shape));
  std::vector<Dim> dims = in.dims;
  for (size_t a = 0; a < dims.size(); ++a)
    if (target[a] >= 0) dims[a] = Dim::Known(target[a]);
  ONYX_RETURN_IF_ERROR(CheckElementCount(ctx.node(), dims));
  ctx.SetOutputType(0, RankedType(in.elem, std::move(dims)));
  return Status::Ok();
}

Status CenterCropPadKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  if (!ctx.has_input(1)) return node.Invalid("input 'shape' is required");
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> shape, IntsInput(ctx, 1));
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> target, CropPadTargets(node, x.rank(), shape));
  // A crop is a negative pad: both take floor(diff / 2) in front and the rest behind.
  std::vector<int64_t> begin(x.rank(), 0), end(x.rank(), 0);
  Shape out = x.shape();
  for (int64_t a = 0; a < x.rank(); ++a) {
    if (target[a] < 0) continue;
    const int64_t diff = target[a] - x.dim(a);
    const int64_t front = diff >= 0 ? diff / 2 : -((-diff) / 2);
    begin[a] = front;
    end[a] = diff - front;
    out[a] = target[a];
  }
  Tensor zero = Tensor::Allocate(x.dtype(), {});
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, x.dtype(), out));
  reference::Pad(x, begin, end, reference::PadMode::kConstant, zero.raw_data(), y);
  return Status::Ok();
}

// ---- Col2Im ----

Status Col2ImParams(const NodeView& node, const std::vector<int64_t>& image,
                    const std::vector<int64_t>& block, reference::Col2ImParams* p) {
  const size_t nd = image.size();
  if (nd == 0 || block.size() != nd)
    return node.Invalid("'image_shape' and 'block_shape' must have the same non-zero length, got ",
                        nd, " and ", block.size());
  p->image = image;
  p->block = block;
  p->dilations = node.attr_ints("dilations", std::vector<int64_t>(nd, 1));
  p->strides = node.attr_ints("strides", std::vector<int64_t>(nd, 1));
  p->pads = node.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
  if (p->dilations.size() != nd || p->strides.size() != nd || p->pads.size() != 2 * nd)
    return node.Invalid("attributes 'dilations', 'strides' and 'pads' must have ", nd, ", ", nd,
                        " and ", 2 * nd, " entries");
  for (size_t d = 0; d < nd; ++d) {
    if (image[d] <= 0 || block[d] <= 0 || p->dilations[d] <= 0 || p->strides[d] <= 0 ||
        p->pads[d] < 0 || p->pads[nd + d] < 0)
      return node.Invalid(
          "image, block, dilation and stride sizes must be positive and pads "
          "non-negative (dim ",
          d, ")");
  }
  return Status::Ok();
}

Status InferCol2Im(InferContext& ctx) {
  const TypeInfo& in = ctx.input_type(0);
  ONYX_RETURN_IF_ERROR(ExpectIntInput(ctx, 1));
  ONYX_RETURN_IF_ERROR(ExpectIntInput(ctx, 2));
  if (in.is_tensor() && (in.elem == DType::kString || in.elem == DType::kBool ||
                         in.elem == DType::kComplex64 || in.elem == DType::kComplex128))
    return ctx.node().NotSupported("input 0 has type ", DTypeName(in.elem));
  std::vector<int64_t> image, block;
  if (!ConstantInts(ctx, 1, &image) || !ConstantInts(ctx, 2, &block) || !in.has_shape) {
    const int64_t len = StaticLength(ctx, 1);
    ctx.SetOutputType(0, len >= 0 ? UnknownDimsType(in.elem, len + 2) : TypeInfo::Tensor(in.elem));
    return Status::Ok();
  }
  reference::Col2ImParams p;
  ONYX_RETURN_IF_ERROR(Col2ImParams(ctx.node(), image, block, &p));
  if (in.rank() != 3) return ctx.node().Invalid("input 0 must be 3-D, got ", in.ToString());
  int64_t block_size = 1;
  for (int64_t b : block)
    if (!CheckedMul(block_size, b, &block_size) || block_size == 0)
      return ctx.node().Invalid("'block_shape' ", ShapeToString(block), " is out of range");
  std::vector<Dim> dims = {in.dims[0], Dim()};
  if (in.dims[1].known()) {
    if (in.dims[1].value % block_size != 0)
      return ctx.node().Invalid("input 0 dim 1 (", in.dims[1].value,
                                ") is not a multiple of the block size ", block_size);
    dims[1] = Dim::Known(in.dims[1].value / block_size);
  }
  for (int64_t s : image) dims.push_back(Dim::Known(s));
  ONYX_RETURN_IF_ERROR(CheckElementCount(ctx.node(), dims));
  ctx.SetOutputType(0, RankedType(in.elem, std::move(dims)));
  return Status::Ok();
}

Status Col2ImKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  if (!ctx.has_input(1) || !ctx.has_input(2))
    return node.Invalid("inputs 'image_shape' and 'block_shape' are required");
  if (x.dtype() == DType::kString || x.dtype() == DType::kBool || x.dtype() == DType::kComplex64 ||
      x.dtype() == DType::kComplex128)
    return node.NotSupported("input 0 has type ", DTypeName(x.dtype()));
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> image, IntsInput(ctx, 1));
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> block, IntsInput(ctx, 2));
  reference::Col2ImParams p;
  ONYX_RETURN_IF_ERROR(Col2ImParams(node, image, block, &p));
  if (x.rank() != 3) return node.Fail("input 0 must be 3-D, got ", ShapeToString(x.shape()));
  const size_t nd = image.size();
  int64_t block_size = 1, columns = 1;
  for (size_t d = 0; d < nd; ++d) {
    if (!CheckedMul(block_size, block[d], &block_size) || block_size == 0)
      return node.Fail("'block_shape' ", ShapeToString(block), " is out of range");
    // Dilations, blocks, images and pads are any positive int64: every step is checked.
    int64_t extent = 0, span = 0;
    if (!CheckedMul(p.dilations[d], block[d] - 1, &extent) || !CheckedAdd(extent, 1, &extent) ||
        !CheckedAdd(image[d], p.pads[d], &span) || !CheckedAdd(span, p.pads[nd + d], &span))
      return node.Fail("image_shape ", ShapeToString(image), ", block_shape ", ShapeToString(block),
                       ", dilations and pads of dim ", d, " are more than 64 bits can count");
    span -= extent;
    if (span < 0)
      return node.Fail("block dim ", d, " (extent ", extent, ") does not fit the padded image");
    if (!CheckedMul(columns, span / p.strides[d] + 1, &columns))
      return node.Fail("image_shape ", ShapeToString(image), " has too many blocks");
  }
  if (x.dim(1) % block_size != 0 || x.dim(2) != columns)
    return node.Fail("input 0 has shape ", ShapeToString(x.shape()), "; expected [N, C*",
                     block_size, ", ", columns, "]");
  Shape shape = {x.dim(0), x.dim(1) / block_size};
  for (int64_t s : image) shape.push_back(s);
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, x.dtype(), shape));
  reference::Col2Im(x, p, y);
  return Status::Ok();
}

}  // namespace

// Shape-only ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity) copy input 0 unchanged and skip
// the copy when given its buffer: in place, they cost nothing in the arena.
void RegisterTensorShape(OpRegistry& r) {
  // Opset 1-4: 'shape' attribute; 5: input; 14: allowzero. Later versions only add types.
  r.Add("", "Reshape", 1, 4, InferReshape, ReshapeKernel).inplace_input = 0;
  r.Add("", "Reshape", 5, 13, InferReshape, ReshapeKernel).inplace_input = 0;
  r.Add("", "Reshape", 14, kLatestOpset, InferReshape, ReshapeKernel).inplace_input = 0;
  // Opset 11: negative axis.
  r.Add("", "Flatten", 1, 10, InferFlatten, FlattenKernel).inplace_input = 0;
  r.Add("", "Flatten", 11, kLatestOpset, InferFlatten, FlattenKernel).inplace_input = 0;
  // Opset 13: axes move from attribute to input.
  r.Add("", "Squeeze", 1, 12, InferSqueeze, SqueezeKernel).inplace_input = 0;
  r.Add("", "Squeeze", 13, kLatestOpset, InferSqueeze, SqueezeKernel).inplace_input = 0;
  r.Add("", "Unsqueeze", 1, 12, InferUnsqueeze, UnsqueezeKernel).inplace_input = 0;
  r.Add("", "Unsqueeze", 13, kLatestOpset, InferUnsqueeze, UnsqueezeKernel).inplace_input = 0;
  r.Add("", "Transpose", 1, kLatestOpset, InferTranspose, TransposeKernel);
  // Opset 1: axis defaults to 1; 4: required; 11: negative.
  r.Add("", "Concat", 1, 3, InferConcat, ConcatKernel).layout = LayoutTrait::kConcatAxis;
  r.Add("", "Concat", 4, kLatestOpset, InferConcat, ConcatKernel).layout = LayoutTrait::kConcatAxis;
  // Opset 1: split attribute or input; 2: attribute; 13: input; 18: num_outputs.
  r.Add("", "Split", 1, 1, InferSplit, SplitKernel);
  r.Add("", "Split", 2, 12, InferSplit, SplitKernel);
  r.Add("", "Split", 13, 17, InferSplit, SplitKernel);
  r.Add("", "Split", 18, kLatestOpset, InferSplit, SplitKernel);
  // Opset 1: attributes; 10: inputs with steps.
  r.Add("", "Slice", 1, 9, InferSlice, SliceKernel);
  r.Add("", "Slice", 10, kLatestOpset, InferSlice, SliceKernel);
  // Opset 1: 'paddings'; 2: 'pads'; 11: pads/constant_value inputs; 18: axes; 19: wrap.
  r.Add("", "Pad", 1, 1, InferPad, PadKernel);
  r.Add("", "Pad", 2, 10, InferPad, PadKernel);
  r.Add("", "Pad", 11, 17, InferPad, PadKernel);
  r.Add("", "Pad", 18, kLatestOpset, InferPad, PadKernel);
  // Opset 1: tiles + axis inputs; 6: repeats.
  r.Add("", "Tile", 1, 5, InferTile, TileKernel);
  r.Add("", "Tile", 6, kLatestOpset, InferTile, TileKernel);
  r.Add("", "Expand", 8, kLatestOpset, InferExpand, ExpandKernel);
  // Opset 15: start/end.
  r.Add("", "Shape", 1, 14, InferShape, ShapeKernel);
  r.Add("", "Shape", 15, kLatestOpset, InferShape, ShapeKernel);
  r.Add("", "Size", 1, kLatestOpset, InferSize, SizeKernel);
  // Opset 14: sequences; 16: optionals.
  OpDef& identity = r.Add("", "Identity", 1, kLatestOpset, InferPassThrough, IdentityKernel);
  identity.inplace_input = 0;
  identity.layout = LayoutTrait::kUnaryElementwise;
  // Opset 9..13 add sparse_value and the value_* attributes.
  r.Add("", "Constant", 1, kLatestOpset, InferConstant, ConstantKernel);
  r.Add("", "ConstantOfShape", 9, kLatestOpset, InferConstantOfShape, ConstantOfShapeKernel);
  // Opset 27: stash_type (the reference computes in double for every float type).
  r.Add("", "Range", 11, kLatestOpset, InferRange, RangeKernel);
  r.Add("", "EyeLike", 9, kLatestOpset, InferEyeLike, EyeLikeKernel);
  r.Add("", "Trilu", 14, kLatestOpset, InferTrilu, TriluKernel);
  // Opset 11: mode (DCR/CRD).
  r.Add("", "DepthToSpace", 1, 10, InferDepthSpace<true>, DepthToSpaceKernel);
  r.Add("", "DepthToSpace", 11, kLatestOpset, InferDepthSpace<true>, DepthToSpaceKernel);
  r.Add("", "SpaceToDepth", 1, 27, InferDepthSpace<false>, SpaceToDepthKernel);
  r.Add("", "SpaceToDepth", 28, kLatestOpset, InferDepthSpace<false>, SpaceToDepthKernel);
  r.Add("", "CenterCropPad", 18, kLatestOpset, InferCenterCropPad, CenterCropPadKernel);
  r.Add("", "Col2Im", 18, kLatestOpset, InferCol2Im, Col2ImKernel);
}

}  // namespace onyx::kernels
