// Helpers shared by the image and signal operator definitions (resize.cc, grid_sample.cc,
// spectral.cc, non_max_suppression.cc): dtype sets, optional-input presence, typed results and
// scalar inputs read at run time or as plan-time constants.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/element_types.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/image_signal.h"

namespace onyx::kernels::image_signal_ops {

inline const std::vector<DType> kFloatTypes = {DType::kFloat, DType::kFloat16, DType::kBFloat16,
                                               DType::kDouble};
inline const std::vector<DType> kNumericTypes = {DType::kFloat,  DType::kFloat16, DType::kBFloat16,
                                                 DType::kDouble, DType::kInt8,    DType::kInt16,
                                                 DType::kInt32,  DType::kInt64,   DType::kUInt8,
                                                 DType::kUInt16, DType::kUInt32,  DType::kUInt64};

inline bool Present(const InferContext& ctx, int i) {
  return i < ctx.num_inputs() && ctx.has_input(i);
}
inline bool Present(const KernelContext& ctx, int i) {
  return i < ctx.num_inputs() && ctx.has_input(i);
}

inline TypeInfo TensorOfRank(DType t, int64_t rank) {
  TypeInfo info = TypeInfo::Tensor(t);
  info.has_shape = true;
  info.dims.assign(static_cast<size_t>(rank), Dim());
  return info;
}

inline TypeInfo TensorWithDims(DType t, std::vector<Dim> dims) {
  TypeInfo info = TypeInfo::Tensor(t);
  info.has_shape = true;
  info.dims = std::move(dims);
  return info;
}

// Reads a scalar (or one-element) integer input.
inline StatusOr<int64_t> ScalarInt(const NodeView& node, int i, const Tensor& t) {
  if (t.numel() != 1 || (t.dtype() != DType::kInt64 && t.dtype() != DType::kInt32)) {
    return node.Invalid("input ", i, " '", InputName(node, i), "' must be a single int32/int64 ",
                        "value, got ", DTypeName(t.dtype()), ShapeToString(t.shape()));
  }
  return TensorToInts(t)[0];
}

inline StatusOr<double> ScalarFloat(const NodeView& node, int i, const Tensor& t) {
  if (t.numel() != 1 || (!IsFloatingPoint(t.dtype()) && !IsInteger(t.dtype()))) {
    return node.Invalid("input ", i, " '", InputName(node, i), "' must be a single number, got ",
                        DTypeName(t.dtype()), ShapeToString(t.shape()));
  }
  return ElementAsDouble(t, 0);
}

// The constant value of a scalar int input at plan time, if there is one.
inline bool ConstantScalarInt(InferContext& ctx, int i, int64_t* v) {
  std::vector<int64_t> vals;
  if (!ConstantInts(ctx, i, &vals) || vals.size() != 1) return false;
  *v = vals[0];
  return true;
}

}  // namespace onyx::kernels::image_signal_ops
