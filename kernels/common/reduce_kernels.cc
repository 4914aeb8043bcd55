// Float32 ReduceSum/Mean/Max/Min/SumSquare/L2 over the Highway loops. After dropping size-1 dims
// and merging neighbours, the reduced dims must form one block: trailing ([kept, reduced], rows),
// leading ([reduced, kept], columns) or in the middle ([kept, reduced, kept], columns per outer
// index). Other axis sets, empty reductions and other types run on the reference kernel.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/common/fast_kernel.h"
#include "kernels/common/simd_kernels.h"
#include "kernels/op_helpers.h"

namespace onyx::kernels::common {
namespace {

// The axes of a Reduce node: an attribute before `axes_input_since`, an optional input from it.
struct ReduceSpec {
  ReduceKind kind;
  int64_t axes_input_since;
};

// Rows fewer than this (a whole tensor reduced to one value) are each reduced in parts.
constexpr int64_t kLongRowsBelow = 4;
// Elements per part of such a row, and the most parts: enough for 16 threads on long rows.
constexpr int64_t kLongRowPart = int64_t{1} << 14;
constexpr int64_t kLongRowMaxParts = 16;

// One row of n elements reduced on up to `threads` threads, in parts combined in order. The parts
// follow n alone, so that every thread count sums the same parts in the same order
// (docs/determinism.md): a split by the thread count rounded differently at each count.
float ReduceLongRow(ReduceKind kind, const float* src, int64_t n, int threads) {
  const int64_t parts = std::clamp<int64_t>(n / kLongRowPart, 1, kLongRowMaxParts);
  std::vector<double> part(static_cast<size_t>(parts));
  ParallelFor(parts, n / parts, threads, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const int64_t lo = n * p / parts, hi = n * (p + 1) / parts;
      part[p] = ReduceRowPartF64(kind, src + lo, hi - lo);
    }
  });
  if (kind == ReduceKind::kMax || kind == ReduceKind::kMin) {
    double r = part[0];  // as within a part: a better value or a NaN replaces, so NaN sticks
    for (int64_t p = 1; p < parts; ++p) {
      const double v = part[p];
      if (std::isnan(v) || (kind == ReduceKind::kMax ? v > r : v < r)) r = v;
    }
    return static_cast<float>(r);
  }
  double sum = 0;
  for (double v : part) sum += v;
  return ReduceFinish(kind, sum, n);
}

class ReduceKernel : public FastKernel {
 public:
  ReduceKernel(std::unique_ptr<Kernel> fallback, ReduceSpec spec)
      : FastKernel(std::move(fallback)), spec_(spec) {}

  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    if (!ctx.has_input(0) || !ctx.input_value(0).is_tensor() || !IsF32(ctx.input(0)))
      return Fallback(ctx);
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> axes;
    bool noop = false;
    if (node.opset() >= spec_.axes_input_since) {
      if (ctx.has_input(1)) {
        if (!ctx.input_value(1).is_tensor()) return Fallback(ctx);
        const Tensor& a = ctx.input(1);
        if (a.dtype() != DType::kInt64 && a.dtype() != DType::kInt32) return Fallback(ctx);
        axes = TensorToInts(a);
      }
      noop = node.attr_int("noop_with_empty_axes", 0) != 0;
    } else {
      axes = node.attr_ints("axes");
    }
    if (axes.empty() && noop) return Fallback(ctx);  // no axis reduced: the element steps only
    const int64_t rank = x.rank();
    std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty());
    for (int64_t a : axes) {
      if (a < -rank || a >= rank) return Fallback(ctx);  // the reference names the bad axis
      reduced[a < 0 ? a + rank : a] = true;
    }
    if (x.numel() == 0) return Fallback(ctx);  // identities of empty reductions
    const bool keepdims = node.attr_int("keepdims", 1) != 0;
    Shape out_shape;
    for (int64_t d = 0; d < rank; ++d) {
      if (!reduced[d]) {
        out_shape.push_back(x.dim(d));
      } else if (keepdims) {
        out_shape.push_back(1);
      }
    }
    // Collapse into groups of (size, reduced), size-1 dims dropped.
    std::vector<std::pair<int64_t, bool>> groups;
    for (int64_t d = 0; d < rank; ++d) {
      if (x.dim(d) == 1) continue;
      if (!groups.empty() && groups.back().second == reduced[d]) {
        groups.back().first *= x.dim(d);
      } else {
        groups.push_back({x.dim(d), reduced[d]});
      }
    }
    int64_t outer = 1, n = 1, inner = 1;
    size_t g = 0;
    if (g < groups.size() && !groups[g].second) outer = groups[g++].first;
    if (g < groups.size() && groups[g].second) n = groups[g++].first;
    if (g < groups.size() && !groups[g].second) inner = groups[g++].first;
    if (g != groups.size()) return Fallback(ctx);  // reduced dims in two separate blocks
    Tensor y = ctx.Output(0, DType::kFloat, out_shape);
    const float* src = x.data<float>();
    float* dst = y.data<float>();
    const int threads = ThreadsFor(x.numel(), ctx.intra_op_threads());
    const ReduceKind kind = spec_.kind;
    if (inner == 1 && outer < kLongRowsBelow) {
      // Fewer rows than threads (a whole tensor reduced to one value): each row in parts.
      for (int64_t o = 0; o < outer; ++o) dst[o] = ReduceLongRow(kind, src + o * n, n, threads);
      return Status::Ok();
    }
    if (inner == 1) {
      ParallelFor(outer, n, threads, [&](int64_t b, int64_t e) {
        ReduceRowsF32(kind, src + b * n, dst + b, e - b, n);
      });
      return Status::Ok();
    }
    const int64_t chunk = std::min(inner, kReduceColumnBlock);
    const int64_t chunks = (inner + chunk - 1) / chunk;
    ParallelFor(outer * chunks, n * chunk, threads, [&](int64_t b, int64_t e) {
      std::vector<double> scratch(static_cast<size_t>(chunk));
      for (int64_t t = b; t < e; ++t) {
        const int64_t o = t / chunks, c0 = (t % chunks) * chunk;
        const int64_t cols = std::min(chunk, inner - c0);
        ReduceColumnsF32(kind, src + o * n * inner + c0, dst + o * inner + c0, n, cols, inner,
                         scratch.data());
      }
    });
    return Status::Ok();
  }

 private:
  ReduceSpec spec_;
};

Status SupportsReduce(const NodeView&, const std::vector<TypeInfo>& types) {
  return RequireInputType(types, 0, DType::kFloat);
}

// GlobalAveragePool / GlobalMaxPool on channels-first float32 [N, C, spatial...]: each (n, c)
// row of the spatial product reduced on the Highway loops. oneDNN's pooling for plain layouts
// took 0.25 and 0.63 ms on Magika's [1, 512, 508, 1] (this: 0.02 ms); x86 leaves such layouts
// to this kernel (pool_onednn.cc) and keeps its jit kernels for channels-last maps.
class GlobalPoolKernel : public FastKernel {
 public:
  GlobalPoolKernel(std::unique_ptr<Kernel> fallback, ReduceKind kind)
      : FastKernel(std::move(fallback)), kind_(kind) {}

  Status Run(KernelContext& ctx) const override {
    if (!ctx.input_value(0).is_tensor() || !IsF32(ctx.input(0)) || ctx.input(0).rank() < 3 ||
        ctx.input(0).numel() == 0)
      return Fallback(ctx);
    const Tensor& x = ctx.input(0);
    const int64_t rows = x.dim(0) * x.dim(1), n = x.numel() / rows;
    Shape out_shape(static_cast<size_t>(x.rank()), 1);
    out_shape[0] = x.dim(0);
    out_shape[1] = x.dim(1);
    Tensor y = ctx.Output(0, DType::kFloat, out_shape);
    const float* src = x.data<float>();
    float* dst = y.data<float>();
    const int threads = ThreadsFor(x.numel(), ctx.intra_op_threads());
    if (rows < kLongRowsBelow) {
      for (int64_t r = 0; r < rows; ++r) dst[r] = ReduceLongRow(kind_, src + r * n, n, threads);
      return Status::Ok();
    }
    ParallelFor(rows, n, threads, [&](int64_t b, int64_t e) {
      ReduceRowsF32(kind_, src + b * n, dst + b, e - b, n);
    });
    return Status::Ok();
  }

 private:
  ReduceKind kind_;
};

}  // namespace

KernelEntry GlobalPoolHwyKernel(const std::string& op, ReduceKind kind) {
  return WithFallback(
      op + "_f32_hwy", HighwayIsa(), SupportsReduce,
      [kind](const NodeView&, const std::vector<TypeInfo>&,
             std::unique_ptr<Kernel> fallback) -> StatusOr<std::unique_ptr<Kernel>> {
        return std::unique_ptr<Kernel>(new GlobalPoolKernel(std::move(fallback), kind));
      });
}

KernelEntry ReduceHwyKernel(const std::string& op, ReduceKind kind, int64_t axes_input_since) {
  const ReduceSpec spec{kind, axes_input_since};
  return WithFallback(
      op + "_f32_hwy", HighwayIsa(), SupportsReduce,
      [spec](const NodeView&, const std::vector<TypeInfo>&,
             std::unique_ptr<Kernel> fallback) -> StatusOr<std::unique_ptr<Kernel>> {
        return std::unique_ptr<Kernel>(new ReduceKernel(std::move(fallback), spec));
      });
}

}  // namespace onyx::kernels::common
