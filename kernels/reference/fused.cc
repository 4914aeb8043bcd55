// Reference kernels of the com.onyx fused operators. FusedConv runs the reference Conv and then
// one epilogue pass (residual + activation); FusedMatMul runs the shared GEMM with the bias and
// residual preloaded into the output (beta = 1) and then the activation pass.
#include "kernels/reference/fused.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/op_helpers.h"
#include "kernels/reference/conv_pool.h"
#include "kernels/reference/gemm_core.h"

namespace onyx::kernels {
namespace {

// One activation over [0, n); `z` (may be null) is added first.
template <ActivationKind K>
void ActivateRange(const FusedActivation& a, float* y, const float* z, int64_t n) {
  const float alpha = a.alpha, beta = a.beta, gamma = a.gamma;
  if (z) {
    for (int64_t i = 0; i < n; ++i) y[i] = ActivationScalar<K>(y[i] + z[i], alpha, beta, gamma);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = ActivationScalar<K>(y[i], alpha, beta, gamma);
  }
}

void Activate(const FusedActivation& a, float* y, const float* z, int64_t n) {
  if (a.kind == ActivationKind::kNone && !z) return;
  VisitActivationKind(a.kind, [&](auto k) { ActivateRange<decltype(k)::value>(a, y, z, n); });
}

// sum_j f(v[j]) in kLanes independent float partial sums, so the loop vectorises without
// reassociation flags; float is exact enough for the moments of one row.
template <typename F>
float LaneSum(const float* v, int64_t n, F f) {
  constexpr int kLanes = 16;
  float acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] += f(v[j + k]);
  float sum = 0;
  for (; j < n; ++j) sum += f(v[j]);
  for (int k = 0; k < kLanes; ++k) sum += acc[k];
  return sum;
}

// Presents the first `count` inputs of a fused node's context to a plain kernel (Conv) and keeps
// the tensor it writes as output 0, so the fused kernel can run its epilogue on it.
class InnerContext : public KernelContext {
 public:
  InnerContext(KernelContext& outer, int count) : outer_(outer), count_(count) {}
  const NodeView& node() const override { return outer_.node(); }
  int num_inputs() const override { return std::min(count_, outer_.num_inputs()); }
  bool has_input(int i) const override { return i < count_ && outer_.has_input(i); }
  const Value& input_value(int i) const override {
    static const Value kNone;
    return i < count_ ? outer_.input_value(i) : kNone;
  }
  int num_outputs() const override { return 1; }
  bool has_output(int i) const override { return i == 0; }
  Tensor Output(int i, DType dtype, const Shape& shape) override {
    Tensor t = outer_.Output(i, dtype, shape);
    if (i == 0) y_ = t;
    return t;
  }
  void SetOutput(int i, Value value) override {
    if (i == 0 && value.is_tensor()) y_ = value.tensor();
    outer_.SetOutput(i, std::move(value));
  }
  StatusOr<std::vector<Value>> RunSubgraph(const std::string& attr,
                                           const std::vector<Value>& inputs) override {
    return outer_.RunSubgraph(attr, inputs);
  }
  int intra_op_threads() const override { return outer_.intra_op_threads(); }
  Status CheckCancelled() const override { return outer_.CheckCancelled(); }
  Tensor& output() { return y_; }

 private:
  KernelContext& outer_;
  int count_;
  Tensor y_;
};

Status ExpectFloat32(const NodeView& node, const Tensor& t, int i) {
  if (t.dtype() == DType::kFloat) return Status::Ok();
  return node.NotSupported(DescribeInput(node, i), " has type ", DTypeName(t.dtype()),
                           "; the fused kernel supports float only");
}

// Z must have exactly Y's shape (the fusion rule never broadcasts a residual).
Status CheckResidual(const NodeView& node, const Tensor& z, int i, const Shape& y) {
  ONYX_RETURN_IF_ERROR(ExpectFloat32(node, z, i));
  if (z.shape() == y) return Status::Ok();
  return node.Invalid(DescribeInput(node, i), " has shape ", ShapeToString(z.shape()),
                      "; expected the output shape ", ShapeToString(y));
}

// A per-channel (or per-column) parameter of `count` float values.
Status CheckVector(const NodeView& node, const Tensor& t, int i, int64_t count) {
  ONYX_RETURN_IF_ERROR(ExpectFloat32(node, t, i));
  if (t.numel() == count) return Status::Ok();
  return node.Invalid(DescribeInput(node, i), " has shape ", ShapeToString(t.shape()),
                      "; expected ", count, " values");
}

}  // namespace

void ApplyFusedActivation(const FusedActivation& a, float* y, const float* z, int64_t n,
                          int threads) {
  if (a.kind == ActivationKind::kNone && !z) return;
  // Transcendental activations cost ~10x an add per element.
  const ActivationRule* rule = FindActivationRule(a.kind);
  const bool cheap = !rule || rule->cheap;
  ParallelFor(n, cheap ? 1 : 16, threads, [&](int64_t begin, int64_t end) {
    Activate(a, y + begin, z ? z + begin : nullptr, end - begin);
  });
}

Status FusedConvKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(const FusedActivation act, ParseFusedActivation(node));
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  ONYX_RETURN_IF_ERROR(ExpectFloat32(node, ctx.input(0), 0));
  InnerContext conv(ctx, 3);
  ONYX_RETURN_IF_ERROR(ConvKernel(conv));
  Tensor& y = conv.output();
  const Tensor* z = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  if (z) ONYX_RETURN_IF_ERROR(CheckResidual(node, *z, 3, y.shape()));
  ApplyFusedActivation(act, y.data<float>(), z ? z->data<float>() : nullptr, y.numel(),
                       ctx.intra_op_threads());
  return Status::Ok();
}

Status FusedMatMulKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(const FusedActivation act, ParseFusedActivation(node));
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  ONYX_RETURN_IF_ERROR(ExpectFloat32(node, a, 0));
  ONYX_RETURN_IF_ERROR(ExpectFloat32(node, b, 1));
  const bool trans_a = node.attr_int("transA", 0) != 0;
  const bool trans_b = node.attr_int("transB", 0) != 0;
  const float alpha = node.attr_float("alpha", 1.0f);
  if (a.rank() < 1 || b.rank() < 1 || (trans_a && a.rank() < 2) || (trans_b && b.rank() < 2)) {
    return node.Invalid("inputs 0 '", node.node().inputs[0], "' ", ShapeToString(a.shape()),
                        " and 1 '", node.node().inputs[1], "' ", ShapeToString(b.shape()),
                        " need rank >= 1 (rank >= 2 when transposed)");
  }
  // Logical operands [..., M, K] x [..., K, N]; a vector operand gains a unit dim (numpy).
  Shape as = a.shape(), bs = b.shape();
  const bool a_vector = as.size() == 1, b_vector = bs.size() == 1;
  if (a_vector) as.insert(as.begin(), 1);
  if (b_vector) bs.push_back(1);
  const size_t ra = as.size(), rb = bs.size();
  const int64_t m = trans_a ? as[ra - 1] : as[ra - 2];
  const int64_t k = trans_a ? as[ra - 2] : as[ra - 1];
  const int64_t kb = trans_b ? bs[rb - 1] : bs[rb - 2];
  const int64_t n = trans_b ? bs[rb - 2] : bs[rb - 1];
  if (k != kb) {
    return node.Invalid("input 1 '", node.node().inputs[1], "' has shape ",
                        ShapeToString(b.shape()), (trans_b ? " (transposed)" : ""),
                        "; expected K = ", k, " to match input 0 '", node.node().inputs[0], "' ",
                        ShapeToString(a.shape()), (trans_a ? " (transposed)" : ""));
  }
  const Shape batch_a(as.begin(), as.end() - 2), batch_b(bs.begin(), bs.end() - 2);
  auto batch_or = BroadcastShapes({batch_a, batch_b});
  if (!batch_or.ok()) {
    return node.Invalid("batch dims of inputs 0 ", ShapeToString(a.shape()), " and 1 ",
                        ShapeToString(b.shape()), " do not broadcast");
  }
  const Shape batch = std::move(batch_or).value();
  Shape out = batch;
  if (!a_vector) out.push_back(m);
  if (!b_vector) out.push_back(n);
  const Tensor* bias = ctx.num_inputs() > 2 && ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const Tensor* z = ctx.num_inputs() > 3 && ctx.has_input(3) ? &ctx.input(3) : nullptr;
  if (bias) ONYX_RETURN_IF_ERROR(CheckVector(node, *bias, 2, n));
  if (z) ONYX_RETURN_IF_ERROR(CheckResidual(node, *z, 3, out));
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kFloat, out));
  float* dst = y.data<float>();
  const int64_t batches = ShapeElementCount(batch);
  const int64_t rows = batches * m;
  const int threads = ctx.intra_op_threads();
  // Bias and residual go into Y first; the GEMM then accumulates onto them (beta = 1).
  float beta = 0;
  if (bias || z) {
    const float* bv = bias ? bias->data<float>() : nullptr;
    const float* zv = z ? z->data<float>() : nullptr;
    ParallelFor(rows, n, threads, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t j = 0; j < n; ++j)
          dst[r * n + j] = (zv ? zv[r * n + j] : 0.0f) + (bv ? bv[j] : 0.0f);
    });
    beta = 1;
  }
  const float* ap = a.data<float>();
  const float* bp = b.data<float>();
  const int64_t lda = trans_a ? m : k, ldb = trans_b ? k : n;
  if (rows > 0 && n > 0 && k > 0) {
    if (batch_b.empty() && !trans_a) {
      // B is one matrix: all rows of A form one GEMM.
      Gemm<float>(false, trans_b, rows, n, k, alpha, ap, lda, bp, ldb, beta, dst, n);
    } else {
      // Matrix offsets of A and B for every output batch (broadcast strides are 0).
      std::vector<int64_t> a_off(static_cast<size_t>(batches)), b_off(a_off.size());
      ForEachBroadcast(batch, {BroadcastStrides(batch_a, batch), BroadcastStrides(batch_b, batch)},
                       [&](int64_t i, const int64_t* off) {
                         a_off[i] = off[0];
                         b_off[i] = off[1];
                       });
      const auto one = [&](int64_t i, bool parallel) {
        Gemm<float>(trans_a, trans_b, m, n, k, alpha, ap + a_off[i] * m * k, lda,
                    bp + b_off[i] * k * n, ldb, beta, dst + i * m * n, n, parallel);
      };
      if (batches >= threads && threads > 1) {
        ParallelFor(batches, m * n * k, threads, [&](int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; ++i) one(i, false);
        });
      } else {
        for (int64_t i = 0; i < batches; ++i) one(i, true);
      }
    }
  } else if (beta == 0) {
    std::fill(dst, dst + y.numel(), 0.0f);
  }
  ApplyFusedActivation(act, dst, nullptr, y.numel(), threads);
  return Status::Ok();
}

Status ChannelAffineKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(const FusedActivation act, ParseFusedActivation(node));
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 3));
  const Tensor& x = ctx.input(0);
  ONYX_RETURN_IF_ERROR(ExpectFloat32(node, x, 0));
  if (x.rank() < 2) {
    return node.Invalid(DescribeInput(node, 0), " has shape ", ShapeToString(x.shape()),
                        "; expected [N, C, ...] (rank >= 2)");
  }
  const int64_t channels = x.dim(1);
  ONYX_RETURN_IF_ERROR(CheckVector(node, ctx.input(1), 1, channels));
  ONYX_RETURN_IF_ERROR(CheckVector(node, ctx.input(2), 2, channels));
  const float* scale = ctx.input(1).data<float>();
  const float* shift = ctx.input(2).data<float>();
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kFloat, x.shape()));
  const int64_t planes = x.dim(0) * channels;
  const int64_t inner = planes > 0 ? x.numel() / planes : 0;
  const float* src = x.data<float>();
  float* dst = y.data<float>();
  ParallelFor(planes, inner, ctx.intra_op_threads(), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const float s = scale[p % channels], t = shift[p % channels];
      const float* in = src + p * inner;
      float* out = dst + p * inner;
      for (int64_t i = 0; i < inner; ++i) out[i] = in[i] * s + t;
      Activate(act, out, nullptr, inner);
    }
  });
  return Status::Ok();
}

Status SkipLayerNormKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 3));
  const Tensor& x = ctx.input(0);
  const Tensor& skip = ctx.input(1);
  ONYX_RETURN_IF_ERROR(ExpectFloat32(node, x, 0));
  ONYX_RETURN_IF_ERROR(CheckResidual(node, skip, 1, x.shape()));
  if (x.rank() < 1) return node.Invalid(DescribeInput(node, 0), " must have rank >= 1");
  const int64_t cols = x.dim(x.rank() - 1);
  const float* params[3] = {nullptr, nullptr, nullptr};  // gamma, beta, bias
  for (int i = 2; i <= 4; ++i) {
    if (ctx.num_inputs() <= i || !ctx.has_input(i)) continue;
    ONYX_RETURN_IF_ERROR(CheckVector(node, ctx.input(i), i, cols));
    params[i - 2] = ctx.input(i).data<float>();
  }
  if (!params[0]) return node.Invalid("input 2 (Gamma) is required");
  const float epsilon = node.attr_float("epsilon", 1e-5f);
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kFloat, x.shape()));
  const float* xs = x.data<float>();
  const float* ss = skip.data<float>();
  float* dst = y.data<float>();
  const int64_t rows = cols > 0 ? x.numel() / cols : 0;
  const std::vector<float> zeros(static_cast<size_t>(cols), 0.0f);
  const float* gamma = params[0];
  const float* beta = params[1] ? params[1] : zeros.data();
  const float* bias = params[2] ? params[2] : zeros.data();
  ParallelFor(rows, 2 * cols, ctx.intra_op_threads(), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = xs + r * cols;
      const float* sr = ss + r * cols;
      float* out = dst + r * cols;
      // The sum is written first: when Y aliases X, element j is read before it is written.
      for (int64_t j = 0; j < cols; ++j) out[j] = xr[j] + sr[j] + bias[j];
      const float n = static_cast<float>(cols);
      const float mean = LaneSum(out, cols, [](float v) { return v; }) / n;
      const float var = LaneSum(out, cols, [mean](float v) { return (v - mean) * (v - mean); }) / n;
      const float inv_std = 1.0f / std::sqrt(var + epsilon);
      for (int64_t j = 0; j < cols; ++j) out[j] = (out[j] - mean) * inv_std * gamma[j] + beta[j];
    }
  });
  return Status::Ok();
}

Status ReplaceNaNKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const Tensor& x = ctx.input(0);
  ONYX_RETURN_IF_ERROR(ExpectFloat32(node, x, 0));
  const float value = node.attr_float("value", 0.f);
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kFloat, x.shape()));
  const float* src = x.data<float>();
  float* dst = y.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) dst[i] = std::isnan(src[i]) ? value : src[i];
  return Status::Ok();
}

Status RunQLinearLookup(
    KernelContext& ctx,
    const std::function<void(const uint8_t*, uint8_t*, int64_t, const uint8_t*)>& apply) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const Tensor& x = ctx.input(0);
  const Tensor& table = ctx.input(1);
  if (!Is8BitInt(x.dtype()))
    return node.Invalid("input 0 has element type ", DTypeName(x.dtype()),
                        "; expected uint8 or int8");
  if (!Is8BitInt(table.dtype()) || table.rank() != 1 || table.numel() != 256)
    return node.Invalid("input 1 (the table) must be 256 uint8 or int8 values, not ",
                        DTypeName(table.dtype()), " ", ShapeToString(table.shape()));
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, table.dtype(), x.shape()));
  apply(static_cast<const uint8_t*>(x.raw_data()), static_cast<uint8_t*>(y.raw_data()), x.numel(),
        static_cast<const uint8_t*>(table.raw_data()));
  return Status::Ok();
}

Status QLinearLookupKernel(KernelContext& ctx) {
  return RunQLinearLookup(ctx, [](const uint8_t* src, uint8_t* dst, int64_t n, const uint8_t* t) {
    for (int64_t i = 0; i < n; ++i) dst[i] = t[src[i]];
  });
}

StatusOr<DimsOfSpec> ParseDimsOf(const NodeView& node, int num_inputs) {
  DimsOfSpec spec;
  ONYX_ASSIGN_OR_RETURN(spec.sources, node.RequiredInts("sources"));
  ONYX_ASSIGN_OR_RETURN(spec.values, node.RequiredInts("values"));
  spec.scalar = node.attr_int("scalar", 0) != 0;
  if (spec.sources.size() != spec.values.size())
    return node.Invalid("attributes 'sources' (", spec.sources.size(), " values) and 'values' (",
                        spec.values.size(), ") differ in length");
  if (spec.scalar && spec.sources.size() != 1)
    return node.Invalid("a scalar output takes one element, not ", spec.sources.size());
  for (size_t k = 0; k < spec.sources.size(); ++k) {
    if (spec.sources[k] >= num_inputs)
      return node.Invalid("sources[", k, "] is ", spec.sources[k], " but the node has ", num_inputs,
                          " inputs");
    if (spec.sources[k] >= 0 && spec.values[k] < 0)
      return node.Invalid("values[", k, "] is ", spec.values[k], ", not a dim index");
  }
  return spec;
}

namespace {

class DimsOfKernel : public Kernel {
 public:
  explicit DimsOfKernel(DimsOfSpec spec) : spec_(std::move(spec)) {}
  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    const int64_t n = static_cast<int64_t>(spec_.sources.size());
    ONYX_ASSIGN_OR_RETURN(Tensor y,
                          NewOutput(ctx, 0, DType::kInt64, spec_.scalar ? Shape{} : Shape{n}));
    int64_t* out = y.data<int64_t>();
    for (int64_t k = 0; k < n; ++k) {
      const int64_t src = spec_.sources[k], d = spec_.values[k];
      if (src < 0) {
        out[k] = d;
        continue;
      }
      const int i = static_cast<int>(src);
      if (!ctx.has_input(i) || !ctx.input_value(i).is_tensor())
        return node.Invalid(DescribeInput(node, i), " is not a tensor");
      const Tensor& x = ctx.input(i);
      if (d >= x.rank())
        return node.Invalid(DescribeInput(node, i), " has rank ", x.rank(), " but dim ", d,
                            " is read");
      out[k] = x.dim(d);
    }
    return Status::Ok();
  }

 private:
  DimsOfSpec spec_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> MakeDimsOfKernel(const NodeView& node,
                                                   const std::vector<TypeInfo>& input_types) {
  ONYX_ASSIGN_OR_RETURN(DimsOfSpec spec, ParseDimsOf(node, static_cast<int>(input_types.size())));
  return std::unique_ptr<Kernel>(new DimsOfKernel(std::move(spec)));
}

}  // namespace onyx::kernels
