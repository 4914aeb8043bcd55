// Float32 Softmax and LogSoftmax over the Highway loops: contiguous rows when the normalised axis
// is innermost (always so for the opset < 13 flattening), column blocks of [n, inner] slabs
// otherwise. Hardmax and other types run on the reference kernel.
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/common/fast_kernel.h"
#include "kernels/common/simd_kernels.h"
#include "kernels/op_helpers.h"
#include "kernels/ops/softmax_attrs.h"

namespace onyx::kernels::common {
namespace {

// Work of one element relative to a copy (three passes and an exp).
constexpr int64_t kSoftmaxWork = 8;
// Columns of one slab task: enough to amortise the passes, small enough to split across threads.
constexpr int64_t kSlabColumns = 256;

class SoftmaxF32Kernel : public FastKernel {
 public:
  SoftmaxF32Kernel(std::unique_ptr<Kernel> fallback, SoftmaxKind kind)
      : FastKernel(std::move(fallback)), kind_(kind) {}

  Status Run(KernelContext& ctx) const override {
    if (!ctx.has_input(0) || !ctx.input_value(0).is_tensor() || !IsF32(ctx.input(0)))
      return Fallback(ctx);
    const Tensor& x = ctx.input(0);
    const int64_t rank = x.rank();
    if (rank == 0 || x.numel() == 0) return Fallback(ctx);
    StatusOr<SoftmaxAttrs> attrs = ParseSoftmax(ctx.node(), rank);
    if (!attrs.ok()) return Fallback(ctx);  // the reference kernel reports it
    const SoftmaxView v = attrs.value().ViewOf(x.shape());
    const int64_t outer = v.outer, n = v.n, inner = v.inner;
    Tensor y = ctx.Output(0, DType::kFloat, x.shape());
    const float* src = x.data<float>();
    float* dst = y.data<float>();
    const int threads = ThreadsFor(x.numel() * kSoftmaxWork, ctx.intra_op_threads());
    if (inner == 1) {
      ParallelFor(outer, n * kSoftmaxWork, threads, [&](int64_t b, int64_t e) {
        SoftmaxRowsF32(kind_, src + b * n, dst + b * n, e - b, n);
      });
      return Status::Ok();
    }
    // One task per (slab, column block).
    const int64_t blocks = (inner + kSlabColumns - 1) / kSlabColumns;
    ParallelFor(outer * blocks, n * std::min(inner, kSlabColumns) * kSoftmaxWork, threads,
                [&](int64_t b, int64_t e) {
                  std::vector<float> scratch(static_cast<size_t>(2 * kSlabColumns));
                  for (int64_t t = b; t < e; ++t) {
                    const int64_t o = t / blocks, c0 = (t % blocks) * kSlabColumns;
                    const int64_t cols = std::min(kSlabColumns, inner - c0);
                    const int64_t base = o * n * inner + c0;
                    SoftmaxSlabF32(kind_, src + base, dst + base, n, cols, inner, scratch.data());
                  }
                });
    return Status::Ok();
  }

 private:
  SoftmaxKind kind_;
};

Status SupportsSoftmax(const NodeView&, const std::vector<TypeInfo>& types) {
  return RequireInputType(types, 0, DType::kFloat);
}

}  // namespace

KernelEntry SoftmaxHwyKernel(const std::string& op, SoftmaxKind kind) {
  return WithFallback(
      op + "_f32_hwy", HighwayIsa(), SupportsSoftmax,
      [kind](const NodeView&, const std::vector<TypeInfo>&,
             std::unique_ptr<Kernel> fallback) -> StatusOr<std::unique_ptr<Kernel>> {
        return std::unique_ptr<Kernel>(new SoftmaxF32Kernel(std::move(fallback), kind));
      });
}

}  // namespace onyx::kernels::common
