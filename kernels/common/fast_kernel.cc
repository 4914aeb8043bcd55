// Registration plumbing of the kernels in kernels/common (see fast_kernel.h).
#include "kernels/common/fast_kernel.h"

namespace onyx::kernels::common {

KernelEntry WithFallback(const std::string& name, const KernelIsa& isa, SupportsFn supports,
                         FastCreateFn create, int64_t since, int64_t until) {
  return WithFallback(
      name, isa, std::move(supports),
      FastCreateWithInfoFn([create](const NodeView& node, const std::vector<TypeInfo>& types,
                                    const KernelCreateInfo&, std::unique_ptr<Kernel> fallback) {
        return create(node, types, std::move(fallback));
      }),
      since, until);
}

KernelEntry WithFallback(const std::string& name, const KernelIsa& isa, SupportsFn supports,
                         FastCreateWithInfoFn create, int64_t since, int64_t until) {
  return KernelEntry(
      [name, isa, supports, create](const OpDef& def) {
        // The reference kernel is registered first, so it is the last impl of the definition.
        CreateFn reference = def.impls.back().create;
        KernelImpl impl;
        impl.name = name;
        impl.isa = isa;
        impl.supports = supports;
        if (!reference)  // a reference kernel that needs plan-time information: none such yet
          impl.supports = [](const NodeView&, const std::vector<TypeInfo>&) {
            return Unsupported("the reference kernel cannot be created as the fallback");
          };
        impl.create_with_info =
            [reference, create](const NodeView& node, const std::vector<TypeInfo>& types,
                                const KernelCreateInfo& info) -> StatusOr<std::unique_ptr<Kernel>> {
          auto fallback = reference(node, types);
          if (!fallback.ok()) return fallback.status();
          return create(node, types, info, std::move(fallback).value());
        };
        return impl;
      },
      since, until);
}

bool ToUnary(const FusedActivation& a, UnaryOp* op, UnaryParams* p) {
  p->alpha = a.alpha;
  p->beta = a.beta;
  const ActivationRule* rule = FindActivationRule(a.kind);
  if (!rule || !rule->has_unary_op) return false;
  *op = rule->unary_op;
  return true;
}

LoopActivation SplitLoopActivation(const FusedActivation& a) {
  LoopActivation out;
  if (a.kind == ActivationKind::kRelu) {
    out.in_loop = VectorActivation::kRelu;
  } else if (a.kind == ActivationKind::kClip) {
    out.in_loop = VectorActivation::kClip;
    out.clip_lo = a.alpha;
    out.clip_hi = a.beta;
  } else {
    out.has_unary = ToUnary(a, &out.unary, &out.unary_params);
  }
  return out;
}

void LoopActivation::ApplyUnary(float* y, int64_t n, int threads) const {
  if (!has_unary) return;
  ParallelFor(n, 1, ThreadsFor(n, threads), [&](int64_t i0, int64_t i1) {
    UnaryF32(unary, unary_params, y + i0, y + i0, i1 - i0);
  });
}

namespace {
Status CheckTensor(const std::vector<TypeInfo>& types, int i) {
  if (i >= static_cast<int>(types.size()) || !types[i].is_tensor())
    return Unsupported("input ", i, " is absent or not a tensor");
  return Status::Ok();
}
}  // namespace

Status RequireInputType(const std::vector<TypeInfo>& types, int i, DType t) {
  ONYX_RETURN_IF_ERROR(CheckTensor(types, i));
  if (types[i].elem != t)
    return Unsupported("input ", i, " has type ", DTypeName(types[i].elem), ", not ", DTypeName(t));
  return Status::Ok();
}

Status RequireAllInputsType(const std::vector<TypeInfo>& types, DType t, int min_inputs) {
  if (static_cast<int>(types.size()) < min_inputs)
    return Unsupported("fewer than ", min_inputs, " inputs");
  for (int i = 0; i < static_cast<int>(types.size()); ++i)
    ONYX_RETURN_IF_ERROR(RequireInputType(types, i, t));
  return Status::Ok();
}

Status RequirePlainInput(const std::vector<TypeInfo>& types, int i) {
  ONYX_RETURN_IF_ERROR(CheckTensor(types, i));
  const DType t = types[i].elem;
  if (t == DType::kUndefined || t == DType::kString)
    return Unsupported("input ", i, " is not plain data");
  const size_t size = DTypeSize(t);
  if (size != 1 && size != 2 && size != 4 && size != 8)
    return Unsupported("input ", i, " has ", size, "-byte elements");
  return Status::Ok();
}

Status SupportsPlainInput0(const NodeView&, const std::vector<TypeInfo>& types) {
  return RequirePlainInput(types, 0);
}

size_t PlainSize(const Tensor& t) {
  if (t.dtype() == DType::kString || t.dtype() == DType::kUndefined) return 0;
  const size_t s = DTypeSize(t.dtype());
  return s == 1 || s == 2 || s == 4 || s == 8 ? s : 0;
}

PanelWeights PackPanelWeights(const float* rows_nk, int64_t n, int64_t k) {
  PanelWeights w;
  w.n = n;
  w.k = k;
  w.panel = PanelGemvPlainPanel();
  w.data = PackColumnPanels(rows_nk, n, k, w.panel);
  return w;
}

void PanelWeightsProduct(const PanelWeights& w, const float* a, int64_t rows, int64_t lda,
                         const float* bias, const float* z, float* y, int64_t ldy, int threads) {
  PanelGemvArgs args;
  args.a = a;
  args.lda = lda;
  args.rows = rows;
  args.b = w.data.data();
  args.panel = w.panel;
  args.panel_stride = w.k * w.panel;
  args.ldb = w.panel;
  args.b_padded = true;
  args.k = w.k;
  args.n = w.n;
  args.bias = bias;
  args.z = z;
  args.y = y;
  args.ldy = ldy;
  const int64_t panels = (w.n + w.panel - 1) / w.panel;
  ParallelFor(panels, rows * w.k * w.panel, threads,
              [&](int64_t begin, int64_t end) { PanelGemvF32(args, begin, end); });
}

}  // namespace onyx::kernels::common
