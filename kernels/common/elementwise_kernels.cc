// Float32 elementwise kernels over the Highway loops: unary math and activations, binary
// arithmetic with numpy broadcasting (flat, scalar and per-channel/row fast paths, collapsed
// inner runs otherwise), and variadic Sum/Max/Min. Anything else runs on the reference kernel.
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/activation_rules.h"
#include "kernels/common/fast_kernel.h"
#include "kernels/common/simd_kernels.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/elementwise_loops.h"

namespace onyx::kernels::common {
namespace {

// Elements per thread chunk is decided by ParallelFor; this is the work of one element relative
// to a copy, so cheap ops stay single-threaded on small tensors.
constexpr int64_t kCheapWork = 1;
constexpr int64_t kTranscendentalWork = 8;

// ---- unary ----

struct UnarySpec {
  UnaryOp op;
  int64_t work;
};

class UnaryKernel : public FastKernel {
 public:
  UnaryKernel(std::unique_ptr<Kernel> fallback, UnarySpec spec, UnaryParams params)
      : FastKernel(std::move(fallback)), spec_(spec), params_(params) {}

  Status Run(KernelContext& ctx) const override {
    if (!ctx.has_input(0) || !ctx.input_value(0).is_tensor() || !IsF32(ctx.input(0)))
      return Fallback(ctx);
    UnaryParams p = params_;
    if (spec_.op == UnaryOp::kClip && ctx.node().opset() >= 11) {
      // min and max are optional scalar inputs from opset 11.
      for (int i = 1; i <= 2; ++i) {
        if (!ctx.has_input(i)) continue;
        if (!ctx.input_value(i).is_tensor()) return Fallback(ctx);
        const Tensor& bound = ctx.input(i);
        if (!IsF32(bound) || bound.numel() != 1) return Fallback(ctx);
        (i == 1 ? p.alpha : p.beta) = bound.data<float>()[0];
      }
    }
    const Tensor& x = ctx.input(0);
    Tensor y = ctx.Output(0, DType::kFloat, x.shape());
    const float* src = x.data<float>();
    float* dst = y.data<float>();
    const int threads = ThreadsFor(x.numel() * spec_.work, ctx.intra_op_threads());
    ParallelFor(x.numel(), spec_.work, threads,
                [&](int64_t b, int64_t e) { UnaryF32(spec_.op, p, src + b, dst + b, e - b); });
    return Status::Ok();
  }

 private:
  UnarySpec spec_;
  UnaryParams params_;
};

Status SupportsUnary(const NodeView& node, const std::vector<TypeInfo>& types) {
  ONYX_RETURN_IF_ERROR(RequireInputType(types, 0, DType::kFloat));
  if (FindActivationRule(node.op_type())) {
    const Status parsed = ParseActivation(node).status();  // e.g. Gelu's approximate
    if (!parsed.ok()) return Unsupported(parsed.message());
  }
  if (node.op_type() == "Clip" && node.opset() >= 11) {
    for (int i = 1; i <= 2 && i < static_cast<int>(types.size()); ++i)
      if (types[i].kind != TypeInfo::Kind::kUnknown)
        ONYX_RETURN_IF_ERROR(RequireInputType(types, i, DType::kFloat));
  }
  return Status::Ok();
}

// Work per element, for the thread split: a transcendental costs about eight plain operations.
int64_t UnaryWork(UnaryOp op) {
  for (const ActivationRule& rule : ActivationRules())  // an activation: the table says
    if (rule.has_unary_op && rule.unary_op == op)
      return rule.cheap ? kCheapWork : kTranscendentalWork;
  switch (op) {
    case UnaryOp::kSqrt:
    case UnaryOp::kNeg:
    case UnaryOp::kAbs:
    case UnaryOp::kReciprocal:
      return kCheapWork;
    default:
      return kTranscendentalWork;
  }
}

}  // namespace

KernelEntry UnaryHwyKernel(const std::string& op, UnaryOp kind) {
  const int64_t work = UnaryWork(kind);
  return WithFallback(
      op + "_f32_hwy", HighwayIsa(), SupportsUnary,
      [kind, work](const NodeView& node, const std::vector<TypeInfo>&,
                   std::unique_ptr<Kernel> fallback) -> StatusOr<std::unique_ptr<Kernel>> {
        // An activation: the table's loop (Gelu: its form) and parameters (Clip from opset 11:
        // the float range, its bound inputs are read per run). None for Exp, Log, ...
        UnaryOp op = kind;
        UnaryParams params;
        if (FindActivationRule(node.op_type())) {
          StatusOr<Activation> a = ParseActivation(node);  // SupportsUnary accepted it
          const ActivationRule* rule = a.ok() ? FindActivationRule(a.value().kind) : nullptr;
          if (rule && rule->has_unary_op) op = rule->unary_op;
          if (a.ok()) {
            params.alpha = a.value().alpha;
            params.beta = a.value().beta;
          }
        }
        return std::unique_ptr<Kernel>(
            new UnaryKernel(std::move(fallback), UnarySpec{op, work}, params));
      });
}

namespace {

// ---- binary with broadcasting ----

// dst = a op b over the numpy broadcast of a_shape and b_shape to `out`. dst may equal a when a
// has out's element count (in-place), or hold out's elements otherwise.
void BroadcastBinary(BinaryOp op, const float* a, const Shape& a_shape, const float* b,
                     const Shape& b_shape, float* dst, const Shape& out, int threads) {
  const int64_t n = ShapeElementCount(out);
  if (n == 0) return;
  threads = ThreadsFor(n, threads);
  const int64_t na = ShapeElementCount(a_shape);
  const int64_t nb = ShapeElementCount(b_shape);
  auto flat = [&](Operands layout) {
    const bool a_vec = layout != Operands::kScalarVec, b_vec = layout != Operands::kVecScalar;
    ParallelFor(n, kCheapWork, threads, [&](int64_t s, int64_t e) {
      BinaryF32(op, layout, a_vec ? a + s : a, b_vec ? b + s : b, dst + s, e - s);
    });
  };
  if (na == n && nb == n) return flat(Operands::kVecVec);
  if (nb == 1 && na == n) return flat(Operands::kVecScalar);
  if (na == 1 && nb == n) return flat(Operands::kScalarVec);
  // Per-channel, per-row and general broadcasts: an odometer over collapsed outer dims and one
  // contiguous or broadcast operand per inner run ([N,C,H,W] + [1,C,1,1] gives runs of H*W with
  // a scalar B; [B,S,768] + [768] gives runs of 768 with both contiguous).
  const reference::BroadcastPlan plan = reference::MakeBroadcastPlan({a_shape, b_shape}, out);
  const int64_t sa = plan.inner_stride[0], sb = plan.inner_stride[1];
  reference::ForEachRunParallel(plan, threads, [&](int64_t o, const int64_t* off, int64_t len) {
    const float* pa = a + off[0];
    const float* pb = b + off[1];
    float* pd = dst + o;
    if (sa == 1 && sb == 1) {
      BinaryF32(op, Operands::kVecVec, pa, pb, pd, len);
    } else if (sa == 1) {
      BinaryF32(op, Operands::kVecScalar, pa, pb, pd, len);
    } else if (sb == 1) {
      BinaryF32(op, Operands::kScalarVec, pa, pb, pd, len);
    } else {
      float v;
      BinaryF32(op, Operands::kVecVec, pa, pb, &v, 1);
      for (int64_t i = 0; i < len; ++i) pd[i] = v;
    }
  });
}

// Opset < 7: B lines up with A from `axis` (default: trailing) when broadcast = 1. Returns false
// when the shapes do not fit (the reference kernel then reports it).
bool LegacyBShape(const NodeView& node, const Shape& a, const Shape& b, Shape* eff) {
  if (node.attr_int("broadcast", 0) == 0) {
    *eff = b;
    return a == b;
  }
  const int64_t ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
  if (rb > ra) return false;
  const int64_t axis = node.has_attr("axis") ? node.attr_int("axis", 0) : ra - rb;
  const int64_t start = axis < 0 ? axis + ra : axis;
  if (start < 0 || start + rb > ra) return false;
  eff->assign(a.size(), 1);
  for (int64_t i = 0; i < rb; ++i) {
    if (b[i] != 1 && b[i] != a[start + i]) return false;
    (*eff)[start + i] = b[i];
  }
  return true;
}

class BinaryKernel : public FastKernel {
 public:
  BinaryKernel(std::unique_ptr<Kernel> fallback, BinaryOp op)
      : FastKernel(std::move(fallback)), op_(op) {}

  Status Run(KernelContext& ctx) const override {
    if (ctx.num_inputs() != 2 || !ctx.has_input(0) || !ctx.has_input(1) ||
        !ctx.input_value(0).is_tensor() || !ctx.input_value(1).is_tensor() ||
        !IsF32(ctx.input(0)) || !IsF32(ctx.input(1)))
      return Fallback(ctx);
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Shape b_shape = b.shape();
    if (ctx.node().opset() < 7 && !LegacyBShape(ctx.node(), a.shape(), b.shape(), &b_shape))
      return Fallback(ctx);
    auto out = BroadcastShapes({a.shape(), b_shape});
    if (!out.ok()) return Fallback(ctx);
    Tensor y = ctx.Output(0, DType::kFloat, *out);
    BroadcastBinary(op_, a.data<float>(), a.shape(), b.data<float>(), b_shape, y.data<float>(),
                    *out, ctx.intra_op_threads());
    return Status::Ok();
  }

 private:
  BinaryOp op_;
};

Status SupportsBinary(const NodeView&, const std::vector<TypeInfo>& types) {
  if (types.size() != 2) return Unsupported("expects exactly two inputs");
  return RequireAllInputsType(types, DType::kFloat, 2);
}

}  // namespace

KernelEntry BinaryHwyKernel(const std::string& op, BinaryOp kind) {
  return WithFallback(
      op + "_f32_hwy", HighwayIsa(), SupportsBinary,
      [kind](const NodeView&, const std::vector<TypeInfo>&,
             std::unique_ptr<Kernel> fallback) -> StatusOr<std::unique_ptr<Kernel>> {
        return std::unique_ptr<Kernel>(new BinaryKernel(std::move(fallback), kind));
      });
}

namespace {

// ---- Pow with a scalar exponent of 1, 2, 3, 0.5 or -1 (x^2 in variance decompositions, x^3 in
// the tanh GELU, square roots) ----

// The unary op equal to Pow(x, e) for e in {2, 3, 0.5, -1}, or false (e = 1 is a plain copy).
bool PowAsUnary(double e, UnaryOp* op) {
  if (e == 2) {
    *op = UnaryOp::kSquare;
  } else if (e == 3) {
    *op = UnaryOp::kCube;
  } else if (e == 0.5) {
    *op = UnaryOp::kPowHalf;
  } else if (e == -1) {
    *op = UnaryOp::kReciprocal;
  } else {
    return false;
  }
  return true;
}

class PowKernel : public FastKernel {
 public:
  explicit PowKernel(std::unique_ptr<Kernel> fallback) : FastKernel(std::move(fallback)) {}

  Status Run(KernelContext& ctx) const override {
    if (ctx.num_inputs() != 2 || !ctx.has_input(0) || !ctx.has_input(1) ||
        !ctx.input_value(0).is_tensor() || !ctx.input_value(1).is_tensor() || !IsF32(ctx.input(0)))
      return Fallback(ctx);
    const Tensor& x = ctx.input(0);
    const Tensor& e = ctx.input(1);
    const DType et = e.dtype();
    if (e.numel() != 1 || (et != DType::kFloat && et != DType::kInt32 && et != DType::kInt64))
      return Fallback(ctx);
    UnaryOp op = UnaryOp::kSquare;
    const double exponent = ElementAsDouble(e, 0);
    if (exponent != 1 && !PowAsUnary(exponent, &op)) return Fallback(ctx);
    auto out = BroadcastShapes({x.shape(), e.shape()});
    if (!out.ok() || ShapeElementCount(*out) != x.numel()) return Fallback(ctx);
    Tensor y = ctx.Output(0, DType::kFloat, *out);
    const float* src = x.data<float>();
    float* dst = y.data<float>();
    if (exponent == 1) {
      if (dst != src) std::memcpy(dst, src, static_cast<size_t>(x.numel()) * sizeof(float));
      return Status::Ok();
    }
    const int threads = ThreadsFor(x.numel(), ctx.intra_op_threads());
    ParallelFor(x.numel(), kCheapWork, threads, [&](int64_t b, int64_t end) {
      UnaryF32(op, UnaryParams{}, src + b, dst + b, end - b);
    });
    return Status::Ok();
  }
};

Status SupportsPow(const NodeView&, const std::vector<TypeInfo>& types) {
  if (types.size() != 2) return Unsupported("expects exactly two inputs");
  ONYX_RETURN_IF_ERROR(RequireInputType(types, 0, DType::kFloat));
  const TypeInfo& e = types[1];
  if (!e.is_tensor() ||
      (e.elem != DType::kFloat && e.elem != DType::kInt32 && e.elem != DType::kInt64))
    return Unsupported("exponent is not float32, int32 or int64");
  if (e.shape_is_static() && ShapeElementCount(e.static_shape()) != 1)
    return Unsupported("exponent is not a single value");
  return Status::Ok();
}

// ---- variadic Sum / Max / Min: folded pairwise into the output ----

class VariadicKernel : public FastKernel {
 public:
  VariadicKernel(std::unique_ptr<Kernel> fallback, BinaryOp op)
      : FastKernel(std::move(fallback)), op_(op) {}

  Status Run(KernelContext& ctx) const override {
    const int k = ctx.num_inputs();
    if (k < 2) return Fallback(ctx);
    std::vector<Shape> shapes;
    for (int i = 0; i < k; ++i) {
      if (!ctx.has_input(i) || !ctx.input_value(i).is_tensor() || !IsF32(ctx.input(i)))
        return Fallback(ctx);
      shapes.push_back(ctx.input(i).shape());
    }
    auto out = BroadcastShapes(shapes);
    if (!out.ok()) return Fallback(ctx);
    Tensor y = ctx.Output(0, DType::kFloat, *out);
    float* dst = y.data<float>();
    const int threads = ctx.intra_op_threads();
    BroadcastBinary(op_, ctx.input(0).data<float>(), shapes[0], ctx.input(1).data<float>(),
                    shapes[1], dst, *out, threads);
    // The output is never planned over an input (these ops are not marked in-place), so
    // folding later inputs into it reads only what was written for the same element.
    for (int i = 2; i < k; ++i)
      BroadcastBinary(op_, dst, *out, ctx.input(i).data<float>(), shapes[i], dst, *out, threads);
    return Status::Ok();
  }

 private:
  BinaryOp op_;
};

Status SupportsVariadic(const NodeView&, const std::vector<TypeInfo>& types) {
  return RequireAllInputsType(types, DType::kFloat, 2);
}

}  // namespace

KernelEntry VariadicHwyKernel(const std::string& op, BinaryOp kind) {
  return WithFallback(
      op + "_f32_hwy", HighwayIsa(), SupportsVariadic,
      [kind](const NodeView&, const std::vector<TypeInfo>&,
             std::unique_ptr<Kernel> fallback) -> StatusOr<std::unique_ptr<Kernel>> {
        return std::unique_ptr<Kernel>(new VariadicKernel(std::move(fallback), kind));
      });
}

std::unique_ptr<Kernel> NewUnaryKernel(std::unique_ptr<Kernel> fallback, UnaryOp op,
                                       UnaryParams params, int64_t work) {
  return std::unique_ptr<Kernel>(new UnaryKernel(std::move(fallback), UnarySpec{op, work}, params));
}

// Opset 7 on: numpy broadcasting (the legacy attributes before it are left to the reference).
KernelEntry PowHwyKernel() {
  return WithFallback(
      "Pow_f32_hwy", HighwayIsa(), SupportsPow,
      [](const NodeView&, const std::vector<TypeInfo>&,
         std::unique_ptr<Kernel> fallback) -> StatusOr<std::unique_ptr<Kernel>> {
        return std::unique_ptr<Kernel>(new PowKernel(std::move(fallback)));
      },
      7);
}

}  // namespace onyx::kernels::common
