// Quantization family: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear.
#include "kernels/reference/quantization.h"

#include <algorithm>
#include <vector>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"

namespace onyx::kernels {
namespace {

using reference::QuantLayout;

// Types a quantized tensor may have (QuantizeLinear's y, DequantizeLinear's x).
const std::vector<DType> kQuantizedTypes = {
    DType::kUInt8,        DType::kInt8,           DType::kUInt16,     DType::kInt16,
    DType::kUInt4,        DType::kInt4,           DType::kUInt2,      DType::kInt2,
    DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2, DType::kFloat8E5M2FNUZ,
    DType::kFloat4E2M1};
// QuantizeLinear's x; DequantizeLinear's x adds int32 to kQuantizedTypes.
const std::vector<DType> kQuantizeInputTypes = {DType::kFloat, DType::kFloat16, DType::kBFloat16,
                                                DType::kDouble, DType::kInt32};
const std::vector<DType> kScaleTypes = {DType::kFloat,  DType::kFloat16, DType::kBFloat16,
                                        DType::kDouble, DType::kInt32,   DType::kFloat8E8M0};
const std::vector<DType> kHighPrecisionTypes = {DType::kFloat, DType::kFloat16, DType::kBFloat16,
                                                DType::kDouble};

const std::vector<DType> kDequantizeInputTypes = [] {
  std::vector<DType> v = kQuantizedTypes;
  v.push_back(DType::kInt32);
  return v;
}();

bool Contains(const std::vector<DType>& set, DType t) {
  return std::find(set.begin(), set.end(), t) != set.end();
}

// Decides per-tensor / per-axis / blocked from the scale's shape (ONNX QuantizeLinear-21 rules)
// and checks that the zero point, when given, has the scale's shape.
StatusOr<QuantLayout> ResolveLayout(const NodeView& node, const Shape& x, const Shape& scale,
                                    const Shape* zero_point) {
  const std::string& scale_name = InputName(node, 1);
  // A one-element zero point may pair with a one-element scale of another rank ([] vs [1]).
  const bool both_single = zero_point && ShapeElementCount(*zero_point) == 1 &&
                           ShapeElementCount(scale) == 1 && zero_point->size() <= 1 &&
                           scale.size() <= 1;
  if (zero_point && *zero_point != scale && !both_single) {
    return node.Invalid("input 2 '", InputName(node, 2), "' has shape ", ShapeToString(*zero_point),
                        "; expected the shape of input 1 '", scale_name, "' ",
                        ShapeToString(scale));
  }
  // Attributes that did not exist yet in older opsets keep their defaults.
  const int64_t block_size = node.attr_int("block_size", 0);
  if (block_size < 0) return node.Invalid("attribute 'block_size' must be >= 0, got ", block_size);
  QuantLayout layout;
  layout.inner = ShapeElementCount(x);
  layout.axis_len = 1;
  layout.outer = 1;
  // A single scale is per-tensor whatever its rank ([] or [1]).
  if (ShapeElementCount(scale) == 1 && (scale.size() <= 1 || block_size == 0)) return layout;
  if (node.opset() < 13) {
    return node.Invalid("input 1 '", scale_name, "' has shape ", ShapeToString(scale), "; opset ",
                        node.opset(), " only allows a scalar scale");
  }
  const int64_t rank = static_cast<int64_t>(x.size());
  ONYX_ASSIGN_OR_RETURN(const int64_t axis,
                        NormalizeAxis(node, node.attr_int("axis", 1), rank, "attribute 'axis'"));
  layout.outer = 1;
  for (int64_t d = 0; d < axis; ++d) layout.outer *= x[d];
  layout.axis_len = x[axis];
  layout.inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d) layout.inner *= x[d];
  if (block_size == 0) {
    if (scale.size() != 1 || scale[0] != x[axis]) {
      return node.Invalid("input 1 '", scale_name, "' has shape ", ShapeToString(scale),
                          "; per-axis quantization expects [", x[axis], "] (dim ", axis,
                          " of input 0 ", ShapeToString(x), ")");
    }
    layout.kind = QuantLayout::Kind::kPerAxis;
    return layout;
  }
  // Blocked: the scale has x's shape except at the axis, where it has ceil(D / block_size).
  const int64_t blocks = (x[axis] + block_size - 1) / block_size;
  bool ok = static_cast<int64_t>(scale.size()) == rank;
  for (int64_t d = 0; ok && d < rank; ++d) ok = scale[d] == (d == axis ? blocks : x[d]);
  if (!ok) {
    return node.Invalid("input 1 '", scale_name, "' has shape ", ShapeToString(scale),
                        "; blocked quantization of input 0 ", ShapeToString(x), " with axis ", axis,
                        " and block_size ", block_size, " expects dim ", axis, " = ", blocks,
                        " and every other dim equal to input 0's");
  }
  layout.kind = QuantLayout::Kind::kBlocked;
  layout.block_size = block_size;
  layout.num_blocks = blocks;
  return layout;
}

// Validates the layout at plan time when every shape involved is static.
Status CheckLayoutIfStatic(InferContext& ctx) {
  if (!ctx.input_type(0).shape_is_static() || !ctx.input_type(1).shape_is_static())
    return Status::Ok();
  Shape zp;
  const bool has_zp = ctx.has_input(2);
  if (has_zp) {
    if (!ctx.input_type(2).shape_is_static()) return Status::Ok();
    zp = ctx.input_type(2).static_shape();
  }
  return ResolveLayout(ctx.node(), ctx.input_type(0).static_shape(),
                       ctx.input_type(1).static_shape(), has_zp ? &zp : nullptr)
      .status();
}

TypeInfo WithElem(const TypeInfo& like, DType elem) {
  TypeInfo t = like;
  t.kind = TypeInfo::Kind::kTensor;
  t.elem = elem;
  return t;
}

// ---- QuantizeLinear ----

// y's type: the zero point's type, else `output_dtype` (opset 21+), else uint8.
StatusOr<DType> QuantizeOutputType(const NodeView& node, bool has_zp, DType zp_type) {
  const int64_t output_dtype = node.attr_int("output_dtype", 0);
  if (output_dtype != 0 && !IsKnownDType(static_cast<int32_t>(output_dtype)))
    return node.Invalid("attribute 'output_dtype' = ", output_dtype, " is not a data type");
  if (has_zp) {
    if (output_dtype != 0 && static_cast<DType>(output_dtype) != zp_type) {
      return node.Invalid("attribute 'output_dtype' is ",
                          DTypeName(static_cast<DType>(output_dtype)), " but input 2 '",
                          InputName(node, 2), "' has type ", DTypeName(zp_type));
    }
    return zp_type;
  }
  return output_dtype != 0 ? static_cast<DType>(output_dtype) : DType::kUInt8;
}

// The float type the division x / y_scale is computed in: `precision` (opset 23+), else y_scale's
// type (float8e8m0 and int32 scales divide in float).
StatusOr<DType> QuantizePrecision(const NodeView& node, DType scale_type) {
  const int64_t precision = node.attr_int("precision", 0);
  if (precision != 0) {
    const DType p = static_cast<DType>(precision);
    if (!IsKnownDType(static_cast<int32_t>(precision)) || !Contains(kHighPrecisionTypes, p))
      return node.NotSupported("attribute 'precision' = ", precision,
                               " is not float, float16, bfloat16 or double");
    return p;
  }
  return Contains(kHighPrecisionTypes, scale_type) ? scale_type : DType::kFloat;
}

Status InferQuantizeLinear(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kQuantizeInputTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, kScaleTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 2, kQuantizedTypes));
  const bool has_zp = ctx.has_input(2) && ctx.input_type(2).is_tensor();
  if (ctx.has_input(2) && !has_zp) return Status::Ok();  // zero point type unknown yet
  ONYX_ASSIGN_OR_RETURN(
      DType out,
      QuantizeOutputType(node, has_zp, has_zp ? ctx.input_type(2).elem : DType::kUndefined));
  if (!Contains(kQuantizedTypes, out))
    return node.NotSupported("output type ", DTypeName(out), " is not a quantized type");
  if (ctx.input_type(1).is_tensor())
    ONYX_RETURN_IF_ERROR(QuantizePrecision(node, ctx.input_type(1).elem).status());
  ONYX_RETURN_IF_ERROR(CheckLayoutIfStatic(ctx));
  ctx.SetOutputType(0, WithElem(ctx.input_type(0), out));
  return Status::Ok();
}

Status QuantizeLinearKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  ONYX_ASSIGN_OR_RETURN(
      DType out, QuantizeOutputType(node, zp != nullptr, zp ? zp->dtype() : DType::kUndefined));
  if (!Contains(kQuantizedTypes, out))
    return node.NotSupported("output type ", DTypeName(out), " is not a quantized type");
  if (!Contains(kQuantizeInputTypes, x.dtype()))
    return node.NotSupported("input 0 '", InputName(node, 0), "' has type ", DTypeName(x.dtype()),
                             ", which this operator does not support");
  ONYX_ASSIGN_OR_RETURN(DType precision, QuantizePrecision(node, scale.dtype()));
  ONYX_ASSIGN_OR_RETURN(QuantLayout layout,
                        ResolveLayout(node, x.shape(), scale.shape(), zp ? &zp->shape() : nullptr));
  // saturate (opset 19+) only affects float8 outputs.
  const bool saturate = node.attr_int("saturate", 1) != 0;
  Tensor y = ctx.Output(0, out, x.shape());
  reference::QuantizeLinear(x, scale, zp, layout, precision, saturate, y);
  return Status::Ok();
}

// ---- DequantizeLinear ----

// y's type: `output_dtype` (opset 23+), else x_scale's type.
StatusOr<DType> DequantizeOutputType(const NodeView& node, DType scale_type) {
  const int64_t output_dtype = node.attr_int("output_dtype", 0);
  if (output_dtype != 0) {
    const DType t = static_cast<DType>(output_dtype);
    if (!IsKnownDType(static_cast<int32_t>(output_dtype)) || !Contains(kHighPrecisionTypes, t))
      return node.NotSupported("attribute 'output_dtype' = ", output_dtype,
                               " is not float, float16, bfloat16 or double");
    return t;
  }
  if (!Contains(kHighPrecisionTypes, scale_type)) {
    return node.Invalid("input 1 '", InputName(node, 1), "' has type ", DTypeName(scale_type),
                        "; attribute 'output_dtype' is required to dequantize with it");
  }
  return scale_type;
}

Status InferDequantizeLinear(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kDequantizeInputTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(
      ctx, 1,
      {DType::kFloat, DType::kFloat16, DType::kBFloat16, DType::kDouble, DType::kFloat8E8M0}));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 2, kDequantizeInputTypes));
  if (ctx.has_input(2) && ctx.input_type(0).is_tensor() && ctx.input_type(2).is_tensor() &&
      ctx.input_type(0).elem != ctx.input_type(2).elem) {
    return node.Invalid("input 2 '", InputName(node, 2), "' has type ",
                        DTypeName(ctx.input_type(2).elem), "; expected the type of input 0 '",
                        InputName(node, 0), "' (", DTypeName(ctx.input_type(0).elem), ")");
  }
  if (!ctx.input_type(1).is_tensor()) return Status::Ok();
  ONYX_ASSIGN_OR_RETURN(DType out, DequantizeOutputType(node, ctx.input_type(1).elem));
  ONYX_RETURN_IF_ERROR(CheckLayoutIfStatic(ctx));
  ctx.SetOutputType(0, WithElem(ctx.input_type(0), out));
  return Status::Ok();
}

Status DequantizeLinearKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (zp && zp->dtype() != x.dtype()) {
    return node.Invalid("input 2 '", InputName(node, 2), "' has type ", DTypeName(zp->dtype()),
                        "; expected the type of input 0 (", DTypeName(x.dtype()), ")");
  }
  if (!Contains(kDequantizeInputTypes, x.dtype()))
    return node.NotSupported("input 0 '", InputName(node, 0), "' has type ", DTypeName(x.dtype()),
                             ", which this operator does not support");
  ONYX_ASSIGN_OR_RETURN(DType out, DequantizeOutputType(node, scale.dtype()));
  ONYX_ASSIGN_OR_RETURN(QuantLayout layout,
                        ResolveLayout(node, x.shape(), scale.shape(), zp ? &zp->shape() : nullptr));
  Tensor y = ctx.Output(0, out, x.shape());
  reference::DequantizeLinear(x, scale, zp, layout, y);
  return Status::Ok();
}

// ---- DynamicQuantizeLinear ----

Status InferDynamicQuantizeLinear(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, {DType::kFloat}));
  ctx.SetOutputType(0, WithElem(ctx.input_type(0), DType::kUInt8));
  if (ctx.num_outputs() > 1) ctx.SetOutputType(1, TypeInfo::TensorWithShape(DType::kFloat, {}));
  if (ctx.num_outputs() > 2) ctx.SetOutputType(2, TypeInfo::TensorWithShape(DType::kUInt8, {}));
  return Status::Ok();
}

Status DynamicQuantizeLinearKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::kFloat) {
    return ctx.node().NotSupported("input 0 '", InputName(ctx.node(), 0), "' has type ",
                                   DTypeName(x.dtype()), "; only float is supported");
  }
  Tensor y = ctx.Output(0, DType::kUInt8, x.shape());
  float scale = 0;
  uint8_t zp = 0;
  reference::DynamicQuantizeLinear(x.data<float>(), x.numel(), y.data<uint8_t>(), &scale, &zp);
  if (ctx.num_outputs() > 1 && ctx.has_output(1))
    *ctx.Output(1, DType::kFloat, {}).data<float>() = scale;
  if (ctx.num_outputs() > 2 && ctx.has_output(2))
    *ctx.Output(2, DType::kUInt8, {}).data<uint8_t>() = zp;
  return Status::Ok();
}

}  // namespace

void RegisterQuantization(OpRegistry& r) {
  // One definition per schema version. The kernels read each attribute with the default it had
  // before it existed: axis (13), saturate (19), block_size and Q's output_dtype (21), precision
  // and DQ's output_dtype (23); new element types arrived in 19 (float8), 21 (int4, int16),
  // 23 (float4e2m1), 24 (float8e8m0 scale) and 25 (int2).
  const std::vector<std::pair<int64_t, int64_t>> versions = {
      {10, 12}, {13, 18}, {19, 20}, {21, 22}, {23, 23}, {24, 24}, {25, kLatestOpset}};
  for (const auto& [since, until] : versions) {
    r.Add("", "QuantizeLinear", since, until, InferQuantizeLinear, QuantizeLinearKernel);
    r.Add("", "DequantizeLinear", since, until, InferDequantizeLinear, DequantizeLinearKernel);
  }
  r.Add("", "DynamicQuantizeLinear", 11, kLatestOpset, InferDynamicQuantizeLinear,
        DynamicQuantizeLinearKernel);
}

}  // namespace onyx::kernels
