// PRelu (opset 7 on) on float32 with Highway: y = x < 0 ? slope * x : x, bitwise equal to the
// reference kernel (kernels/reference/activation.cc: one float product, the same select; NaN and
// -0 pass through). Covers the slopes real models carry: one value, one per channel of an
// N x C x ... tensor (slope [C, 1, ..., 1]), one per element of the last axis (slope [C] on a
// channels-last tensor), and a slope of X's own shape; any other broadcast runs the reference.
// The whole kernel lives in this file: the loops (compiled per Highway target), the kernel and
// its kernel-list entry (kernels/kernel_lists.cc).
#include <cstddef>
#include <cstdint>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/common/prelu_hwy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/common/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace onyx::kernels::common::HWY_NAMESPACE {
namespace {

template <class D, class V = hn::VFromD<D>>
HWY_INLINE V PReluVec(D d, V x, V s) {
  return hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Mul(s, x), x);
}

// y[i] = PRelu(x[i], slope[i % period]) for i in [0, n), n a multiple of `period`; period 1
// reads slope[0] for every element. y may equal x.
void PReluRowsImpl(const float* x, const float* slope, size_t period, float* y, size_t n) {
  const hn::ScalableTag<float> d;
  using V = hn::VFromD<decltype(d)>;
  const size_t lanes = hn::Lanes(d);
  if (period == 1) {
    const V s = hn::Set(d, slope[0]);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes) hn::StoreU(PReluVec(d, hn::LoadU(d, x + i), s), d, y + i);
    if (i < n) StoreTail(d, PReluVec(d, LoadTail(d, x + i, n - i, 0.0f), s), y + i, n - i);
    return;
  }
  for (size_t row = 0; row < n; row += period) {
    size_t j = 0;
    for (; j + lanes <= period; j += lanes)
      hn::StoreU(PReluVec(d, hn::LoadU(d, x + row + j), hn::LoadU(d, slope + j)), d, y + row + j);
    if (j < period) {
      const size_t rem = period - j;
      StoreTail(d,
                PReluVec(d, LoadTail(d, x + row + j, rem, 0.0f), LoadTail(d, slope + j, rem, 0.0f)),
                y + row + j, rem);
    }
  }
}

}  // namespace
}  // namespace onyx::kernels::common::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <memory>
#include <vector>

#include "kernels/common/common_kernels.h"
#include "kernels/common/fast_kernel.h"
#include "kernels/op_helpers.h"

namespace onyx::kernels::common {

HWY_EXPORT(PReluRowsImpl);

namespace {

class PReluKernel : public FastKernel {
 public:
  PReluKernel(const NodeView&, std::unique_ptr<Kernel> fallback)
      : FastKernel(std::move(fallback)) {}

  Status Run(KernelContext& ctx) const override {
    if (!ctx.has_input(0) || !ctx.has_input(1) || !IsF32(ctx.input(0)) || !IsF32(ctx.input(1)))
      return Fallback(ctx);
    const Tensor& x = ctx.input(0);
    const Tensor& slope = ctx.input(1);
    const Shape& xs = x.shape();
    const int64_t n = ShapeElementCount(xs);
    const int64_t k = ShapeElementCount(slope.shape());
    if (slope.rank() > x.rank()) return Fallback(ctx);
    // The slope's dims aligned to X's last ones; which form it has decides the loop.
    Shape s(static_cast<size_t>(x.rank() - slope.rank()), 1);
    s.insert(s.end(), slope.shape().begin(), slope.shape().end());
    int64_t period = 0, inner = 1;  // period: slope values per row; inner: elements per value
    if (k == 1) {
      period = 1;
      inner = n;
    } else if (s == xs) {
      period = k;  // same shape: one row
    } else if (x.rank() >= 1 && s.back() == xs.back() && k == xs.back()) {
      period = k;  // one slope per element of the last axis (channels-last)
    } else if (x.rank() >= 2 && s[1] == xs[1] && k == xs[1]) {
      period = 1;  // one slope per channel of N x C x ...: runs of the inner size
      for (size_t a = 2; a < xs.size(); ++a) inner *= xs[a];
    } else {
      return Fallback(ctx);
    }
    Tensor y = ctx.Output(0, DType::kFloat, xs);
    const float* xp = x.data<float>();
    const float* sp = slope.data<float>();
    float* yp = y.data<float>();
    if (n == 0) return Status::Ok();
    if (inner == n || period > 1) {
      // Rows of `period` elements (or one run with a single slope), split between the threads.
      const int64_t rows = period > 1 ? n / period : 1;
      const int64_t per_row = period > 1 ? period : n;
      ParallelFor(rows, per_row, ThreadsFor(n, ctx.intra_op_threads()),
                  [&](int64_t begin, int64_t end) {
                    HWY_DYNAMIC_DISPATCH(PReluRowsImpl)
                    (xp + begin * per_row, sp, period > 1 ? period : 1, yp + begin * per_row,
                     static_cast<size_t>((end - begin) * per_row));
                  });
      return Status::Ok();
    }
    // Per channel: run r of `inner` elements has slope[r % C].
    const int64_t runs = n / inner, channels = xs[1];
    ParallelFor(
        runs, inner, ThreadsFor(n, ctx.intra_op_threads()), [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r) HWY_DYNAMIC_DISPATCH(PReluRowsImpl)
          (xp + r * inner, sp + r % channels, 1, yp + r * inner, static_cast<size_t>(inner));
        });
    return Status::Ok();
  }
};

Status SupportsPRelu(const NodeView&, const std::vector<TypeInfo>& types) {
  ONYX_RETURN_IF_ERROR(RequireInputType(types, 0, DType::kFloat));
  return RequireInputType(types, 1, DType::kFloat);
}

}  // namespace

// Opset 7 on: unidirectional numpy broadcasting (opsets 1-6 align a [C] slope with axis 1).
KernelEntry PReluHwyKernel() {
  return WithFallback("PRelu_f32_hwy", HighwayIsa(), SupportsPRelu, MakeCreate<PReluKernel>(), 7);
}

}  // namespace onyx::kernels::common
#endif  // HWY_ONCE
