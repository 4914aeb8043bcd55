// ONNX Runtime's com.microsoft quantized operators (opset 1 of that domain), as
// onnxruntime.quantization writes them for QOperator models: QLinearAdd, QLinearMul,
// QLinearConcat, QLinearAveragePool, QLinearGlobalAveragePool, QLinearSigmoid, QLinearLeakyRelu,
// QLinearSoftmax, QGemm, MatMulIntegerToFloat and DynamicQuantizeMatMul. Shape and type inference,
// the checks that refuse what the kernels do not implement (at session creation), and
// registration; the math lives in kernels/reference/quantization_ms.cc.
#include "kernels/reference/quantization_ms.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"
#include "kernels/ops/softmax_attrs.h"
#include "kernels/reference/conv_pool.h"
#include "kernels/reference/matmul.h"
#include "kernels/reference/quantization.h"

namespace onyx::kernels {
namespace {

using reference::QuantParams;

constexpr const char* kMsDomain = "com.microsoft";
const std::vector<DType> k8BitTypes = {DType::kUInt8, DType::kInt8};
const std::vector<DType> kFloatOnly = {DType::kFloat};

// ---- Plan-time checks ----

const std::string& Name(InferContext& ctx, int i) {
  return InputName(ctx.node(), i);
}

// Input i, named `what` in the contrib schema, must be given.
Status RequireInput(InferContext& ctx, int i, const char* what) {
  if (ctx.has_input(i)) return Status::Ok();
  return ctx.node().Invalid("input ", i, " (", what, ") is required");
}

// Element count of input i when its shape is static, else -1.
int64_t StaticCount(InferContext& ctx, int i) {
  const TypeInfo& t = ctx.input_type(i);
  if (!ctx.has_input(i) || !t.is_tensor() || !t.shape_is_static()) return -1;
  return ShapeElementCount(t.static_shape());
}

// A scale or zero point quantizing a whole tensor must hold one value; per-channel (or per-row)
// parameters are not implemented for it.
Status ExpectPerTensor(InferContext& ctx, int i) {
  const int64_t count = StaticCount(ctx, i);
  if (count < 0 || count == 1) return Status::Ok();
  return ctx.node().NotSupported("input ", i, " '", Name(ctx, i), "' has type ",
                                 ctx.input_type(i).ToString(),
                                 "; only one value (per-tensor quantization) is supported");
}

// Input i, when typed, has the element type of input `of` (a zero point and its tensor).
Status ExpectSameType(InferContext& ctx, int i, int of) {
  const TypeInfo& t = ctx.input_type(i);
  const TypeInfo& o = ctx.input_type(of);
  if (!ctx.has_input(i) || !ctx.has_input(of) || !t.is_tensor() || !o.is_tensor() ||
      t.elem == DType::kUndefined || o.elem == DType::kUndefined || t.elem == o.elem) {
    return Status::Ok();
  }
  return ctx.node().Invalid("input ", i, " '", Name(ctx, i), "' has type ", DTypeName(t.elem),
                            "; expected ", DTypeName(o.elem), " like input ", of, " '",
                            Name(ctx, of), "'");
}

// A per-tensor quantized operand: tensor x (uint8/int8), its float scale and its optional zero
// point. `x` < 0: no tensor input (QLinearConcat's Y; the zero point then gives the type).
Status CheckQuantized(InferContext& ctx, int x, const char* x_what, int scale,
                      const char* scale_what, int zero) {
  if (x >= 0) {
    ONYX_RETURN_IF_ERROR(RequireInput(ctx, x, x_what));
    ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, x, k8BitTypes));
    ONYX_RETURN_IF_ERROR(ExpectSameType(ctx, zero, x));
  }
  ONYX_RETURN_IF_ERROR(RequireInput(ctx, scale, scale_what));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, scale, kFloatOnly));
  ONYX_RETURN_IF_ERROR(ExpectPerTensor(ctx, scale));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, zero, k8BitTypes));
  return ExpectPerTensor(ctx, zero);
}

// B's scale or zero point: one value, or one per column of B (n, -1 when unknown).
Status ExpectPerColumn(InferContext& ctx, int i, int64_t n) {
  const TypeInfo& t = ctx.input_type(i);
  if (!ctx.has_input(i) || !t.is_tensor() || !t.shape_is_static()) return Status::Ok();
  const Shape s = t.static_shape();
  if (ShapeElementCount(s) == 1 || (s.size() == 1 && (n < 0 || s[0] == n))) return Status::Ok();
  return ctx.node().NotSupported("input ", i, " '", Name(ctx, i), "' has type ", t.ToString(),
                                 "; expected one value or one per column of B",
                                 n >= 0 ? StrCat(" ([", n, "])") : std::string());
}

// A 0/1 flag attribute; any other value is refused by name.
StatusOr<bool> FlagAttr(const NodeView& node, const char* name) {
  const int64_t v = node.attr_int(name, 0);
  if (v != 0 && v != 1) {
    return node.NotSupported("attribute '", name, "' is ", v, "; only 0 and 1 are implemented");
  }
  return v == 1;
}

TypeInfo WithElem(TypeInfo t, DType elem) {
  t.kind = TypeInfo::Kind::kTensor;
  t.elem = elem;
  return t;
}

// Shows inputs 0 (A) and 1 (B) of a node, retyped as float, to MatMul's shape function (numpy
// matmul broadcasting; its messages name the node's inputs 0 and 1), and keeps the output type it
// infers.
class MatMulShapeContext : public InferContext {
 public:
  explicit MatMulShapeContext(InferContext& outer) : outer_(outer) {
    for (int i = 0; i < 2; ++i) retyped_[i] = WithElem(outer.input_type(i), DType::kFloat);
  }
  const NodeView& node() const override { return outer_.node(); }
  int num_inputs() const override { return 2; }
  bool has_input(int i) const override { return i >= 0 && i < 2 && outer_.has_input(i); }
  const TypeInfo& input_type(int i) const override {
    static const TypeInfo kUnknown;
    return i >= 0 && i < 2 ? retyped_[i] : kUnknown;
  }
  const Tensor* input_constant(int) const override { return nullptr; }
  int num_outputs() const override { return 1; }
  bool has_output(int i) const override { return i == 0; }
  void SetOutputType(int i, TypeInfo type) override {
    if (i == 0) output_ = std::move(type);
  }
  StatusOr<std::vector<TypeInfo>> InferSubgraph(const std::string& attr,
                                                const std::vector<TypeInfo>& inputs) override {
    return outer_.InferSubgraph(attr, inputs);
  }
  const TypeInfo& output() const { return output_; }

 private:
  InferContext& outer_;
  TypeInfo retyped_[2];
  TypeInfo output_;
};

// Output 0: float, the numpy matmul of inputs 0 and 1.
Status InferMatMulToFloat(InferContext& ctx) {
  const OpDef* matmul = OpRegistry::Global().Find("", "MatMul", 13);
  if (!matmul || !matmul->infer) return ctx.node().NotSupported("MatMul is not registered");
  MatMulShapeContext inner(ctx);
  ONYX_RETURN_IF_ERROR(matmul->infer(inner));
  ctx.SetOutputType(0, WithElem(inner.output(), DType::kFloat));
  return Status::Ok();
}

// The number of columns of B (input 1: its last dim; 1 for a 1-D B), or -1 when unknown.
int64_t Columns(InferContext& ctx) {
  const TypeInfo& t = ctx.input_type(1);
  if (!t.is_tensor() || !t.has_shape || t.dims.empty()) return -1;
  if (t.dims.size() == 1) return 1;
  return t.dims.back().known() ? t.dims.back().value : -1;
}

// ---- Run-time checks (every kernel first checks that its inputs are tensors) ----

int32_t ZeroPoint(QuantParams q) {
  return q.zero_point ? static_cast<int32_t>(ElementAsDouble(*q.zero_point, 0)) : 0;
}
float Scale(QuantParams q) {
  return static_cast<float>(ElementAsDouble(*q.scale, 0));
}

// Input i as a uint8/int8 tensor.
StatusOr<const Tensor*> QuantizedInput(KernelContext& ctx, int i, const char* what) {
  const NodeView& node = ctx.node();
  if (!ctx.has_input(i)) return node.Invalid("input ", i, " (", what, ") is required");
  const Tensor& t = ctx.input(i);
  if (!Is8BitInt(t.dtype())) {
    return node.NotSupported(DescribeInput(node, i), " has type ", DTypeName(t.dtype()),
                             "; expected uint8 or int8");
  }
  return &t;
}

// The per-tensor parameters at inputs `scale` and `zero` of a quantized tensor of type t.
StatusOr<QuantParams> ReadQuant(KernelContext& ctx, int scale, const char* scale_what, int zero,
                                DType t) {
  const NodeView& node = ctx.node();
  if (!ctx.has_input(scale))
    return node.Invalid("input ", scale, " (", scale_what, ") is required");
  QuantParams q;
  for (int i : {scale, zero}) {
    if (!ctx.has_input(i)) continue;
    const Tensor& v = ctx.input(i);
    const DType want = i == scale ? DType::kFloat : t;
    if (v.dtype() != want) {
      return node.Invalid(DescribeInput(node, i), " has type ", DTypeName(v.dtype()), "; expected ",
                          DTypeName(want));
    }
    if (v.numel() != 1) {
      return node.NotSupported(DescribeInput(node, i), " has shape ", ShapeToString(v.shape()),
                               "; only one value (per-tensor quantization) is supported");
    }
    (i == scale ? q.scale : q.zero_point) = &v;
  }
  return q;
}

// B's scale (float) or zero point (type t): one value, or one per column of B (n).
StatusOr<std::vector<double>> ReadPerColumn(KernelContext& ctx, int i, DType t, int64_t n,
                                            double absent) {
  const NodeView& node = ctx.node();
  if (!ctx.has_input(i)) return std::vector<double>{absent};
  const Tensor& v = ctx.input(i);
  if (v.dtype() != t) {
    return node.Invalid(DescribeInput(node, i), " has type ", DTypeName(v.dtype()), "; expected ",
                        DTypeName(t));
  }
  if (v.numel() != 1 && !(v.rank() == 1 && v.dim(0) == n)) {
    return node.NotSupported(DescribeInput(node, i), " has shape ", ShapeToString(v.shape()),
                             "; expected one value or one per column of B ([", n, "])");
  }
  return TensorToDoubles(v);
}

std::vector<float> ToFloats(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}
std::vector<int32_t> ToInts(const std::vector<double>& v) {
  return std::vector<int32_t>(v.begin(), v.end());
}

// The optional float bias of the matmuls: n values.
StatusOr<const float*> ReadBias(KernelContext& ctx, int i, int64_t n) {
  const NodeView& node = ctx.node();
  if (!ctx.has_input(i)) return static_cast<const float*>(nullptr);
  const Tensor& bias = ctx.input(i);
  if (bias.dtype() != DType::kFloat || bias.rank() != 1 || bias.dim(0) != n) {
    return node.Invalid(DescribeInput(node, i), " is ", DTypeName(bias.dtype()),
                        ShapeToString(bias.shape()), "; expected float [", n,
                        "] (one per column of B)");
  }
  return bias.data<float>();
}

// ---- QLinearAdd, QLinearMul: A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp ----

Status InferQLinearBinary(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckQuantized(ctx, 0, "A", 1, "A_scale", 2));
  ONYX_RETURN_IF_ERROR(CheckQuantized(ctx, 3, "B", 4, "B_scale", 5));
  ONYX_RETURN_IF_ERROR(ExpectSameType(ctx, 3, 0));
  ONYX_RETURN_IF_ERROR(CheckQuantized(ctx, -1, "", 6, "C_scale", 7));
  ONYX_RETURN_IF_ERROR(ExpectSameType(ctx, 7, 0));
  return InferBroadcast(ctx, {0, 3}, ctx.input_type(0).elem);
}

Status RunQLinearBinary(KernelContext& ctx, reference::QLinearBinaryOp op) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  ONYX_ASSIGN_OR_RETURN(const Tensor* a, QuantizedInput(ctx, 0, "A"));
  ONYX_ASSIGN_OR_RETURN(const Tensor* b, QuantizedInput(ctx, 3, "B"));
  const DType t = a->dtype();
  if (b->dtype() != t) {
    return node.Invalid(DescribeInput(node, 3), " has type ", DTypeName(b->dtype()), "; expected ",
                        DTypeName(t), " like input 0");
  }
  ONYX_ASSIGN_OR_RETURN(QuantParams qa, ReadQuant(ctx, 1, "A_scale", 2, t));
  ONYX_ASSIGN_OR_RETURN(QuantParams qb, ReadQuant(ctx, 4, "B_scale", 5, t));
  ONYX_ASSIGN_OR_RETURN(QuantParams qc, ReadQuant(ctx, 6, "C_scale", 7, t));
  auto shape = BroadcastShapes({a->shape(), b->shape()});
  if (!shape.ok()) return node.Invalid(shape.status().message());
  ONYX_ASSIGN_OR_RETURN(Tensor c, NewOutput(ctx, 0, t, shape.value()));
  reference::QLinearBinary(op, *a, qa, *b, qb, qc, c);
  return Status::Ok();
}

Status QLinearAddKernel(KernelContext& ctx) {
  return RunQLinearBinary(ctx, reference::QLinearBinaryOp::kAdd);
}
Status QLinearMulKernel(KernelContext& ctx) {
  return RunQLinearBinary(ctx, reference::QLinearBinaryOp::kMul);
}

// ---- QLinearSigmoid, QLinearLeakyRelu: X, X_scale, X_zp, Y_scale, Y_zp ----

Status InferQLinearUnary(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckQuantized(ctx, 0, "X", 1, "X_scale", 2));
  ONYX_RETURN_IF_ERROR(CheckQuantized(ctx, -1, "", 3, "Y_scale", 4));
  ONYX_RETURN_IF_ERROR(ExpectSameType(ctx, 4, 0));
  return InferSameAsInput0(ctx);
}

// y = table[x], the table holding Quantize(f(Dequantize(x))) for every 8-bit value.
Status RunQLinearLookup(KernelContext& ctx, const std::function<float(float)>& f) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  ONYX_ASSIGN_OR_RETURN(const Tensor* x, QuantizedInput(ctx, 0, "X"));
  ONYX_ASSIGN_OR_RETURN(QuantParams qx, ReadQuant(ctx, 1, "X_scale", 2, x->dtype()));
  ONYX_ASSIGN_OR_RETURN(QuantParams qy, ReadQuant(ctx, 3, "Y_scale", 4, x->dtype()));
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, x->dtype(), x->shape()));
  reference::ApplyLookupTable(*x, reference::BuildLookupTable(x->dtype(), qx, qy, f), y);
  return Status::Ok();
}

Status QLinearSigmoidKernel(KernelContext& ctx) {
  // The exact logistic rounded to float (ONNX Runtime's table uses an approximation of it).
  return RunQLinearLookup(ctx, [](float v) {
    return static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(v))));
  });
}

Status QLinearLeakyReluKernel(KernelContext& ctx) {
  const float alpha = ctx.node().attr_float("alpha", 0.01f);
  return RunQLinearLookup(ctx, [alpha](float v) { return v >= 0.0f ? v : alpha * v; });
}

// ---- QLinearConcat: Y_scale, Y_zp, then (X, X_scale, X_zp) per input; attribute axis ----

constexpr int kConcatFirst = 2;  // index of the first input tensor

StatusOr<int64_t> ConcatInputCount(const NodeView& node, int num_inputs) {
  if (num_inputs < kConcatFirst + 3 || (num_inputs - kConcatFirst) % 3 != 0) {
    return node.Invalid("has ", num_inputs,
                        " inputs; expected Y_scale, Y_zero_point and then one (tensor, scale, "
                        "zero point) triple per input");
  }
  return (num_inputs - kConcatFirst) / 3;
}

Status InferQLinearConcat(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(const int64_t count, ConcatInputCount(node, ctx.num_inputs()));
  ONYX_ASSIGN_OR_RETURN(const int64_t axis_attr, node.RequiredInt("axis"));
  // Y's type is its zero point's, which the schema requires.
  ONYX_RETURN_IF_ERROR(RequireInput(ctx, 1, "Y_zero_point"));
  ONYX_RETURN_IF_ERROR(CheckQuantized(ctx, -1, "", 0, "Y_scale", 1));
  // Output dims: the first shaped input's, checked against every other shaped one, with the
  // axis the sum of the inputs' (unknown unless every input's is known).
  TypeInfo out = TypeInfo::Tensor(ctx.input_type(1).elem);
  int first = -1;
  for (int64_t i = 0; i < count; ++i) {
    const int x = kConcatFirst + 3 * static_cast<int>(i);
    ONYX_RETURN_IF_ERROR(CheckQuantized(ctx, x, "X", x + 1, "X_scale", x + 2));
    ONYX_RETURN_IF_ERROR(ExpectSameType(ctx, x, 1));
    if (first < 0 && ctx.input_type(x).has_shape) first = x;
  }
  if (first < 0) {
    ctx.SetOutputType(0, out);
    return Status::Ok();
  }
  out.has_shape = true;
  out.dims = ctx.input_type(first).dims;
  const int64_t rank = static_cast<int64_t>(out.dims.size());
  ONYX_ASSIGN_OR_RETURN(const int64_t axis,
                        NormalizeAxis(node, axis_attr, rank, "attribute 'axis'"));
  int64_t total = 0;
  bool total_known = true;
  for (int64_t i = 0; i < count; ++i) {
    const int x = kConcatFirst + 3 * static_cast<int>(i);
    const TypeInfo& t = ctx.input_type(x);
    if (!t.has_shape) {
      total_known = false;
      continue;
    }
    bool ok = static_cast<int64_t>(t.dims.size()) == rank;
    for (int64_t d = 0; ok && d < rank; ++d) {
      ok = d == axis || !t.dims[d].known() || !out.dims[d].known() ||
           t.dims[d].value == out.dims[d].value;
    }
    if (!ok) {
      return node.Invalid("input ", x, " '", Name(ctx, x), "' has type ", t.ToString(),
                          "; expected the dims of input ", first, " ",
                          ctx.input_type(first).ToString(), " except at axis ", axis);
    }
    if (t.dims[axis].known()) {
      total += t.dims[axis].value;
    } else {
      total_known = false;
    }
  }
  out.dims[axis] = total_known ? Dim::Known(total) : Dim();
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

Status QLinearConcatKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  ONYX_ASSIGN_OR_RETURN(const int64_t count, ConcatInputCount(node, ctx.num_inputs()));
  ONYX_ASSIGN_OR_RETURN(const Tensor* y_zero, QuantizedInput(ctx, 1, "Y_zero_point"));
  const DType t = y_zero->dtype();
  ONYX_ASSIGN_OR_RETURN(QuantParams qy, ReadQuant(ctx, 0, "Y_scale", 1, t));
  std::vector<const Tensor*> xs;
  std::vector<QuantParams> qx;
  for (int64_t i = 0; i < count; ++i) {
    const int x = kConcatFirst + 3 * static_cast<int>(i);
    ONYX_ASSIGN_OR_RETURN(const Tensor* xt, QuantizedInput(ctx, x, "X"));
    if (xt->dtype() != t) {
      return node.Invalid(DescribeInput(node, x), " has type ", DTypeName(xt->dtype()),
                          "; expected ", DTypeName(t), " like input 1 (Y_zero_point)");
    }
    ONYX_ASSIGN_OR_RETURN(QuantParams q, ReadQuant(ctx, x + 1, "X_scale", x + 2, t));
    xs.push_back(xt);
    qx.push_back(q);
  }
  const int64_t rank = xs[0]->rank();
  ONYX_ASSIGN_OR_RETURN(const int64_t axis_attr, node.RequiredInt("axis"));
  ONYX_ASSIGN_OR_RETURN(const int64_t axis,
                        NormalizeAxis(node, axis_attr, rank, "attribute 'axis'"));
  Shape out = xs[0]->shape();
  out[axis] = 0;
  for (int64_t i = 0; i < count; ++i) {
    const Shape& s = xs[i]->shape();
    bool ok = static_cast<int64_t>(s.size()) == rank;
    for (int64_t d = 0; ok && d < rank; ++d) ok = d == axis || s[d] == out[d];
    if (!ok) {
      return node.Invalid(DescribeInput(node, kConcatFirst + 3 * static_cast<int>(i)),
                          " has shape ", ShapeToString(s), "; expected the shape of input ",
                          kConcatFirst, " ", ShapeToString(xs[0]->shape()), " except at axis ",
                          axis);
    }
    out[axis] += s[axis];
  }
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, t, out));
  reference::QLinearConcat(xs, qx, qy, axis, y);
  return Status::Ok();
}

// ---- QLinearAveragePool, QLinearGlobalAveragePool: X, x_scale, x_zp, y_scale, y_zp ----

// The attribute values the quantized pools implement: channels_last 0/1, and no dilations (the
// contrib schema has none; ONNX Runtime ignores them).
StatusOr<bool> ParseChannelsLast(const NodeView& node) {
  if (node.has_attr("dilations")) {
    const std::vector<int64_t> d = node.attr_ints("dilations");
    if (std::any_of(d.begin(), d.end(), [](int64_t v) { return v != 1; })) {
      return node.NotSupported("attribute 'dilations' is ", ShapeToString(d), "; ", node.op_type(),
                               " has no dilations (only all ones are accepted)");
    }
  }
  return FlagAttr(node, "channels_last");
}

// [N, C, spatial...] dims of an X stored channels-last, or back.
std::vector<Dim> MoveChannelDim(std::vector<Dim> d, bool to_channels_last) {
  if (to_channels_last) {
    const Dim c = d[1];
    d.erase(d.begin() + 1);
    d.push_back(c);
  } else {
    const Dim c = d.back();
    d.pop_back();
    d.insert(d.begin() + 1, c);
  }
  return d;
}

Status CheckPoolOperands(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckQuantized(ctx, 0, "X", 1, "x_scale", 2));
  ONYX_RETURN_IF_ERROR(CheckQuantized(ctx, -1, "", 3, "y_scale", 4));
  ONYX_RETURN_IF_ERROR(ExpectSameType(ctx, 4, 0));
  const TypeInfo& x = ctx.input_type(0);
  if (x.has_shape && x.dims.size() < 3) {
    return ctx.node().Invalid("input 0 '", Name(ctx, 0), "' has type ", x.ToString(),
                              "; expected [N, C, spatial...] or [N, spatial..., C] (rank >= 3)");
  }
  return Status::Ok();
}

Status InferQLinearAveragePool(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(const bool channels_last, ParseChannelsLast(node));
  ONYX_RETURN_IF_ERROR(node.RequiredInts("kernel_shape").status());
  ONYX_RETURN_IF_ERROR(CheckPoolOperands(ctx));
  const TypeInfo& x = ctx.input_type(0);
  TypeInfo out = TypeInfo::Tensor(x.elem);
  if (x.has_shape) {
    std::vector<Dim> dims = channels_last ? MoveChannelDim(x.dims, false) : x.dims;
    std::vector<int64_t> in;
    for (size_t d = 2; d < dims.size(); ++d)
      if (dims[d].known()) in.push_back(dims[d].value);
    const bool spatial_known = in.size() + 2 == dims.size();
    if (spatial_known) {
      ONYX_ASSIGN_OR_RETURN(WindowGeometry g,
                            ResolveWindow(node, in, node.attr_ints("kernel_shape"), true));
      for (size_t d = 0; d < g.out.size(); ++d) dims[d + 2] = Dim::Known(g.out[d]);
    } else {
      for (size_t d = 2; d < dims.size(); ++d) dims[d] = Dim();
    }
    out.has_shape = true;
    out.dims = channels_last ? MoveChannelDim(dims, true) : dims;
  }
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

// A quantized pool's operands (QLinearAveragePool, QLinearGlobalAveragePool): X of rank >= 3,
// its and Y's scale and zero point, and the layout.
struct QuantizedPool {
  const Tensor* x = nullptr;
  QuantParams qx, qy;
  bool channels_last = false;
};

StatusOr<QuantizedPool> ReadQuantizedPool(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  QuantizedPool p;
  ONYX_ASSIGN_OR_RETURN(p.channels_last, ParseChannelsLast(node));
  ONYX_ASSIGN_OR_RETURN(p.x, QuantizedInput(ctx, 0, "X"));
  ONYX_ASSIGN_OR_RETURN(p.qx, ReadQuant(ctx, 1, "x_scale", 2, p.x->dtype()));
  ONYX_ASSIGN_OR_RETURN(p.qy, ReadQuant(ctx, 3, "y_scale", 4, p.x->dtype()));
  if (p.x->rank() < 3) {
    return node.Invalid(DescribeInput(node, 0), " has shape ", ShapeToString(p.x->shape()),
                        "; expected [N, C, spatial...] or [N, spatial..., C] (rank >= 3)");
  }
  return p;
}

// Dequantize → onyx's float AveragePool → Quantize, which is how the contrib schema defines it.
Status QLinearAveragePoolKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(const QuantizedPool pool, ReadQuantizedPool(ctx));
  const Tensor* x = pool.x;
  const bool channels_last = pool.channels_last;
  const QuantParams qx = pool.qx, qy = pool.qy;
  // Y's shape first, so its size is checked before anything is pooled.
  const Shape first_dims = ChannelsFirstDims(x->shape(), channels_last);
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, node.RequiredInts("kernel_shape"));
  ONYX_ASSIGN_OR_RETURN(
      WindowGeometry g,
      ResolveWindow(node, std::vector<int64_t>(first_dims.begin() + 2, first_dims.end()), kernel,
                    /*allow_ceil_mode=*/true));
  Shape pooled_dims = {first_dims[0], first_dims[1]};
  pooled_dims.insert(pooled_dims.end(), g.out.begin(), g.out.end());
  Shape out = pooled_dims;
  if (channels_last) {
    out.erase(out.begin() + 1);
    out.push_back(pooled_dims[1]);
  }
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, x->dtype(), out));

  Tensor xf = Tensor::AllocateUninitialized(DType::kFloat, x->shape());
  reference::DequantizePerTensor(*x, qx, xf);
  if (channels_last) {
    Tensor moved = Tensor::AllocateUninitialized(DType::kFloat, first_dims);
    reference::MoveChannels(xf, /*to_channels_last=*/false, moved);
    xf = moved;
  }
  ONYX_ASSIGN_OR_RETURN(Tensor pooled, reference::AveragePoolFloat(node, xf));
  if (pooled.shape() != pooled_dims) {
    return node.Fail("the float AveragePool gave ", ShapeToString(pooled.shape()), "; expected ",
                     ShapeToString(pooled_dims));
  }
  if (channels_last) {
    Tensor moved = Tensor::AllocateUninitialized(DType::kFloat, out);
    reference::MoveChannels(pooled, /*to_channels_last=*/true, moved);
    pooled = moved;
  }
  reference::QuantizePerTensor(pooled, qy, y);
  return Status::Ok();
}

Status InferQLinearGlobalAveragePool(InferContext& ctx) {
  ONYX_ASSIGN_OR_RETURN(const bool channels_last, ParseChannelsLast(ctx.node()));
  ONYX_RETURN_IF_ERROR(CheckPoolOperands(ctx));
  TypeInfo out = ctx.input_type(0);
  if (out.has_shape) {
    const size_t first = channels_last ? 1 : 2;  // the spatial dims are [first, first + rank - 2)
    for (size_t d = first; d < first + out.dims.size() - 2; ++d) out.dims[d] = Dim::Known(1);
  }
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

Status QLinearGlobalAveragePoolKernel(KernelContext& ctx) {
  ONYX_ASSIGN_OR_RETURN(const QuantizedPool pool, ReadQuantizedPool(ctx));
  const Tensor* x = pool.x;
  const bool channels_last = pool.channels_last;
  const QuantParams qx = pool.qx, qy = pool.qy;
  Shape out = x->shape();
  const int64_t first = channels_last ? 1 : 2;
  for (int64_t d = first; d < first + x->rank() - 2; ++d) out[d] = 1;
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, x->dtype(), out));
  reference::QLinearGlobalAveragePool(*x, qx, qy, channels_last, y);
  return Status::Ok();
}

// ---- QLinearSoftmax: X, X_scale, x_zp, y_scale, y_zp; attributes axis, opset ----

// QLinearSoftmax's attributes: `opset` (required) is the Softmax version the node stands for;
// `axis` follows that version's rule (ParseSoftmax), as ONNX Runtime reads it.
StatusOr<SoftmaxAttrs> ParseQLinearSoftmax(const NodeView& node, int64_t rank) {
  ONYX_ASSIGN_OR_RETURN(const int64_t opset, node.RequiredInt("opset"));
  if (opset < 1) return node.Invalid("attribute 'opset' is ", opset, "; expected >= 1");
  return ParseSoftmax(node, opset, rank);
}

Status InferQLinearSoftmax(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckQuantized(ctx, 0, "X", 1, "X_scale", 2));
  ONYX_RETURN_IF_ERROR(CheckQuantized(ctx, -1, "", 3, "y_scale", 4));
  ONYX_RETURN_IF_ERROR(ExpectSameType(ctx, 4, 0));
  ONYX_RETURN_IF_ERROR(ParseQLinearSoftmax(ctx.node(), ctx.input_type(0).rank()).status());
  return InferSameAsInput0(ctx);
}

Status QLinearSoftmaxKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  ONYX_ASSIGN_OR_RETURN(const Tensor* x, QuantizedInput(ctx, 0, "X"));
  ONYX_ASSIGN_OR_RETURN(QuantParams qx, ReadQuant(ctx, 1, "X_scale", 2, x->dtype()));
  ONYX_ASSIGN_OR_RETURN(QuantParams qy, ReadQuant(ctx, 3, "y_scale", 4, x->dtype()));
  ONYX_ASSIGN_OR_RETURN(const SoftmaxAttrs attrs, ParseQLinearSoftmax(ctx.node(), x->rank()));
  const SoftmaxView v = attrs.ViewOf(x->shape());
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, x->dtype(), x->shape()));
  reference::QLinearSoftmax(*x, qx, qy, v.outer, v.n, v.inner, y);
  return Status::Ok();
}

// ---- QGemm: A, a_scale, a_zp, B, b_scale, b_zp, C, y_scale, y_zp; alpha, transA, transB ----

// The output is quantized (y_scale and y_zero_point given) or float (neither).
StatusOr<bool> QGemmQuantizedOutput(const NodeView& node, bool has_y_scale, bool has_y_zero) {
  if (has_y_scale != has_y_zero) {
    return node.NotSupported("input ", has_y_scale ? 7 : 8, " '",
                             InputName(node, has_y_scale ? 7 : 8), "' is given without input ",
                             has_y_scale ? 8 : 7, " (", has_y_scale ? "y_zero_point" : "y_scale",
                             "); only both (a quantized Y) or neither (a float Y) are implemented");
  }
  return has_y_scale;
}

Status InferQGemm(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(CheckQuantized(ctx, 0, "A", 1, "a_scale", 2));
  ONYX_RETURN_IF_ERROR(RequireInput(ctx, 3, "B"));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 3, k8BitTypes));
  ONYX_RETURN_IF_ERROR(RequireInput(ctx, 4, "b_scale"));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 4, kFloatOnly));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 5, k8BitTypes));
  ONYX_RETURN_IF_ERROR(ExpectSameType(ctx, 5, 3));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 6, {DType::kInt32}));
  ONYX_ASSIGN_OR_RETURN(const bool quantized,
                        QGemmQuantizedOutput(node, ctx.has_input(7), ctx.has_input(8)));
  if (quantized) ONYX_RETURN_IF_ERROR(CheckQuantized(ctx, -1, "", 7, "y_scale", 8));
  TypeInfo out = TypeInfo::Tensor(quantized ? ctx.input_type(8).elem : DType::kFloat);
  const TypeInfo& a = ctx.input_type(0);
  const TypeInfo& b = ctx.input_type(3);
  for (int i : {0, 3}) {
    const TypeInfo& t = ctx.input_type(i);
    if (t.has_shape && t.dims.size() != 2) {
      return node.Invalid("input ", i, " '", Name(ctx, i), "' has type ", t.ToString(),
                          "; expected a matrix (rank 2)");
    }
  }
  int64_t n = -1;
  if (a.has_shape && b.has_shape) {
    const bool ta = node.attr_int("transA", 0) != 0;
    const bool tb = node.attr_int("transB", 0) != 0;
    const Dim& ka = a.dims[ta ? 0 : 1];
    const Dim& kb = b.dims[tb ? 1 : 0];
    if (ka.known() && kb.known() && ka.value != kb.value) {
      return node.Invalid("input 3 '", Name(ctx, 3), "' has type ", b.ToString(),
                          "; expected K = ", ka.value, " to match input 0 '", Name(ctx, 0), "' ",
                          a.ToString(), " (transA=", ta, ", transB=", tb, ")");
    }
    out.has_shape = true;
    out.dims = {a.dims[ta ? 1 : 0], b.dims[tb ? 0 : 1]};
    if (out.dims[1].known()) n = out.dims[1].value;
  }
  ONYX_RETURN_IF_ERROR(ExpectPerColumn(ctx, 4, n));
  ONYX_RETURN_IF_ERROR(ExpectPerColumn(ctx, 5, n));
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

Status QGemmKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  ONYX_ASSIGN_OR_RETURN(const Tensor* a, QuantizedInput(ctx, 0, "A"));
  ONYX_ASSIGN_OR_RETURN(const Tensor* b, QuantizedInput(ctx, 3, "B"));
  ONYX_ASSIGN_OR_RETURN(QuantParams qa, ReadQuant(ctx, 1, "a_scale", 2, a->dtype()));
  ONYX_ASSIGN_OR_RETURN(const bool quantized,
                        QGemmQuantizedOutput(node, ctx.has_input(7), ctx.has_input(8)));
  if (a->rank() != 2 || b->rank() != 2) {
    return node.Invalid("inputs 0 '", InputName(node, 0), "' ", ShapeToString(a->shape()),
                        " and 3 '", InputName(node, 3), "' ", ShapeToString(b->shape()),
                        " must be matrices (rank 2)");
  }
  const bool trans_a = node.attr_int("transA", 0) != 0;
  const bool trans_b = node.attr_int("transB", 0) != 0;
  const int64_t m = trans_a ? a->dim(1) : a->dim(0);
  const int64_t k = trans_a ? a->dim(0) : a->dim(1);
  const int64_t n = trans_b ? b->dim(0) : b->dim(1);
  if ((trans_b ? b->dim(1) : b->dim(0)) != k) {
    return node.Invalid(DescribeInput(node, 3), " has shape ", ShapeToString(b->shape()),
                        (trans_b ? " (transposed)" : ""), "; expected K = ", k,
                        " to match input 0 ", ShapeToString(a->shape()),
                        (trans_a ? " (transposed)" : ""));
  }
  if (!ctx.has_input(4)) return node.Invalid("input 4 (b_scale) is required");
  ONYX_ASSIGN_OR_RETURN(std::vector<double> b_scale, ReadPerColumn(ctx, 4, DType::kFloat, n, 1));
  ONYX_ASSIGN_OR_RETURN(std::vector<double> b_zero, ReadPerColumn(ctx, 5, b->dtype(), n, 0));
  std::vector<int32_t> acc =
      reference::QuantizedGemm(*a, ZeroPoint(qa), trans_a, *b, ToInts(b_zero), trans_b);
  // C: int32, broadcast unidirectionally to [m, n], added to the int32 product.
  if (ctx.has_input(6)) {
    const Tensor& c = ctx.input(6);
    const Shape full{m, n};
    bool ok = c.dtype() == DType::kInt32 && c.rank() <= 2;
    for (int64_t i = 0; ok && i < c.rank(); ++i)
      ok = c.dim(i) == 1 || c.dim(i) == full[2 - c.rank() + i];
    if (!ok) {
      return node.Invalid(DescribeInput(node, 6), " is ", DTypeName(c.dtype()),
                          ShapeToString(c.shape()), "; expected int32 broadcasting to [", m, ",", n,
                          "]");
    }
    const std::vector<int64_t> strides = BroadcastStrides(c.shape(), full);
    const int32_t* cs = c.data<int32_t>();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int32_t& v = acc[i * n + j];
        v = static_cast<int32_t>(static_cast<int64_t>(v) + cs[i * strides[0] + j * strides[1]]);
      }
  }
  // ONNX Runtime's multiplier per column, in float: alpha * a_scale * b_scale[j] (/ y_scale).
  const float alpha = node.attr_float("alpha", 1.0f);
  std::vector<float> multiplier = ToFloats(b_scale);
  for (float& s : multiplier) s = alpha * Scale(qa) * s;
  if (!quantized) {
    ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kFloat, {m, n}));
    reference::ScaleInt32ToFloat(acc, n, multiplier, nullptr, y);
    return Status::Ok();
  }
  ONYX_ASSIGN_OR_RETURN(const Tensor* y_zero, QuantizedInput(ctx, 8, "y_zero_point"));
  ONYX_ASSIGN_OR_RETURN(QuantParams qy, ReadQuant(ctx, 7, "y_scale", 8, y_zero->dtype()));
  for (float& s : multiplier) s /= Scale(qy);
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, y_zero->dtype(), {m, n}));
  reference::RequantizeInt32(acc, n, multiplier, ZeroPoint(qy), y);
  return Status::Ok();
}

// ---- MatMulIntegerToFloat: A, B, a_scale, b_scale, a_zp, b_zp, bias ----
// ---- DynamicQuantizeMatMul: A (float), B, b_scale, b_zp, bias ----

// B's operands shared by both: B (1) and its scale, zero point and the bias at the given inputs.
Status CheckQuantizedB(InferContext& ctx, int scale, int zero, int bias) {
  ONYX_RETURN_IF_ERROR(RequireInput(ctx, 1, "B"));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, k8BitTypes));
  ONYX_RETURN_IF_ERROR(RequireInput(ctx, scale, "b_scale"));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, scale, kFloatOnly));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, zero, k8BitTypes));
  ONYX_RETURN_IF_ERROR(ExpectSameType(ctx, zero, 1));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, bias, kFloatOnly));
  const int64_t n = Columns(ctx);
  ONYX_RETURN_IF_ERROR(ExpectPerColumn(ctx, scale, n));
  ONYX_RETURN_IF_ERROR(ExpectPerColumn(ctx, zero, n));
  const TypeInfo& b = ctx.input_type(bias);
  if (ctx.has_input(bias) && b.has_shape &&
      (b.dims.size() != 1 || (n >= 0 && b.dims[0].known() && b.dims[0].value != n))) {
    return ctx.node().Invalid("input ", bias, " '", Name(ctx, bias), "' has type ", b.ToString(),
                              "; expected one value per column of B");
  }
  return Status::Ok();
}

Status InferMatMulIntegerToFloat(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInput(ctx, 0, "A"));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, k8BitTypes));
  ONYX_RETURN_IF_ERROR(CheckQuantized(ctx, -1, "", 2, "a_scale", 4));
  ONYX_RETURN_IF_ERROR(ExpectSameType(ctx, 4, 0));
  ONYX_RETURN_IF_ERROR(CheckQuantizedB(ctx, 3, 5, 6));
  return InferMatMulToFloat(ctx);
}

Status InferDynamicQuantizeMatMul(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(RequireInput(ctx, 0, "A"));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kFloatOnly));
  ONYX_RETURN_IF_ERROR(CheckQuantizedB(ctx, 2, 3, 4));
  return InferMatMulToFloat(ctx);
}

// y = float((A - a_zero) x (B - b_zero)) * a_scale * b_scale[j] + bias[j]: the multiplier and the
// rest in float, as ONNX Runtime computes it.
Status RunIntegerMatMulToFloat(KernelContext& ctx, const Tensor& a, int32_t a_zero, float a_scale,
                               int b_scale_index, int b_zero_index, int bias_index) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(const Tensor* b, QuantizedInput(ctx, 1, "B"));
  auto shape = MatMulShape(a.shape(), b->shape());
  if (!shape.ok()) return node.Invalid(shape.status().message());
  const int64_t n = b->rank() == 1 ? 1 : b->shape().back();
  if (!ctx.has_input(b_scale_index))
    return node.Invalid("input ", b_scale_index, " (b_scale) is required");
  ONYX_ASSIGN_OR_RETURN(std::vector<double> b_scale,
                        ReadPerColumn(ctx, b_scale_index, DType::kFloat, n, 1));
  ONYX_ASSIGN_OR_RETURN(std::vector<double> b_zero,
                        ReadPerColumn(ctx, b_zero_index, b->dtype(), n, 0));
  ONYX_ASSIGN_OR_RETURN(const float* bias, ReadBias(ctx, bias_index, n));
  std::vector<float> multiplier = ToFloats(b_scale);
  for (float& s : multiplier) s = a_scale * s;
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kFloat, shape.value()));
  const std::vector<int32_t> acc =
      reference::QuantizedMatMul(a, a_zero, *b, ToInts(b_zero), shape.value());
  reference::ScaleInt32ToFloat(acc, n, multiplier, bias, y);
  return Status::Ok();
}

Status MatMulIntegerToFloatKernel(KernelContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckTensorInputs(ctx));
  ONYX_ASSIGN_OR_RETURN(const Tensor* a, QuantizedInput(ctx, 0, "A"));
  ONYX_ASSIGN_OR_RETURN(QuantParams qa, ReadQuant(ctx, 2, "a_scale", 4, a->dtype()));
  return RunIntegerMatMulToFloat(ctx, *a, ZeroPoint(qa), Scale(qa), 3, 5, 6);
}

// A is quantized to uint8 at run time as DynamicQuantizeLinear does (ONNX Runtime's formula).
Status DynamicQuantizeMatMulKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const Tensor& a = ctx.input(0);
  if (a.dtype() != DType::kFloat) {
    return node.NotSupported(DescribeInput(node, 0), " has type ", DTypeName(a.dtype()),
                             "; expected float");
  }
  Tensor a_quantized = Tensor::AllocateUninitialized(DType::kUInt8, a.shape());
  float a_scale = 0;
  uint8_t a_zero = 0;
  reference::DynamicQuantizeLinear(a.data<float>(), a.numel(), a_quantized.data<uint8_t>(),
                                   &a_scale, &a_zero);
  return RunIntegerMatMulToFloat(ctx, a_quantized, a_zero, a_scale, 2, 3, 4);
}

}  // namespace

void RegisterQuantizationMs(OpRegistry& r) {
  // Opset 1 of com.microsoft is the only version of each.
  r.Add(kMsDomain, "QLinearAdd", 1, kLatestOpset, InferQLinearBinary, QLinearAddKernel);
  r.Add(kMsDomain, "QLinearMul", 1, kLatestOpset, InferQLinearBinary, QLinearMulKernel);
  r.Add(kMsDomain, "QLinearConcat", 1, kLatestOpset, InferQLinearConcat, QLinearConcatKernel);
  r.Add(kMsDomain, "QLinearAveragePool", 1, kLatestOpset, InferQLinearAveragePool,
        QLinearAveragePoolKernel);
  r.Add(kMsDomain, "QLinearGlobalAveragePool", 1, kLatestOpset, InferQLinearGlobalAveragePool,
        QLinearGlobalAveragePoolKernel);
  r.Add(kMsDomain, "QLinearSigmoid", 1, kLatestOpset, InferQLinearUnary, QLinearSigmoidKernel);
  r.Add(kMsDomain, "QLinearLeakyRelu", 1, kLatestOpset, InferQLinearUnary, QLinearLeakyReluKernel);
  r.Add(kMsDomain, "QLinearSoftmax", 1, kLatestOpset, InferQLinearSoftmax, QLinearSoftmaxKernel);
  r.Add(kMsDomain, "QGemm", 1, kLatestOpset, InferQGemm, QGemmKernel);
  r.Add(kMsDomain, "MatMulIntegerToFloat", 1, kLatestOpset, InferMatMulIntegerToFloat,
        MatMulIntegerToFloatKernel);
  r.Add(kMsDomain, "DynamicQuantizeMatMul", 1, kLatestOpset, InferDynamicQuantizeMatMul,
        DynamicQuantizeMatMulKernel);
}

}  // namespace onyx::kernels
