// Transpose for every plain element type (1, 2, 4 or 8 bytes). The permutation is collapsed first
// (size-1 dims dropped, input dims that stay neighbours merged); then either the innermost dim is
// kept (e.g. [0,2,1,3] in attention: memcpy runs) or the copy is a batch of 2-D transposes done in
// cache-sized tiles (e.g. [0,2,3,1] NCHW -> NHWC, or the last-two-dims swap).
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/common/fast_kernel.h"
#include "kernels/common/strided_copy.h"
#include "kernels/op_helpers.h"

namespace onyx::kernels::common {
namespace {

// Elements of the 2-D tiles handed to one task: at least 64 rows, more when rows are short
// (an RGB image's NCHW -> NHWC has 3 columns).
constexpr int64_t kTransposeElementsPerTask = 64 * 64;

// Validated permutation for `rank` from the node's perm attribute (`given`: whether it has one),
// or false (the reference kernel then reports it).
bool ValidPerm(bool given, const std::vector<int64_t>& attr, int64_t rank,
               std::vector<int64_t>* perm) {
  perm->clear();
  if (!given) {
    for (int64_t i = rank - 1; i >= 0; --i) perm->push_back(i);
    return true;
  }
  *perm = attr;
  if (static_cast<int64_t>(perm->size()) != rank) return false;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& p : *perm) {
    if (p < -rank || p >= rank) return false;
    if (p < 0) p += rank;
    if (seen[p]) return false;
    seen[p] = true;
  }
  return true;
}

// The transpose of `shape` by `perm` with size-1 dims dropped and merged neighbours: `in` is the
// collapsed input shape and `perm` maps output dim k to input dim perm[k].
struct CollapsedPerm {
  Shape in;
  std::vector<int64_t> perm;
};

CollapsedPerm Collapse(const Shape& shape, const std::vector<int64_t>& perm) {
  // Output-order list of the input dims that are not 1, grouped where consecutive output dims
  // read consecutive input dims.
  std::vector<std::pair<int64_t, int64_t>> groups;  // [first, last] input dims, output order
  for (int64_t p : perm) {
    if (shape[p] == 1) continue;
    if (!groups.empty()) {
      // The previous non-1 input dim before p must be the group's last for a merge.
      int64_t prev = p - 1;
      while (prev >= 0 && shape[prev] == 1) --prev;
      if (prev >= 0 && prev == groups.back().second) {
        groups.back().second = p;
        continue;
      }
    }
    groups.push_back({p, p});
  }
  std::vector<size_t> order(groups.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return groups[a].first < groups[b].first; });
  CollapsedPerm c;
  std::vector<int64_t> position(groups.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const auto [first, last] = groups[order[i]];
    int64_t size = 1;
    for (int64_t d = first; d <= last; ++d) size *= shape[d];
    c.in.push_back(size);
    position[order[i]] = static_cast<int64_t>(i);
  }
  for (size_t g = 0; g < groups.size(); ++g) c.perm.push_back(position[g]);
  return c;
}

class TransposeKernel : public FastKernel {
 public:
  TransposeKernel(const NodeView& node, std::unique_ptr<Kernel> fallback)
      : FastKernel(std::move(fallback)),
        has_perm_(node.has_attr("perm")),
        perm_(has_perm_ ? node.attr_ints("perm") : std::vector<int64_t>{}) {}

  Status Run(KernelContext& ctx) const override {
    if (!ctx.has_input(0) || !ctx.input_value(0).is_tensor()) return Fallback(ctx);
    const Tensor& x = ctx.input(0);
    const size_t es = PlainSize(x);
    if (es == 0) return Fallback(ctx);
    std::vector<int64_t> perm;
    if (!ValidPerm(has_perm_, perm_, x.rank(), &perm)) return Fallback(ctx);
    Shape out_shape;
    for (int64_t p : perm) out_shape.push_back(x.dim(p));
    const CollapsedPerm c = Collapse(x.shape(), perm);
    const int64_t r = static_cast<int64_t>(c.in.size());
    // Only dims of size 1 move (attention's head split at one token): the elements keep their
    // order, so the output is the input's buffer where the executor allows it.
    if (r <= 1 && ctx.OutputView(0, x, out_shape)) return Status::Ok();
    auto y = NewOutput(ctx, 0, x.dtype(), out_shape);
    if (!y.ok()) return y.status();
    if (x.numel() == 0) return Status::Ok();
    const int threads = ThreadsFor(x.numel(), ctx.intra_op_threads());
    const std::vector<int64_t> in_strides = ContiguousStrides(c.in);
    Shape out;
    std::vector<int64_t> strides;
    for (int64_t p : c.perm) {
      out.push_back(c.in[p]);
      strides.push_back(in_strides[p]);
    }
    if (r <= 1 || c.perm[r - 1] == r - 1) {
      // The innermost dim stays innermost: contiguous runs.
      StridedCopy(x.raw_data(), 0, strides, out, y->raw_data(), es, threads);
      return Status::Ok();
    }
    // A batch of 2-D transposes: output dim q walks the input contiguously, the output's
    // innermost dim walks it with stride `src_stride`.
    const int64_t q = std::find(c.perm.begin(), c.perm.end(), r - 1) - c.perm.begin();
    const std::vector<int64_t> out_strides = ContiguousStrides(out);
    const int64_t rows = out[q], cols = out[r - 1];
    const int64_t src_stride = strides[r - 1], dst_stride = out_strides[q];
    // The other output dims form the batch.
    std::vector<int64_t> batch_dims, batch_src, batch_dst;
    for (int64_t k = 0; k < r - 1; ++k) {
      if (k == q) continue;
      batch_dims.push_back(out[k]);
      batch_src.push_back(strides[k]);
      batch_dst.push_back(out_strides[k]);
    }
    const int64_t batch = ShapeElementCount(batch_dims);
    const int64_t rows_per_task = std::max<int64_t>(64, kTransposeElementsPerTask / cols);
    const int64_t row_blocks = (rows + rows_per_task - 1) / rows_per_task;
    const char* src = static_cast<const char*>(x.raw_data());
    char* dst = static_cast<char*>(y->raw_data());
    const int64_t esi = static_cast<int64_t>(es);
    ParallelFor(batch * row_blocks, std::min(rows, rows_per_task) * cols, threads,
                [&](int64_t begin, int64_t end) {
                  for (int64_t t = begin; t < end; ++t) {
                    int64_t bi = t / row_blocks;
                    const int64_t a0 = (t % row_blocks) * rows_per_task;
                    int64_t soff = a0, doff = a0 * dst_stride;
                    for (size_t k = batch_dims.size(); k-- > 0;) {
                      const int64_t i = bi % batch_dims[k];
                      bi /= batch_dims[k];
                      soff += i * batch_src[k];
                      doff += i * batch_dst[k];
                    }
                    Transpose2D(src + soff * esi, src_stride, dst + doff * esi, dst_stride,
                                std::min(rows_per_task, rows - a0), cols, es);
                  }
                });
    return Status::Ok();
  }

 private:
  // The attribute, read once (symbolic-shape plans run many small Transposes per run).
  bool has_perm_;
  std::vector<int64_t> perm_;
};

}  // namespace

KernelEntry TransposeTiledKernel() {
  return WithFallback("Transpose_any_tiled", HighwayIsa(), SupportsPlainInput0,
                      MakeCreate<TransposeKernel>());
}

}  // namespace onyx::kernels::common
