// Concat, Split and Slice for every plain element type (1, 2, 4 or 8 bytes) as memcpy runs,
// split across threads when large. Values the reference kernel would reject (mismatched shapes,
// bad split sizes, zero steps) are handed to it for the error message.
#include <algorithm>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/common/fast_kernel.h"
#include "kernels/common/strided_copy.h"
#include "kernels/op_helpers.h"

namespace onyx::kernels::common {
namespace {

bool TensorInput(KernelContext& ctx, int i) {
  return ctx.has_input(i) && ctx.input_value(i).is_tensor();
}

// Reads an int32/int64 tensor input that is at most 1-D; false otherwise.
bool IntsInput(KernelContext& ctx, int i, std::vector<int64_t>* out) {
  if (!TensorInput(ctx, i)) return false;
  const Tensor& t = ctx.input(i);
  if ((t.dtype() != DType::kInt64 && t.dtype() != DType::kInt32) || t.rank() > 1) return false;
  *out = TensorToInts(t);
  return true;
}

// For each of `outer` rows, copies k blocks: block i of row o has bytes[i] bytes from
// src[i] + o * src_row[i] to dst[i] + o * dst_row[i]. Parallel over (row, block) when large.
void CopyBlocks(int64_t outer, const std::vector<const char*>& src,
                const std::vector<int64_t>& src_row, const std::vector<char*>& dst,
                const std::vector<int64_t>& dst_row, const std::vector<int64_t>& bytes,
                int threads) {
  const int64_t k = static_cast<int64_t>(src.size());
  if (k == 0 || outer == 0) return;
  int64_t row_bytes = 0;
  for (int64_t b : bytes) row_bytes += b;
  const int workers = ThreadsFor(outer * row_bytes / 4, threads);
  if (outer < 8 * workers) {  // few long rows: split over (row, piece); work unit ~4 bytes
    ParallelFor(outer * k, std::max<int64_t>(1, row_bytes / k / 4), workers,
                [&](int64_t begin, int64_t end) {
                  for (int64_t t = begin; t < end; ++t) {
                    const int64_t o = t / k, i = t % k;
                    if (bytes[i] > 0)
                      std::memcpy(dst[i] + o * dst_row[i], src[i] + o * src_row[i],
                                  static_cast<size_t>(bytes[i]));
                  }
                });
    return;
  }
  // Many short rows (an NHWC channel Concat copies a few hundred bytes per piece): tasks are
  // runs of whole rows, walked piece by piece without a division per copy.
  ParallelFor(outer, std::max<int64_t>(1, row_bytes / 4), workers, [&](int64_t begin, int64_t end) {
    for (int64_t i = 0; i < k; ++i) {
      const size_t n = static_cast<size_t>(bytes[i]);
      if (n == 0) continue;
      const char* s = src[i] + begin * src_row[i];
      char* d = dst[i] + begin * dst_row[i];
      for (int64_t o = begin; o < end; ++o, s += src_row[i], d += dst_row[i]) std::memcpy(d, s, n);
    }
  });
}

// ---- Concat ----
// Below this, a Concat of one row copies its inputs in a plain loop (no split across threads).
constexpr size_t kSerialConcatBytes = size_t{1} << 18;

class ConcatKernel : public FastKernel {
 public:
  // The axis is read once here: attribute look-ups by name per run showed in a symbolic-shape
  // plan's profile (dozens of small Concats per run).
  ConcatKernel(const NodeView& node, std::unique_ptr<Kernel> fallback)
      : FastKernel(std::move(fallback)),
        has_axis_(node.opset() < 4 || node.has_attr("axis")),
        axis_(node.attr_int("axis", 1)) {}

  Status Run(KernelContext& ctx) const override {
    const int k = ctx.num_inputs();
    if (k == 0) return Fallback(ctx);
    for (int i = 0; i < k; ++i)
      if (!TensorInput(ctx, i)) return Fallback(ctx);
    const Tensor& first = ctx.input(0);
    const size_t es = PlainSize(first);
    const int64_t rank = first.rank();
    if (es == 0 || rank == 0) return Fallback(ctx);
    if (!has_axis_) return Fallback(ctx);
    int64_t axis = axis_;
    if (axis < -rank || axis >= rank) return Fallback(ctx);
    if (axis < 0) axis += rank;
    Shape shape = first.shape();
    shape[axis] = 0;
    for (int i = 0; i < k; ++i) {
      const Tensor& t = ctx.input(i);
      if (t.dtype() != first.dtype() || t.rank() != rank) return Fallback(ctx);
      for (int64_t d = 0; d < rank; ++d)
        if (d != axis && t.dim(d) != first.dim(d)) return Fallback(ctx);
      // Empty inputs may be any length on the axis: a sum past int64 is the reference's error.
      if (!CheckedAdd(shape[axis], t.dim(axis), &shape[axis])) return Fallback(ctx);
    }
    auto y = NewOutput(ctx, 0, first.dtype(), shape);
    if (!y.ok()) return y.status();
    if (y->numel() == 0) return Status::Ok();  // the products below may overflow then
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= shape[d];
    const int64_t esi = static_cast<int64_t>(es);
    if (outer == 1 && y->nbytes() <= kSerialConcatBytes) {
      // One row of a few pieces (shape vectors, a decoder's key/value cache): copied in order.
      char* at = static_cast<char*>(y->raw_data());
      for (int i = 0; i < k; ++i) {
        const Tensor& t = ctx.input(i);
        if (t.nbytes() > 0) std::memcpy(at, t.raw_data(), t.nbytes());
        at += t.nbytes();
      }
      return Status::Ok();
    }
    const int64_t out_row = shape[axis] * inner * esi;
    std::vector<const char*> src;
    std::vector<char*> dst;
    std::vector<int64_t> src_row, dst_row, bytes;
    char* out = static_cast<char*>(y->raw_data());
    int64_t col = 0;
    for (int i = 0; i < k; ++i) {
      const Tensor& t = ctx.input(i);
      const int64_t block = t.dim(axis) * inner * esi;
      src.push_back(static_cast<const char*>(t.raw_data()));
      src_row.push_back(block);
      dst.push_back(out + col);
      dst_row.push_back(out_row);
      bytes.push_back(block);
      col += block;
    }
    CopyBlocks(outer, src, src_row, dst, dst_row, bytes, ctx.intra_op_threads());
    return Status::Ok();
  }

 private:
  bool has_axis_;
  int64_t axis_;
};

// ---- Split ----
// Split sizes for `n` outputs along an axis of length `dim` (mirrors the reference): the given
// sizes, equal parts, or from opset 18 ceil(dim / n) with the remainder last. False when invalid.
bool SplitSizes(const NodeView& node, int64_t dim, int n, const std::vector<int64_t>* split,
                std::vector<int64_t>* sizes) {
  if (split) {
    if (static_cast<int>(split->size()) != n) return false;
    int64_t sum = 0;
    for (int64_t s : *split) {
      if (!CheckedAdd(sum, s, &sum)) return false;  // negative, or past int64: the reference says
    }
    if (sum != dim) return false;
    *sizes = *split;
    return true;
  }
  if (n <= 0) return false;
  if (dim % n == 0) {
    sizes->assign(n, dim / n);
    return true;
  }
  if (node.opset() < 18) return false;
  const int64_t chunk = dim / n + 1;  // ceil(dim / n), as dim % n != 0, without dim + n overflow
  int64_t full = 0;
  if (!CheckedMul(chunk, n - 1, &full)) return false;
  const int64_t last = dim - full;
  if (last < 0) return false;
  sizes->assign(n, chunk);
  sizes->back() = last;
  return true;
}

class SplitKernel : public FastKernel {
 public:
  SplitKernel(const NodeView&, std::unique_ptr<Kernel> fallback)
      : FastKernel(std::move(fallback)) {}

  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    if (!TensorInput(ctx, 0)) return Fallback(ctx);
    const Tensor& x = ctx.input(0);
    const size_t es = PlainSize(x);
    const int64_t rank = x.rank();
    const int outputs = ctx.num_outputs();
    if (es == 0 || rank == 0) return Fallback(ctx);
    if (node.opset() >= 18 && node.has_attr("num_outputs") &&
        node.attr_int("num_outputs", 0) != outputs)
      return Fallback(ctx);
    int64_t axis = node.attr_int("axis", 0);
    if (axis < -rank || axis >= rank) return Fallback(ctx);
    if (axis < 0) axis += rank;
    std::vector<int64_t> split;
    bool present = false;
    if (node.opset() < 13 && node.has_attr("split")) {
      present = true;
      split = node.attr_ints("split");
    } else if ((node.opset() >= 13 || node.opset() == 1) && ctx.has_input(1)) {
      present = true;
      if (!IntsInput(ctx, 1, &split)) return Fallback(ctx);
    }
    std::vector<int64_t> sizes;
    if (!SplitSizes(node, x.dim(axis), outputs, present ? &split : nullptr, &sizes))
      return Fallback(ctx);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(d);
    const int64_t esi = static_cast<int64_t>(es);
    const int64_t in_row = x.dim(axis) * inner * esi;
    const char* in = static_cast<const char*>(x.raw_data());
    std::vector<const char*> src;
    std::vector<char*> dst;
    std::vector<int64_t> src_row, dst_row, bytes;
    int64_t start = 0;
    for (int i = 0; i < outputs; ++i) {
      const int64_t block = sizes[i] * inner * esi;
      if (ctx.has_output(i)) {
        Shape shape = x.shape();
        shape[axis] = sizes[i];
        auto y = NewOutput(ctx, i, x.dtype(), shape);
        if (!y.ok()) return y.status();
        src.push_back(in + start);
        src_row.push_back(in_row);
        dst.push_back(static_cast<char*>(y->raw_data()));
        dst_row.push_back(block);
        bytes.push_back(block);
      }
      start += block;
    }
    CopyBlocks(outer, src, src_row, dst, dst_row, bytes, ctx.intra_op_threads());
    return Status::Ok();
  }
};

// ---- Slice ----
struct SliceAxis {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
};

// ONNX Slice bounds for known dims (mirrors the reference): negative starts/ends count from the
// back, then clamp to [0, dim] (positive steps) or [0, dim-1] / [-1, dim-1] (negative steps).
// False for values the reference rejects.
bool ComputeSlice(const Shape& dims, const std::vector<int64_t>& starts,
                  const std::vector<int64_t>& ends, std::vector<int64_t> axes,
                  std::vector<int64_t> steps, std::vector<SliceAxis>* out) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (starts.size() != ends.size()) return false;
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) return false;
  out->assign(static_cast<size_t>(rank), SliceAxis{});
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a = 0; a < rank; ++a) (*out)[a].count = dims[a];
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i];
    if (a < -rank || a >= rank) return false;
    if (a < 0) a += rank;
    if (seen[a]) return false;
    seen[a] = true;
    const int64_t step = steps[i];
    if (step == 0) return false;
    const int64_t dim = dims[a];
    const SliceRange r = ResolveSliceRange(starts[i], ends[i], step, dim);
    SliceAxis& s = (*out)[a];
    s.step = step;
    s.start = r.start;
    s.count = r.count;
  }
  return true;
}

class SliceKernel : public FastKernel {
 public:
  SliceKernel(const NodeView&, std::unique_ptr<Kernel> fallback)
      : FastKernel(std::move(fallback)) {}

  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    if (!TensorInput(ctx, 0)) return Fallback(ctx);
    const Tensor& x = ctx.input(0);
    const size_t es = PlainSize(x);
    if (es == 0) return Fallback(ctx);
    std::vector<int64_t> starts, ends, axes, steps;
    if (node.opset() < 10) {
      if (!node.has_attr("starts") || !node.has_attr("ends")) return Fallback(ctx);
      starts = node.attr_ints("starts");
      ends = node.attr_ints("ends");
      axes = node.attr_ints("axes");
    } else {
      if (!IntsInput(ctx, 1, &starts) || !IntsInput(ctx, 2, &ends)) return Fallback(ctx);
      if (ctx.has_input(3) && !IntsInput(ctx, 3, &axes)) return Fallback(ctx);
      if (ctx.has_input(4) && !IntsInput(ctx, 4, &steps)) return Fallback(ctx);
    }
    std::vector<SliceAxis> sl;
    if (!ComputeSlice(x.shape(), starts, ends, axes, steps, &sl)) return Fallback(ctx);
    Shape shape;
    std::vector<int64_t> strides;
    const std::vector<int64_t> in_strides = ContiguousStrides(x.shape());
    int64_t offset = 0;
    for (size_t a = 0; a < sl.size(); ++a) {
      shape.push_back(sl[a].count);
      offset += sl[a].start * in_strides[a];
      strides.push_back(sl[a].step * in_strides[a]);
    }
    auto y = NewOutput(ctx, 0, x.dtype(), shape);
    if (!y.ok()) return y.status();
    StridedCopy(x.raw_data(), offset, strides, shape, y->raw_data(), es, ctx.intra_op_threads());
    return Status::Ok();
  }
};

}  // namespace

// Their strided copies transpose with Highway.
KernelEntry ConcatMemcpyKernel() {
  return WithFallback("Concat_any_memcpy", HighwayIsa(), SupportsPlainInput0,
                      MakeCreate<ConcatKernel>());
}

KernelEntry SplitMemcpyKernel() {
  return WithFallback("Split_any_memcpy", HighwayIsa(), SupportsPlainInput0,
                      MakeCreate<SplitKernel>());
}

KernelEntry SliceMemcpyKernel() {
  return WithFallback("Slice_any_memcpy", HighwayIsa(), SupportsPlainInput0,
                      MakeCreate<SliceKernel>());
}

}  // namespace onyx::kernels::common
