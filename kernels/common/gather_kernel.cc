// Gather for every plain element type (1, 2, 4 or 8 bytes): data viewed as [outer, dim, inner],
// each output row data[o, index, :] is one memcpy of inner elements (one element copy when
// inner == 1). Indices are int32 or int64; negative ones count from the back. An index out of
// range goes to the reference kernel, which reports it naming the node, input and position.
#include <cstring>
#include <string>
#include <vector>

#include "kernels/common/fast_kernel.h"
#include "kernels/op_helpers.h"

namespace onyx::kernels::common {
namespace {

template <typename E>
void GatherElements(const E* src, const std::vector<int64_t>& idx, int64_t outer, int64_t dim,
                    E* dst, int threads) {
  const int64_t n = static_cast<int64_t>(idx.size());
  ParallelFor(outer * n, 1, threads, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) dst[t] = src[(t / n) * dim + idx[t % n]];
  });
}

class GatherKernel : public FastKernel {
 public:
  GatherKernel(const NodeView& node, std::unique_ptr<Kernel> fallback)
      : FastKernel(std::move(fallback)), axis_(node.attr_int("axis", 0)) {}

  Status Run(KernelContext& ctx) const override {
    if (!ctx.has_input(0) || !ctx.has_input(1) || !ctx.input_value(0).is_tensor() ||
        !ctx.input_value(1).is_tensor())
      return Fallback(ctx);
    const Tensor& data = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    const size_t es = PlainSize(data);
    if (es == 0 || data.rank() == 0) return Fallback(ctx);
    if (indices.dtype() != DType::kInt64 && indices.dtype() != DType::kInt32) return Fallback(ctx);
    const int64_t rank = data.rank();
    int64_t axis = axis_;
    if (axis < -rank || axis >= rank) return Fallback(ctx);
    if (axis < 0) axis += rank;
    const int64_t dim = data.dim(axis);
    std::vector<int64_t> idx = TensorToInts(indices);
    for (int64_t& v : idx) {
      if (v < -dim || v >= dim) return Fallback(ctx);  // the reference reports the bad index
      if (v < 0) v += dim;
    }
    Shape shape(data.shape().begin(), data.shape().begin() + axis);
    shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
    shape.insert(shape.end(), data.shape().begin() + axis + 1, data.shape().end());
    auto y = NewOutput(ctx, 0, data.dtype(), shape);
    if (!y.ok()) return y.status();
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= data.dim(d);
    for (int64_t d = axis + 1; d < rank; ++d) inner *= data.dim(d);
    const int64_t n = static_cast<int64_t>(idx.size());
    if (outer * n * inner == 0) return Status::Ok();
    const int threads = ThreadsFor(outer * n * inner, ctx.intra_op_threads());
    const void* src = data.raw_data();
    void* dst = y->raw_data();
    if (inner == 1) {
      switch (es) {
        case 1:
          GatherElements(static_cast<const uint8_t*>(src), idx, outer, dim,
                         static_cast<uint8_t*>(dst), threads);
          break;
        case 2:
          GatherElements(static_cast<const uint16_t*>(src), idx, outer, dim,
                         static_cast<uint16_t*>(dst), threads);
          break;
        case 4:
          GatherElements(static_cast<const uint32_t*>(src), idx, outer, dim,
                         static_cast<uint32_t*>(dst), threads);
          break;
        default:
          GatherElements(static_cast<const uint64_t*>(src), idx, outer, dim,
                         static_cast<uint64_t*>(dst), threads);
          break;
      }
      return Status::Ok();
    }
    const size_t row = static_cast<size_t>(inner) * es;
    const char* s = static_cast<const char*>(src);
    char* o = static_cast<char*>(dst);
    ParallelFor(outer * n, inner, threads, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t)
        std::memcpy(o + t * row, s + ((t / n) * dim + idx[t % n]) * row, row);
    });
    return Status::Ok();
  }

 private:
  int64_t axis_;  // read once: a plan for symbolic shapes runs many small Gathers
};

}  // namespace

KernelEntry GatherMemcpyKernel() {
  return WithFallback(
      "Gather_any_memcpy", KernelIsa{},
      [](const NodeView&, const std::vector<TypeInfo>& types) -> Status {
        ONYX_RETURN_IF_ERROR(RequirePlainInput(types, 0));
        if (types.size() < 2 || !types[1].is_tensor() ||
            (types[1].elem != DType::kInt64 && types[1].elem != DType::kInt32))
          return Unsupported("indices are not int32/int64");
        return Status::Ok();
      },
      MakeCreate<GatherKernel>());
}

}  // namespace onyx::kernels::common
