// Reduction family: Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax, CumSum/CumProd, TopK.
// Definitions (opset ranges, shape functions, validation) live here; the loops live in
// kernels/reference/reduction.cc and reduction_softmax.cc.
#include "kernels/reference/reduction.h"

#include <algorithm>
#include <set>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"
#include "kernels/ops/softmax_attrs.h"

namespace onyx::kernels {
namespace {

const std::vector<DType> kFloatTypes = {DType::kFloat, DType::kDouble, DType::kFloat16,
                                        DType::kBFloat16};
const std::vector<DType> kNumericTypes = {DType::kFloat,    DType::kDouble, DType::kFloat16,
                                          DType::kBFloat16, DType::kInt8,   DType::kInt16,
                                          DType::kInt32,    DType::kInt64,  DType::kUInt8,
                                          DType::kUInt16,   DType::kUInt32, DType::kUInt64};

std::string InputDesc(const NodeView& node, int i) {
  const auto& ins = node.node().inputs;
  return StrCat("input ", i, " '", i < static_cast<int>(ins.size()) ? ins[i] : "", "'");
}

Status RequireInput0(InferContext& ctx) {
  if (!ctx.has_input(0)) return ctx.node().Invalid("required input 0 is missing");
  return Status::Ok();
}

Status RequireInput0(KernelContext& ctx) {
  if (!ctx.has_input(0) || !ctx.input_value(0).is_tensor())
    return ctx.node().Invalid("required input 0 is missing or not a tensor");
  return Status::Ok();
}

Status TypeError(const NodeView& node, int input, DType t) {
  return node.NotSupported(InputDesc(node, input), " has type ", DTypeName(t),
                           ", which this operator does not support");
}

int64_t Product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < s.size(); ++i) p *= s[i];
  return p;
}

// ---- Reduce* ----
// Opsets before `axes_input_since` (13 for ReduceSum, 18 for the rest) take `axes` as an attribute
// where an empty list means every axis. From then on axes is an optional input, and an empty or
// absent one means every axis unless noop_with_empty_axes = 1 (then no axis; see ReduceKernel).
// Opset 11 allowed negative axes; onyx accepts them everywhere. ReduceMax/ReduceMin 12 add
// int8/uint8, 20 bool.
struct ReduceInfo {
  reference::ReduceOp op;
  int64_t axes_input_since;
  bool allows_bool;
};

ReduceInfo ReduceInfoOf(const std::string& op_type) {
  using Op = reference::ReduceOp;
  if (op_type == "ReduceSum") return {Op::kSum, 13, false};
  if (op_type == "ReduceMean") return {Op::kMean, 18, false};
  if (op_type == "ReduceMax") return {Op::kMax, 18, true};
  if (op_type == "ReduceMin") return {Op::kMin, 18, true};
  if (op_type == "ReduceProd") return {Op::kProd, 18, false};
  if (op_type == "ReduceL1") return {Op::kL1, 18, false};
  if (op_type == "ReduceL2") return {Op::kL2, 18, false};
  if (op_type == "ReduceLogSum") return {Op::kLogSum, 18, false};
  if (op_type == "ReduceLogSumExp") return {Op::kLogSumExp, 18, false};
  return {Op::kSumSquare, 18, false};
}

// The axes a Reduce node asks for. `known` is false when they come from a non-constant input
// (plan time only). An empty `axes` with noop = true means "no reduction".
struct ReduceAxes {
  bool known = true;
  bool noop = false;
  std::vector<int64_t> axes;
};

// Turns raw axes into a per-dim mask for `rank`, validating range; empty axes = all dims.
StatusOr<std::vector<bool>> ReduceMask(const NodeView& node, const std::vector<int64_t>& axes,
                                       int64_t rank) {
  std::vector<bool> mask(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) {
    ONYX_ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(node, a, rank, "axes entry"));
    mask[axis] = true;
  }
  return mask;
}

Status InferReduce(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInput0(ctx));
  const ReduceInfo info = ReduceInfoOf(node.op_type());
  std::vector<DType> types = kNumericTypes;
  if (info.allows_bool) types.push_back(DType::kBool);
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, types));
  const TypeInfo& x = ctx.input_type(0);
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  ReduceAxes ra;
  if (node.opset() >= info.axes_input_since) {
    ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, {DType::kInt64, DType::kInt32}));
    if (ctx.has_input(1)) ra.known = ConstantInts(ctx, 1, &ra.axes);
    ra.noop = node.attr_int("noop_with_empty_axes", 0) != 0;
  } else {
    ra.axes = node.attr_ints("axes");
  }
  TypeInfo y = TypeInfo::Tensor(x.is_tensor() ? x.elem : DType::kUndefined);
  if (!x.has_shape) {
    ctx.SetOutputType(0, y);
    return Status::Ok();
  }
  if (ra.known && ra.axes.empty() && ra.noop) {
    ctx.SetOutputType(0, x);
    return Status::Ok();
  }
  if (!ra.known) {
    // Unknown axes: with keepdims the rank survives (each dim is itself or 1).
    if (keepdims) {
      y.has_shape = true;
      for (const Dim& d : x.dims) y.dims.push_back(d.known() && d.value == 1 ? d : Dim());
    }
    ctx.SetOutputType(0, y);
    return Status::Ok();
  }
  ONYX_ASSIGN_OR_RETURN(const std::vector<bool> mask, ReduceMask(node, ra.axes, x.rank()));
  y.has_shape = true;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (!mask[d]) {
      y.dims.push_back(x.dims[d]);
    } else if (keepdims) {
      y.dims.push_back(Dim::Known(1));
    }
  }
  ctx.SetOutputType(0, y);
  return Status::Ok();
}

Status ReduceKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInput0(ctx));
  const Tensor& x = ctx.input(0);
  const ReduceInfo info = ReduceInfoOf(node.op_type());
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  std::vector<int64_t> axes;
  bool noop = false;
  if (node.opset() >= info.axes_input_since) {
    if (ctx.has_input(1)) {
      const Tensor& a = ctx.input(1);
      if (a.dtype() != DType::kInt64 && a.dtype() != DType::kInt32)
        return node.Invalid(InputDesc(node, 1), " must be int64, got ", DTypeName(a.dtype()));
      axes = TensorToInts(a);
    }
    noop = node.attr_int("noop_with_empty_axes", 0) != 0;
  } else {
    axes = node.attr_ints("axes");
  }
  // An empty axes list with noop_with_empty_axes reduces over no axis: plain reductions are the
  // identity, composite ones still apply their element steps (ReduceL1 gives |x|, ReduceLogSum
  // log x, ReduceSumSquare x^2), as onnx 1.23's spec states and ONNX Runtime 1.32 computes.
  std::vector<bool> mask(static_cast<size_t>(x.rank()), false);
  if (!(axes.empty() && noop)) {
    ONYX_ASSIGN_OR_RETURN(mask, ReduceMask(node, axes, x.rank()));
  }
  Shape out_shape;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (!mask[d]) {
      out_shape.push_back(x.dim(d));
    } else if (keepdims) {
      out_shape.push_back(1);
    }
  }
  if (x.dtype() == DType::kBool && !info.allows_bool) return TypeError(node, 0, x.dtype());
  const reference::ReduceGeometry g = reference::MakeReduceGeometry(x.shape(), mask);
  Tensor y = ctx.Output(0, x.dtype(), out_shape);
  const bool ok = VisitNumericOrBool(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    reference::Reduce(info.op, x.data<T>(), y.data<T>(), g, ctx.intra_op_threads());
  });
  return ok ? Status::Ok() : TypeError(node, 0, x.dtype());
}

// ---- ArgMax / ArgMin: 1 (axis >= 0), 11 (negative axis), 12 (select_last_index) ----
Status InferArg(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInput0(ctx));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kNumericTypes));
  const TypeInfo& x = ctx.input_type(0);
  TypeInfo y = TypeInfo::Tensor(DType::kInt64);
  if (x.has_shape) {
    ONYX_ASSIGN_OR_RETURN(const int64_t axis,
                          NormalizeAxis(node, node.attr_int("axis", 0), x.rank()));
    const bool keepdims = node.attr_int("keepdims", 1) != 0;
    y.has_shape = true;
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (d != axis) {
        y.dims.push_back(x.dims[d]);
      } else if (keepdims) {
        y.dims.push_back(Dim::Known(1));
      }
    }
  }
  ctx.SetOutputType(0, y);
  return Status::Ok();
}

Status ArgKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInput0(ctx));
  const Tensor& x = ctx.input(0);
  ONYX_ASSIGN_OR_RETURN(const int64_t axis,
                        NormalizeAxis(node, node.attr_int("axis", 0), x.rank()));
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  const bool select_last = node.opset() >= 12 && node.attr_int("select_last_index", 0) != 0;
  const bool is_max = node.op_type() == "ArgMax";
  Shape out_shape;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d != axis) {
      out_shape.push_back(x.dim(d));
    } else if (keepdims) {
      out_shape.push_back(1);
    }
  }
  const int64_t outer = Product(x.shape(), 0, axis);
  const int64_t n = x.dim(axis);
  const int64_t inner = Product(x.shape(), axis + 1, x.shape().size());
  if (n == 0 && outer * inner > 0)
    return node.Invalid(InputDesc(node, 0), " has shape ", ShapeToString(x.shape()),
                        ": cannot take the index of an extremum over an empty axis ", axis);
  Tensor y = ctx.Output(0, DType::kInt64, out_shape);
  if (outer * inner == 0) return Status::Ok();
  const bool ok = VisitNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    reference::ArgReduce(x.data<T>(), y.data<int64_t>(), outer, n, inner, is_max, select_last);
  });
  return ok ? Status::Ok() : TypeError(node, 0, x.dtype());
}

// ---- Softmax / LogSoftmax / Hardmax: the axis rule is ParseSoftmax's (softmax_attrs.h) ----
Status InferSoftmax(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInput0(ctx));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kFloatTypes));
  const TypeInfo& x = ctx.input_type(0);
  if (x.has_shape) ONYX_RETURN_IF_ERROR(ParseSoftmax(ctx.node(), x.rank()).status());
  return InferSameAsInput0(ctx);
}

Status SoftmaxRef(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInput0(ctx));
  const Tensor& x = ctx.input(0);
  const std::string& op = node.op_type();
  const reference::SoftmaxKind kind = op == "Softmax"      ? reference::SoftmaxKind::kSoftmax
                                      : op == "LogSoftmax" ? reference::SoftmaxKind::kLogSoftmax
                                                           : reference::SoftmaxKind::kHardmax;
  ONYX_ASSIGN_OR_RETURN(const SoftmaxAttrs attrs, ParseSoftmax(node, x.rank()));
  const SoftmaxView v = attrs.ViewOf(x.shape());
  Tensor y = ctx.Output(0, x.dtype(), x.shape());
  if (x.numel() == 0) return Status::Ok();
  const bool ok = VisitFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    reference::SoftmaxAxis(kind, x.data<T>(), y.data<T>(), v.outer, v.n, v.inner,
                           ctx.intra_op_threads());
  });
  return ok ? Status::Ok() : TypeError(node, 0, x.dtype());
}

// ---- CumSum (11; 14 widens the types) and CumProd (26) ----
Status InferCumulative(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInput0(ctx));
  if (!ctx.has_input(1)) return ctx.node().Invalid("required input 1 'axis' is missing");
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kNumericTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, {DType::kInt32, DType::kInt64}));
  std::vector<int64_t> axis;
  const TypeInfo& x = ctx.input_type(0);
  if (x.has_shape && ConstantInts(ctx, 1, &axis)) {
    if (axis.size() != 1)
      return ctx.node().Invalid("input 1 'axis' must hold one value, got ", axis.size());
    ONYX_RETURN_IF_ERROR(NormalizeAxis(ctx.node(), axis[0], x.rank(), "input 1 'axis'").status());
  }
  return InferSameAsInput0(ctx);
}

Status CumulativeKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInput0(ctx));
  if (!ctx.has_input(1)) return node.Invalid("required input 1 'axis' is missing");
  const Tensor& x = ctx.input(0);
  const Tensor& axis_t = ctx.input(1);
  if (axis_t.numel() != 1 || axis_t.rank() > 1 ||
      (axis_t.dtype() != DType::kInt32 && axis_t.dtype() != DType::kInt64))
    return node.Invalid(InputDesc(node, 1), " must be one int32/int64 value, got ",
                        DTypeName(axis_t.dtype()), ShapeToString(axis_t.shape()));
  ONYX_ASSIGN_OR_RETURN(const int64_t axis,
                        NormalizeAxis(node, TensorToInts(axis_t)[0], x.rank(), "input 1 'axis'"));
  const bool exclusive = node.attr_int("exclusive", 0) != 0;
  const bool reverse = node.attr_int("reverse", 0) != 0;
  const bool product = node.op_type() == "CumProd";
  const int64_t outer = Product(x.shape(), 0, axis);
  const int64_t n = x.dim(axis);
  const int64_t inner = Product(x.shape(), axis + 1, x.shape().size());
  Tensor y = ctx.Output(0, x.dtype(), x.shape());
  const bool ok = VisitNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    reference::Cumulative(x.data<T>(), y.data<T>(), outer, n, inner, exclusive, reverse, product);
  });
  return ok ? Status::Ok() : TypeError(node, 0, x.dtype());
}

// ---- TopK: 1 (k attribute), 10 (k input), 11 (largest, sorted, negative axis) ----
// Results are always sorted (sorted = 0 leaves the order unspecified) with ties broken by the
// smaller index, like the ONNX reference.
Status InferTopK(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInput0(ctx));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kNumericTypes));
  const TypeInfo& x = ctx.input_type(0);
  bool k_known = false;
  int64_t k = 0;
  if (node.opset() >= 10) {
    if (!ctx.has_input(1)) return node.Invalid("required input 1 'K' is missing");
    ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, {DType::kInt64}));
    std::vector<int64_t> kv;
    if (ConstantInts(ctx, 1, &kv)) {
      if (kv.size() != 1) return node.Invalid("input 1 'K' must hold one value, got ", kv.size());
      k = kv[0];
      k_known = true;
    }
  } else {
    ONYX_ASSIGN_OR_RETURN(k, node.RequiredInt("k"));
    k_known = true;
  }
  if (k_known && k < 0) return node.Invalid("k must be >= 0, got ", k);
  TypeInfo values = TypeInfo::Tensor(x.is_tensor() ? x.elem : DType::kUndefined);
  TypeInfo indices = TypeInfo::Tensor(DType::kInt64);
  if (x.has_shape) {
    ONYX_ASSIGN_OR_RETURN(const int64_t axis,
                          NormalizeAxis(node, node.attr_int("axis", -1), x.rank()));
    if (k_known && x.dims[axis].known() && k > x.dims[axis].value)
      return node.Invalid("k = ", k, " exceeds dim ", axis, " of input 0 ", x.ToString());
    values.has_shape = true;
    values.dims = x.dims;
    values.dims[axis] = k_known ? Dim::Known(k) : Dim();
    indices.has_shape = true;
    indices.dims = values.dims;
  }
  ctx.SetOutputType(0, values);
  if (ctx.num_outputs() > 1) ctx.SetOutputType(1, indices);
  return Status::Ok();
}

Status TopKKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInput0(ctx));
  const Tensor& x = ctx.input(0);
  int64_t k = 0;
  if (node.opset() >= 10) {
    if (!ctx.has_input(1)) return node.Invalid("required input 1 'K' is missing");
    const Tensor& kt = ctx.input(1);
    if (kt.numel() != 1 || (kt.dtype() != DType::kInt64 && kt.dtype() != DType::kInt32))
      return node.Invalid(InputDesc(node, 1), " must hold one int64 value, got ",
                          DTypeName(kt.dtype()), ShapeToString(kt.shape()));
    k = TensorToInts(kt)[0];
  } else {
    ONYX_ASSIGN_OR_RETURN(k, node.RequiredInt("k"));
  }
  ONYX_ASSIGN_OR_RETURN(const int64_t axis,
                        NormalizeAxis(node, node.attr_int("axis", -1), x.rank()));
  const int64_t n = x.dim(axis);
  if (k < 0 || k > n)
    return node.Invalid("k = ", k, " is out of range for dim ", axis, " = ", n, " of input 0 ",
                        ShapeToString(x.shape()));
  const bool largest = node.opset() < 11 || node.attr_int("largest", 1) != 0;
  Shape out_shape = x.shape();
  out_shape[axis] = k;
  const int64_t outer = Product(x.shape(), 0, axis);
  const int64_t inner = Product(x.shape(), axis + 1, x.shape().size());
  Tensor values = ctx.Output(0, x.dtype(), out_shape);
  // Indices are needed by the loop even when the node does not ask for them.
  Tensor indices = ctx.num_outputs() > 1 && ctx.has_output(1)
                       ? ctx.Output(1, DType::kInt64, out_shape)
                       : Tensor::Allocate(DType::kInt64, out_shape);
  if (k == 0 || outer * inner == 0) return Status::Ok();
  const bool ok = VisitNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    reference::TopK(x.data<T>(), values.data<T>(), indices.data<int64_t>(), outer, n, inner, k,
                    largest);
  });
  return ok ? Status::Ok() : TypeError(node, 0, x.dtype());
}

}  // namespace

void RegisterReduction(OpRegistry& r) {
  for (const char* op :
       {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    const int64_t axes_input = ReduceInfoOf(op).axes_input_since;
    r.Add("", op, 1, 10, InferReduce, ReduceKernel, "reduce_ref_axes_attr");
    r.Add("", op, 11, axes_input - 1, InferReduce, ReduceKernel, "reduce_ref_axes_attr");
    r.Add("", op, axes_input, kLatestOpset, InferReduce, ReduceKernel, "reduce_ref_axes_input");
  }
  for (const char* op : {"ArgMax", "ArgMin"}) {
    r.Add("", op, 1, 11, InferArg, ArgKernel, "arg_ref");
    r.Add("", op, 12, kLatestOpset, InferArg, ArgKernel, "arg_ref_select_last");
  }
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    r.Add("", op, 1, 12, InferSoftmax, SoftmaxRef, "softmax_ref_coerce_2d");
    r.Add("", op, 13, kLatestOpset, InferSoftmax, SoftmaxRef, "softmax_ref");
  }
  r.Add("", "CumSum", 11, kLatestOpset, InferCumulative, CumulativeKernel, "cumsum_ref");
  r.Add("", "CumProd", 26, kLatestOpset, InferCumulative, CumulativeKernel, "cumprod_ref");
  r.Add("", "TopK", 1, 9, InferTopK, TopKKernel, "topk_ref_k_attr");
  r.Add("", "TopK", 10, 10, InferTopK, TopKKernel, "topk_ref_k_input");
  r.Add("", "TopK", 11, kLatestOpset, InferTopK, TopKKernel, "topk_ref");
}

}  // namespace onyx::kernels
