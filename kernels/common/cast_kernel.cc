// Cast from bool or an integer of up to 32 bits to float32 or double (one-hot encodings and masks
// turned into floats: Magika's [1, 2048, 257] bool -> float took 0.25 ms on the reference's
// per-type dispatch). Every such value converts exactly or rounds as C++ does, as the reference
// computes it; other pairs (float sources, 64-bit integers, strings, float8) stay on the reference.
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/common/fast_kernel.h"
#include "kernels/op_helpers.h"

namespace onyx::kernels::common {
namespace {

bool SourceTaken(DType t) {
  switch (t) {
    case DType::kBool:
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kInt32:
      return true;
    default:
      return false;
  }
}

template <typename S, typename D>
void Convert(const S* src, D* dst, int64_t n, int threads) {
  ParallelFor(n, 1, threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dst[i] = static_cast<D>(src[i]);
  });
}

template <typename D>
bool ConvertFrom(DType from, const void* src, D* dst, int64_t n, int threads) {
  switch (from) {
    case DType::kBool:
      Convert(static_cast<const bool*>(src), dst, n, threads);
      return true;
    case DType::kInt8:
      Convert(static_cast<const int8_t*>(src), dst, n, threads);
      return true;
    case DType::kUInt8:
      Convert(static_cast<const uint8_t*>(src), dst, n, threads);
      return true;
    case DType::kInt16:
      Convert(static_cast<const int16_t*>(src), dst, n, threads);
      return true;
    case DType::kUInt16:
      Convert(static_cast<const uint16_t*>(src), dst, n, threads);
      return true;
    case DType::kInt32:
      Convert(static_cast<const int32_t*>(src), dst, n, threads);
      return true;
    default:
      return false;
  }
}

// The target type: an int from opset 6, the type's name ("FLOAT", "DOUBLE") before; other names
// give kUndefined, which the kernel declines.
DType TargetOf(const NodeView& node) {
  const ir::Attribute* a = node.node().attr("to");
  if (a && a->type == ir::AttrType::kString)
    return a->s == "FLOAT" ? DType::kFloat : a->s == "DOUBLE" ? DType::kDouble : DType::kUndefined;
  return static_cast<DType>(node.attr_int("to", 0));
}

class CastKernel : public FastKernel {
 public:
  CastKernel(const NodeView& node, std::unique_ptr<Kernel> fallback)
      : FastKernel(std::move(fallback)), to_(TargetOf(node)) {}

  Status Run(KernelContext& ctx) const override {
    if (!ctx.input_value(0).is_tensor() || !SourceTaken(ctx.input(0).dtype())) return Fallback(ctx);
    const Tensor& x = ctx.input(0);
    Tensor y = ctx.Output(0, to_, x.shape());
    const int threads = ThreadsFor(x.numel(), ctx.intra_op_threads());
    const bool ok =
        to_ == DType::kFloat
            ? ConvertFrom(x.dtype(), x.raw_data(), y.data<float>(), x.numel(), threads)
            : ConvertFrom(x.dtype(), x.raw_data(), y.data<double>(), x.numel(), threads);
    return ok ? Status::Ok() : Fallback(ctx);
  }

 private:
  DType to_;
};

Status SupportsCast(const NodeView& node, const std::vector<TypeInfo>& types) {
  const DType to = TargetOf(node);
  if (to != DType::kFloat && to != DType::kDouble)
    return node.NotSupported("to float or double only");
  if (types.empty() || !types[0].is_tensor() || !SourceTaken(types[0].elem))
    return node.NotSupported("from bool or an integer of up to 32 bits only");
  return Status::Ok();
}

}  // namespace

KernelEntry CastConvertKernel() {
  return WithFallback("Cast_any_convert", KernelIsa{}, SupportsCast, MakeCreate<CastKernel>());
}

}  // namespace onyx::kernels::common
