// Reshape, Flatten, Squeeze and Unsqueeze for every plain element type: the output shape in a
// few integer steps and the data copied only when the planner did not give the output the input's
// own buffer. A plan for symbolic shapes runs dozens of them per model run on shape vectors (GPT-2
// decode: 78 per step); the reference kernels' symbolic-dim machinery cost about 0.7 us each.
// Anything unusual (a bad axis, a count that does not match) goes to the reference kernel for
// its error message.
#include <cstring>
#include <vector>

#include "kernels/common/fast_kernel.h"
#include "kernels/op_helpers.h"

namespace onyx::kernels::common {
namespace {

// Reads input i as a list of int64 (rank 0 or 1); false when it is anything else.
bool Int64List(KernelContext& ctx, int i, const int64_t** data, int64_t* count) {
  if (!ctx.has_input(i) || !ctx.input_value(i).is_tensor()) return false;
  const Tensor& t = ctx.input(i);
  if (t.dtype() != DType::kInt64 || t.rank() > 1) return false;
  *data = t.data<int64_t>();
  *count = t.numel();
  return true;
}

// The output of x's elements under `shape` (same count, checked by the caller): x's own buffer
// when the executor allows it or the planner put the output there, else a copy.
Status ViewOutput(KernelContext& ctx, const Tensor& x, const Shape& shape) {
  if (ctx.OutputView(0, x, shape)) return Status::Ok();
  auto y = NewOutput(ctx, 0, x.dtype(), shape);
  if (!y.ok()) return y.status();
  if (y->raw_data() != x.raw_data() && x.nbytes() > 0)
    std::memcpy(y->raw_data(), x.raw_data(), x.nbytes());
  return Status::Ok();
}

class ReshapeView : public FastKernel {
 public:
  ReshapeView(const NodeView& node, std::unique_ptr<Kernel> fallback)
      : FastKernel(std::move(fallback)), allowzero_(node.attr_int("allowzero", 0) != 0) {}

  Status Run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t* req = nullptr;
    int64_t n = 0;
    if (PlainSize(x) == 0 || !Int64List(ctx, 1, &req, &n)) return Fallback(ctx);
    Shape shape(static_cast<size_t>(n));
    int64_t known = 1, infer_at = -1;
    for (int64_t i = 0; i < n; ++i) {
      int64_t d = req[i];
      if (d == 0 && !allowzero_) {
        if (i >= x.rank()) return Fallback(ctx);
        d = x.dim(i);
      }
      if (d == -1) {
        if (infer_at >= 0) return Fallback(ctx);
        infer_at = i;
        continue;
      }
      if (d < 0 || !CheckedMul(known, d, &known)) return Fallback(ctx);
      shape[i] = d;
    }
    if (infer_at >= 0) {
      if (known == 0 || x.numel() % known != 0) return Fallback(ctx);
      shape[infer_at] = x.numel() / known;
    } else if (known != x.numel()) {
      return Fallback(ctx);
    }
    return ViewOutput(ctx, x, shape);
  }

 private:
  bool allowzero_;
};

class FlattenView : public FastKernel {
 public:
  FlattenView(const NodeView& node, std::unique_ptr<Kernel> fallback)
      : FastKernel(std::move(fallback)), axis_(node.attr_int("axis", 1)) {}

  Status Run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int64_t rank = x.rank();
    // Negative axes (opset 11) are checked by the reference kernel, with its message.
    if (PlainSize(x) == 0 || axis_ < 0 || axis_ > rank) return Fallback(ctx);
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < rank; ++i) (i < axis_ ? outer : inner) *= x.dim(i);
    return ViewOutput(ctx, x, {outer, inner});
  }

 private:
  int64_t axis_;
};

// Squeeze and Unsqueeze from opset 13 on (axes as an input).
class SqueezeView : public FastKernel {
 public:
  SqueezeView(const NodeView& node, std::unique_ptr<Kernel> fallback)
      : FastKernel(std::move(fallback)), unsqueeze_(node.op_type() == "Unsqueeze") {}

  Status Run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    if (PlainSize(x) == 0) return Fallback(ctx);
    const int64_t* axes = nullptr;
    int64_t n = 0;
    const bool has_axes = ctx.has_input(1);
    if (has_axes && !Int64List(ctx, 1, &axes, &n)) return Fallback(ctx);
    // No axes for Unsqueeze, or an empty list for either: the reference kernel's reading.
    if ((unsqueeze_ && !has_axes) || (has_axes && n == 0)) return Fallback(ctx);
    const int64_t rank = x.rank();
    // Marks of the axes named, in the output's dims (Unsqueeze) or the input's (Squeeze).
    const int64_t marked_rank = unsqueeze_ ? rank + n : rank;
    if (marked_rank > 64) return Fallback(ctx);
    uint64_t marks = 0;
    for (int64_t i = 0; i < n; ++i) {
      int64_t a = axes[i];
      if (a < 0) a += marked_rank;
      if (a < 0 || a >= marked_rank || (marks >> a & 1)) return Fallback(ctx);
      marks |= uint64_t{1} << a;
    }
    Shape shape;
    if (unsqueeze_) {
      shape.resize(static_cast<size_t>(marked_rank));
      for (int64_t o = 0, i = 0; o < marked_rank; ++o) shape[o] = (marks >> o & 1) ? 1 : x.dim(i++);
    } else {
      for (int64_t i = 0; i < rank; ++i) {
        const bool drop = has_axes ? (marks >> i & 1) != 0 : x.dim(i) == 1;
        if (drop && x.dim(i) != 1) return Fallback(ctx);
        if (!drop) shape.push_back(x.dim(i));
      }
    }
    return ViewOutput(ctx, x, shape);
  }

 private:
  bool unsqueeze_;
};

}  // namespace

// Reshape from opset 5 (shape as an input), Squeeze/Unsqueeze from 13 (axes as an input).
KernelEntry ReshapeViewKernel() {
  return WithFallback("Reshape_any_view", KernelIsa{}, SupportsPlainInput0,
                      MakeCreate<ReshapeView>(), 5);
}

KernelEntry FlattenViewKernel() {
  return WithFallback("Flatten_any_view", KernelIsa{}, SupportsPlainInput0,
                      MakeCreate<FlattenView>());
}

KernelEntry SqueezeViewKernel(const std::string& op) {
  return WithFallback(op + "_any_view", KernelIsa{}, SupportsPlainInput0, MakeCreate<SqueezeView>(),
                      13);
}

}  // namespace onyx::kernels::common
