// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear over the Highway loops of
// quantize_hwy.cc (issue 16): in QDQ models these run between every pair of ops.
//
// What the fast kernels take (everything else runs on the reference kernel):
// - QuantizeLinear: float32 x and scale, uint8 or int8 y, per tensor or per axis (no block_size),
//   `precision` absent or float. `saturate` only concerns float8 outputs, so any value is taken.
// - DequantizeLinear: uint8, int8 or int32 x, float32 scale and y, per tensor or per axis.
// - DynamicQuantizeLinear: float32 x (a NaN zero point, from infinite inputs, goes to the
//   reference, whose result there is whatever its float -> uint8 conversion gives).
// Results are bitwise those of the reference (see quantize_hwy.cc for why float32 arithmetic
// reproduces its double arithmetic). Scales and zero points are read in Run, so they may be
// constants or run-time inputs; a layout the reference would reject runs the reference for its
// error message.
#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/common/fast_kernel.h"
#include "kernels/op_helpers.h"

namespace onyx::kernels::common {

// ---- quantize_hwy.cc: single-threaded loops over contiguous runs; no over-read or over-write ----
// `type` of the quantized side: 0 uint8, 1 int8, 2 int32 (dequantize only).
// dst[i] = saturate(round_half_even(src[i] / scale) + zero_point), NaN -> 0, for i < n.
void QuantizeRunF32(const float* src, void* dst, int64_t n, int type, float scale,
                    int32_t zero_point);
// The same with scales[i] and zero_points[i] for element i.
void QuantizeRunPerElementF32(const float* src, void* dst, int64_t n, int type, const float* scales,
                              const int32_t* zero_points);
// dst[i] = float((src[i] - zero_point) * scale) with the product rounded as in the reference.
void DequantizeRunF32(const void* src, int type, float* dst, int64_t n, float scale,
                      int32_t zero_point);
void DequantizeRunPerElementF32(const void* src, int type, float* dst, int64_t n,
                                const float* scales, const int32_t* zero_points);
// Folds src[0, n) into *lo / *hi with std::min / std::max (NaN elements are skipped).
void MinMaxF32(const float* src, int64_t n, float* lo, float* hi);

namespace {

// Work of one element relative to a copy (a division or a conversion, one pass).
constexpr int64_t kQuantizeWork = 2;
constexpr int64_t kDequantizeWork = 1;
// Per-axis runs shorter than this (the axis at or near the innermost dim) use the per-element
// loops over scales repeated `inner` times, instead of one call per short run.
constexpr int64_t kMinRun = 16;

int QuantTypeCode(DType t) {
  switch (t) {
    case DType::kUInt8:
      return 0;
    case DType::kInt8:
      return 1;
    case DType::kInt32:
      return 2;
    default:
      return -1;
  }
}

int32_t LoadZeroPoint(const Tensor& zp, int64_t k) {
  switch (zp.dtype()) {
    case DType::kUInt8:
      return zp.data<uint8_t>()[k];
    case DType::kInt8:
      return zp.data<int8_t>()[k];
    default:
      return zp.data<int32_t>()[k];
  }
}

// How the scales and zero points of one run map onto x, viewed as [outer, axis_len, inner].
struct QuantPlan {
  int64_t n = 0;  // elements of x
  bool per_axis = false;
  int64_t inner = 1;
  // Per tensor: one entry. Per axis: axis_len entries, or (expanded) axis_len * inner entries,
  // entry a * inner + i holding scale a, when runs are shorter than kMinRun.
  std::vector<float> scales;
  std::vector<int32_t> zero_points;
  bool expanded = false;
};

// The reference's layout rules (ResolveLayout in kernels/ops/quantization.cc) without the
// blocked case: false wherever the reference reports an error, so that it gives the message.
// scale has one element: per tensor. Else (opset 13+) per axis, scale [x.dim(axis)].
bool MakePlan(const NodeView& node, const Tensor& x, const Tensor& scale, const Tensor* zp,
              QuantPlan* plan) {
  const Shape& ss = scale.shape();
  const int64_t count = scale.numel();
  if (zp) {
    const bool both_single =
        zp->numel() == 1 && count == 1 && zp->shape().size() <= 1 && ss.size() <= 1;
    if (zp->shape() != ss && !both_single) return false;
  }
  plan->n = x.numel();
  int64_t axis_len = 1;
  if (count != 1) {
    if (node.opset() < 13) return false;
    const int64_t rank = x.rank();
    int64_t axis = node.attr_int("axis", 1);
    if (axis < -rank || axis >= rank) return false;
    if (axis < 0) axis += rank;
    if (ss.size() != 1 || ss[0] != x.dim(axis)) return false;
    axis_len = x.dim(axis);
    plan->per_axis = true;
    plan->inner = 1;
    for (int64_t d = axis + 1; d < rank; ++d) plan->inner *= x.dim(d);
  }
  plan->expanded = plan->per_axis && plan->inner < kMinRun;
  const int64_t repeat = plan->expanded ? plan->inner : 1;
  plan->scales.resize(static_cast<size_t>(axis_len * repeat));
  plan->zero_points.assign(plan->scales.size(), 0);
  const float* s = scale.data<float>();
  for (int64_t a = 0; a < axis_len; ++a) {
    const int32_t z = zp ? LoadZeroPoint(*zp, a) : 0;
    for (int64_t i = 0; i < repeat; ++i) {
      plan->scales[a * repeat + i] = s[a];
      plan->zero_points[a * repeat + i] = z;
    }
  }
  return true;
}

// Splits [0, n) among the threads and each part into runs of one scale: run(begin, count, k)
// for a run with scale entry k, or run_elems(begin, count, k) for an expanded run whose element
// j uses entry k + j.
template <class RunFn, class ElemFn>
void ForEachRun(const QuantPlan& plan, int64_t work, int threads, const RunFn& run,
                const ElemFn& run_elems) {
  const int64_t n = plan.n;
  threads = ThreadsFor(n * work, threads);
  ParallelFor(n, work, threads, [&](int64_t begin, int64_t end) {
    if (!plan.per_axis) {
      run(begin, end - begin, 0);
      return;
    }
    const int64_t entries = static_cast<int64_t>(plan.scales.size());
    if (plan.expanded) {  // entries = axis_len * inner: the scale pattern's period
      for (int64_t i = begin; i < end;) {
        const int64_t k = i % entries;
        const int64_t len = std::min(end - i, entries - k);
        run_elems(i, len, k);
        i += len;
      }
      return;
    }
    for (int64_t i = begin; i < end;) {
      const int64_t row = i / plan.inner;
      const int64_t len = std::min(end, (row + 1) * plan.inner) - i;
      run(i, len, row % entries);  // entries = axis_len
      i += len;
    }
  });
}

// Q's and DQ's x and scale, and the zero point (null when absent); false when one is not a
// tensor (the reference reports it).
bool QdqInputs(const KernelContext& ctx, const Tensor** x, const Tensor** scale,
               const Tensor** zp) {
  for (int i = 0; i < 2; ++i)
    if (!ctx.has_input(i) || !ctx.input_value(i).is_tensor()) return false;
  const bool has_zp = ctx.has_input(2);
  if (has_zp && !ctx.input_value(2).is_tensor()) return false;
  *x = &ctx.input(0);
  *scale = &ctx.input(1);
  *zp = has_zp ? &ctx.input(2) : nullptr;
  return true;
}

// ---- QuantizeLinear ----

class QuantizeKernel : public FastKernel {
 public:
  QuantizeKernel(const NodeView& node, std::unique_ptr<Kernel> fallback)
      : FastKernel(std::move(fallback)), output_dtype_(node.attr_int("output_dtype", 0)) {}

  Status Run(KernelContext& ctx) const override {
    const Tensor *x_in, *scale_in, *zp;
    if (!QdqInputs(ctx, &x_in, &scale_in, &zp)) return Fallback(ctx);
    const Tensor& x = *x_in;
    const Tensor& scale = *scale_in;
    if (!IsF32(x) || !IsF32(scale) || x.numel() == 0) return Fallback(ctx);
    // y's type: the zero point's, else output_dtype, else uint8 (as the reference decides it).
    DType out = DType::kUInt8;
    if (zp) {
      out = zp->dtype();
      if (output_dtype_ != 0 && static_cast<DType>(output_dtype_) != out) return Fallback(ctx);
    } else if (output_dtype_ != 0) {
      out = static_cast<DType>(output_dtype_);
    }
    const int type = QuantTypeCode(out);
    if (type != 0 && type != 1) return Fallback(ctx);
    QuantPlan plan;
    if (!MakePlan(ctx.node(), x, scale, zp, &plan)) return Fallback(ctx);
    Tensor y = ctx.Output(0, out, x.shape());
    const float* src = x.data<float>();
    auto* dst = static_cast<uint8_t*>(y.raw_data());  // one byte per element either way
    ForEachRun(
        plan, kQuantizeWork, ctx.intra_op_threads(),
        [&](int64_t b, int64_t len, int64_t k) {
          QuantizeRunF32(src + b, dst + b, len, type, plan.scales[k], plan.zero_points[k]);
        },
        [&](int64_t b, int64_t len, int64_t k) {
          QuantizeRunPerElementF32(src + b, dst + b, len, type, plan.scales.data() + k,
                                   plan.zero_points.data() + k);
        });
    return Status::Ok();
  }

 private:
  int64_t output_dtype_;
};

Status SupportsQuantize(const NodeView& node, const std::vector<TypeInfo>& types) {
  ONYX_RETURN_IF_ERROR(RequireInputType(types, 0, DType::kFloat));
  ONYX_RETURN_IF_ERROR(RequireInputType(types, 1, DType::kFloat));
  const int64_t output_dtype = node.attr_int("output_dtype", 0);
  DType out = output_dtype != 0 ? static_cast<DType>(output_dtype) : DType::kUInt8;
  if (Present(types, 2)) {
    if (!types[2].is_tensor()) return Unsupported("input 2 is not a tensor");
    out = types[2].elem;
  }
  if (!Is8BitInt(out)) return Unsupported("y is not uint8 or int8");
  if (node.attr_int("block_size", 0) != 0) return Unsupported("blocked quantization");
  const int64_t precision = node.attr_int("precision", 0);
  if (precision != 0 && static_cast<DType>(precision) != DType::kFloat)
    return Unsupported("precision is not float");
  return Status::Ok();
}

// ---- DequantizeLinear ----

class DequantizeKernel : public FastKernel {
 public:
  explicit DequantizeKernel(std::unique_ptr<Kernel> fallback) : FastKernel(std::move(fallback)) {}

  Status Run(KernelContext& ctx) const override {
    const Tensor *x_in, *scale_in, *zp;
    if (!QdqInputs(ctx, &x_in, &scale_in, &zp)) return Fallback(ctx);
    const Tensor& x = *x_in;
    const Tensor& scale = *scale_in;
    const int type = QuantTypeCode(x.dtype());
    if (type < 0 || !IsF32(scale) || x.numel() == 0 || (zp && zp->dtype() != x.dtype()))
      return Fallback(ctx);
    QuantPlan plan;
    if (!MakePlan(ctx.node(), x, scale, zp, &plan)) return Fallback(ctx);
    Tensor y = ctx.Output(0, DType::kFloat, x.shape());
    const auto* src = static_cast<const uint8_t*>(x.raw_data());
    const size_t size = DTypeSize(x.dtype());
    float* dst = y.data<float>();
    ForEachRun(
        plan, kDequantizeWork, ctx.intra_op_threads(),
        [&](int64_t b, int64_t len, int64_t k) {
          DequantizeRunF32(src + b * size, type, dst + b, len, plan.scales[k], plan.zero_points[k]);
        },
        [&](int64_t b, int64_t len, int64_t k) {
          DequantizeRunPerElementF32(src + b * size, type, dst + b, len, plan.scales.data() + k,
                                     plan.zero_points.data() + k);
        });
    return Status::Ok();
  }
};

Status SupportsDequantize(const NodeView& node, const std::vector<TypeInfo>& types) {
  if (!Present(types, 0) || !types[0].is_tensor() || QuantTypeCode(types[0].elem) < 0)
    return Unsupported("x is not uint8, int8 or int32");
  ONYX_RETURN_IF_ERROR(RequireInputType(types, 1, DType::kFloat));
  if (Present(types, 2)) ONYX_RETURN_IF_ERROR(RequireInputType(types, 2, types[0].elem));
  const int64_t output_dtype = node.attr_int("output_dtype", 0);
  if (output_dtype != 0 && static_cast<DType>(output_dtype) != DType::kFloat)
    return Unsupported("y is not float32");
  if (node.attr_int("block_size", 0) != 0) return Unsupported("blocked quantization");
  return Status::Ok();
}

// ---- DynamicQuantizeLinear ----

class DynamicQuantizeKernel : public FastKernel {
 public:
  explicit DynamicQuantizeKernel(std::unique_ptr<Kernel> fallback)
      : FastKernel(std::move(fallback)) {}

  Status Run(KernelContext& ctx) const override {
    if (!ctx.has_input(0) || !ctx.input_value(0).is_tensor() || !IsF32(ctx.input(0)))
      return Fallback(ctx);
    const Tensor& x = ctx.input(0);
    const float* src = x.data<float>();
    const int64_t n = x.numel();
    // The range, widened to include 0 (the reference's loop; the result does not depend on how
    // the elements are split, as NaN is skipped and +0 is only ever replaced by a nonzero value).
    float min_x = 0.0f, max_x = 0.0f;
    std::mutex mu;
    ParallelFor(n, 1, ThreadsFor(n, ctx.intra_op_threads()), [&](int64_t b, int64_t e) {
      float lo = 0.0f, hi = 0.0f;
      MinMaxF32(src + b, e - b, &lo, &hi);
      std::lock_guard<std::mutex> lock(mu);
      min_x = std::min(min_x, lo);
      max_x = std::max(max_x, hi);
    });
    // The scale and zero point in float32, as the reference (and the ONNX function body).
    constexpr float kQMin = 0.0f;
    constexpr float kQMax = 255.0f;
    const float range = max_x == min_x ? 1.0f : max_x - min_x;
    const float s = range / (kQMax - kQMin);
    const float initial_zp = kQMin - min_x / s;
    // -inf in x makes it NaN; the reference's uint8 conversion of NaN is its own business.
    if (std::isnan(initial_zp)) return Fallback(ctx);
    const float zp = std::nearbyint(std::clamp(initial_zp, kQMin, kQMax));
    Tensor y = ctx.Output(0, DType::kUInt8, x.shape());
    uint8_t* dst = y.data<uint8_t>();
    const int32_t zpi = static_cast<int32_t>(zp);
    ParallelFor(n, kQuantizeWork, ThreadsFor(n * kQuantizeWork, ctx.intra_op_threads()),
                [&](int64_t b, int64_t e) { QuantizeRunF32(src + b, dst + b, e - b, 0, s, zpi); });
    if (ctx.num_outputs() > 1 && ctx.has_output(1))
      *ctx.Output(1, DType::kFloat, {}).data<float>() = s;
    if (ctx.num_outputs() > 2 && ctx.has_output(2))
      *ctx.Output(2, DType::kUInt8, {}).data<uint8_t>() = static_cast<uint8_t>(zpi);
    return Status::Ok();
  }
};

Status SupportsDynamicQuantize(const NodeView&, const std::vector<TypeInfo>& types) {
  return RequireInputType(types, 0, DType::kFloat);
}

}  // namespace

KernelEntry QuantizeLinearHwyKernel() {
  return WithFallback("QuantizeLinear_f32_hwy", HighwayIsa(), SupportsQuantize,
                      MakeCreate<QuantizeKernel>());
}

KernelEntry DequantizeLinearHwyKernel() {
  return WithFallback("DequantizeLinear_f32_hwy", HighwayIsa(), SupportsDequantize,
                      [](const NodeView&, const std::vector<TypeInfo>&,
                         std::unique_ptr<Kernel> fallback) -> StatusOr<std::unique_ptr<Kernel>> {
                        return std::unique_ptr<Kernel>(new DequantizeKernel(std::move(fallback)));
                      });
}

KernelEntry DynamicQuantizeLinearHwyKernel() {
  return WithFallback(
      "DynamicQuantizeLinear_f32_hwy", HighwayIsa(), SupportsDynamicQuantize,
      [](const NodeView&, const std::vector<TypeInfo>&,
         std::unique_ptr<Kernel> fallback) -> StatusOr<std::unique_ptr<Kernel>> {
        return std::unique_ptr<Kernel>(new DynamicQuantizeKernel(std::move(fallback)));
      });
}

}  // namespace onyx::kernels::common
