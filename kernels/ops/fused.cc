// The com.onyx fused operators, created by the planner's fusion pass (planner/fusion/) and never
// expected in user models: FusedConv, FusedMatMul, ChannelAffine, SkipLayerNormalization,
// ReplaceNaN, DimsOf, QLinearLookup. Shape functions and registration; the reference kernels live
// in kernels/reference/fused.cc.
#include "kernels/reference/fused.h"

#include <algorithm>
#include <utility>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"

namespace onyx::kernels {
namespace {

// Shows the first `count` inputs of a fused node to the shape function of the plain op it
// extends (FusedConv → Conv); output 0 passes through.
class InnerInferContext : public InferContext {
 public:
  InnerInferContext(InferContext& outer, int count) : outer_(outer), count_(count) {}
  const NodeView& node() const override { return outer_.node(); }
  int num_inputs() const override { return std::min(count_, outer_.num_inputs()); }
  bool has_input(int i) const override { return i < count_ && outer_.has_input(i); }
  const TypeInfo& input_type(int i) const override {
    static const TypeInfo kUnknown;
    return i < count_ ? outer_.input_type(i) : kUnknown;
  }
  const Tensor* input_constant(int i) const override {
    return i < count_ ? outer_.input_constant(i) : nullptr;
  }
  int num_outputs() const override { return 1; }
  bool has_output(int i) const override { return i == 0; }
  void SetOutputType(int i, TypeInfo type) override {
    if (i == 0) outer_.SetOutputType(0, std::move(type));
  }
  StatusOr<std::vector<TypeInfo>> InferSubgraph(const std::string& attr,
                                                const std::vector<TypeInfo>& inputs) override {
    return outer_.InferSubgraph(attr, inputs);
  }

 private:
  InferContext& outer_;
  int count_;
};

bool Present(InferContext& ctx, int i) {
  return i < ctx.num_inputs() && ctx.has_input(i);
}

// Fails when input i and `want` are both statically shaped and differ (a residual or skip input
// must have the output's exact shape).
Status ExpectSameShape(InferContext& ctx, int i, const TypeInfo& want) {
  const TypeInfo& t = ctx.input_type(i);
  if (!t.is_tensor() || !t.shape_is_static() || !want.shape_is_static()) return Status::Ok();
  if (t.static_shape() == want.static_shape()) return Status::Ok();
  return ctx.node().Invalid("input ", i, " '", ctx.node().node().inputs[i], "' has type ",
                            t.ToString(), "; expected the shape of ", want.ToString());
}

// Fails when input i is statically shaped and does not hold `count` values (count < 0: unknown).
Status ExpectCount(InferContext& ctx, int i, int64_t count) {
  const TypeInfo& t = ctx.input_type(i);
  if (count < 0 || !t.is_tensor() || !t.shape_is_static()) return Status::Ok();
  if (ShapeElementCount(t.static_shape()) == count) return Status::Ok();
  return ctx.node().Invalid("input ", i, " '", ctx.node().node().inputs[i], "' has type ",
                            t.ToString(), "; expected ", count, " values");
}

Status InferFusedConv(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ParseFusedActivation(ctx.node()).status());
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, {DType::kFloat}));
  const OpDef* conv = OpRegistry::Global().Find("", "Conv", 11);
  if (!conv || !conv->infer) return ctx.node().NotSupported("Conv is not registered");
  InnerInferContext inner(ctx, 3);
  ONYX_RETURN_IF_ERROR(conv->infer(inner));
  // Z's shape against Y's is checked at run time (Y's type is not readable back from ctx).
  if (Present(ctx, 3)) ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 3, {DType::kFloat}));
  return Status::Ok();
}

Status InferFusedMatMul(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(ParseFusedActivation(node).status());
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, {DType::kFloat}));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, {DType::kFloat}));
  for (int i : {2, 3})
    if (Present(ctx, i)) ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, i, {DType::kFloat}));
  const TypeInfo& a = ctx.input_type(0);
  const TypeInfo& b = ctx.input_type(1);
  TypeInfo out = TypeInfo::Tensor(DType::kFloat);
  if (!a.has_shape || !b.has_shape) {
    ctx.SetOutputType(0, out);
    return Status::Ok();
  }
  const bool trans_a = node.attr_int("transA", 0) != 0;
  const bool trans_b = node.attr_int("transB", 0) != 0;
  const auto& names = node.node().inputs;
  if (a.dims.empty() || b.dims.empty() || (trans_a && a.dims.size() < 2) ||
      (trans_b && b.dims.size() < 2)) {
    return node.Invalid("inputs 0 '", names[0], "' ", a.ToString(), " and 1 '", names[1], "' ",
                        b.ToString(), " need rank >= 1 (rank >= 2 when transposed)");
  }
  std::vector<Dim> ad = a.dims, bd = b.dims;
  if (ad.size() == 1) ad.insert(ad.begin(), Dim::Known(1));
  if (bd.size() == 1) bd.push_back(Dim::Known(1));
  if (trans_a) std::swap(ad[ad.size() - 1], ad[ad.size() - 2]);
  if (trans_b) std::swap(bd[bd.size() - 1], bd[bd.size() - 2]);
  const Dim& ka = ad.back();
  const Dim& kb = bd[bd.size() - 2];
  if (ka.known() && kb.known() && ka.value != kb.value) {
    return node.Invalid("input 1 '", names[1], "' has type ", b.ToString(),
                        "; expected K = ", ka.value, " to match input 0 '", names[0], "' ",
                        a.ToString(), " (transA=", trans_a, ", transB=", trans_b, ")");
  }
  auto batch = BroadcastDims(std::vector<Dim>(ad.begin(), ad.end() - 2),
                             std::vector<Dim>(bd.begin(), bd.end() - 2));
  if (!batch.ok()) {
    return node.Invalid("batch dims of ", a.ToString(), " and ", b.ToString(),
                        " do not broadcast: ", batch.status().message());
  }
  out.has_shape = true;
  out.dims = std::move(batch).value();
  if (a.dims.size() > 1) out.dims.push_back(ad[ad.size() - 2]);
  if (b.dims.size() > 1) out.dims.push_back(bd.back());
  const Dim& n = bd.back();
  if (Present(ctx, 2)) ONYX_RETURN_IF_ERROR(ExpectCount(ctx, 2, n.known() ? n.value : -1));
  if (Present(ctx, 3)) ONYX_RETURN_IF_ERROR(ExpectSameShape(ctx, 3, out));
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

Status InferChannelAffine(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ParseFusedActivation(ctx.node()).status());
  for (int i : {0, 1, 2}) {
    if (!Present(ctx, i)) return ctx.node().Invalid("input ", i, " is required");
    ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, i, {DType::kFloat}));
  }
  const TypeInfo& x = ctx.input_type(0);
  if (x.has_shape && x.dims.size() < 2) {
    return ctx.node().Invalid("input 0 '", ctx.node().node().inputs[0], "' has type ", x.ToString(),
                              "; expected [N, C, ...] (rank >= 2)");
  }
  const int64_t channels = x.has_shape && x.dims[1].known() ? x.dims[1].value : -1;
  ONYX_RETURN_IF_ERROR(ExpectCount(ctx, 1, channels));
  ONYX_RETURN_IF_ERROR(ExpectCount(ctx, 2, channels));
  ctx.SetOutputType(0, x);
  return Status::Ok();
}

Status InferSkipLayerNorm(InferContext& ctx) {
  for (int i = 0; i <= 4; ++i) {
    if (!Present(ctx, i)) {
      if (i < 3) return ctx.node().Invalid("input ", i, " is required");
      continue;
    }
    ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, i, {DType::kFloat}));
  }
  const TypeInfo& x = ctx.input_type(0);
  ONYX_RETURN_IF_ERROR(ExpectSameShape(ctx, 1, x));
  const int64_t cols =
      x.has_shape && !x.dims.empty() && x.dims.back().known() ? x.dims.back().value : -1;
  for (int i = 2; i <= 4; ++i)
    if (Present(ctx, i)) ONYX_RETURN_IF_ERROR(ExpectCount(ctx, i, cols));
  ctx.SetOutputType(0, x);
  return Status::Ok();
}

// Y has X's type; X must be float32.
Status InferReplaceNaN(InferContext& ctx) {
  if (!Present(ctx, 0)) return ctx.node().Invalid("input 0 is required");
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, {DType::kFloat}));
  ctx.SetOutputType(0, ctx.input_type(0));
  return Status::Ok();
}

// int64 [n], or a scalar; a dim read past an input's known rank is an error here.
Status InferDimsOf(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(DimsOfSpec spec, ParseDimsOf(node, ctx.num_inputs()));
  for (size_t k = 0; k < spec.sources.size(); ++k) {
    if (spec.sources[k] < 0) continue;
    const int i = static_cast<int>(spec.sources[k]);
    const TypeInfo& t = ctx.input_type(i);
    if (t.is_tensor() && t.has_shape && spec.values[k] >= t.rank())
      return node.Invalid("input ", i, " '", node.node().inputs[i], "' has type ", t.ToString(),
                          " but dim ", spec.values[k], " is read");
  }
  const int64_t n = static_cast<int64_t>(spec.sources.size());
  ctx.SetOutputType(0, TypeInfo::TensorWithShape(DType::kInt64, spec.scalar ? Shape{} : Shape{n}));
  return Status::Ok();
}

// Y: X's shape, the table's type; X 8-bit, the table 256 8-bit values.
Status InferQLinearLookup(InferContext& ctx) {
  for (int i = 0; i < 2; ++i)
    if (!Present(ctx, i)) return ctx.node().Invalid("input ", i, " is required");
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, {DType::kUInt8, DType::kInt8}));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, {DType::kUInt8, DType::kInt8}));
  ONYX_RETURN_IF_ERROR(ExpectCount(ctx, 1, 256));
  TypeInfo y = ctx.input_type(0);
  y.elem = ctx.input_type(1).elem;
  ctx.SetOutputType(0, std::move(y));
  return Status::Ok();
}

}  // namespace

void RegisterFused(OpRegistry& r) {
  r.Add(kOnyxDomain, "FusedConv", kOnyxOpset, kLatestOpset, InferFusedConv, FusedConvKernel,
        "fusedconv_f32_ref");
  r.Add(kOnyxDomain, "FusedMatMul", kOnyxOpset, kLatestOpset, InferFusedMatMul, FusedMatMulKernel,
        "fusedmatmul_f32_gemm");
  // Reads element i of X before it writes element i of Y.
  r.Add(kOnyxDomain, "ChannelAffine", kOnyxOpset, kLatestOpset, InferChannelAffine,
        ChannelAffineKernel, "channelaffine_f32_ref")
      .inplace_input = 0;
  r.Add(kOnyxDomain, "SkipLayerNormalization", kOnyxOpset, kLatestOpset, InferSkipLayerNorm,
        SkipLayerNormKernel, "skiplayernorm_f32_ref");
  // Reads element i of X before it writes element i of Y.
  r.Add(kOnyxDomain, "ReplaceNaN", kOnyxOpset, kLatestOpset, InferReplaceNaN, ReplaceNaNKernel,
        "replacenan_f32_ref")
      .inplace_input = 0;
  // Reads element i of X before it writes element i of Y.
  r.Add(kOnyxDomain, "QLinearLookup", kOnyxOpset, kLatestOpset, InferQLinearLookup,
        QLinearLookupKernel, "qlinearlookup_8bit_ref")
      .inplace_input = 0;
  OpDef dims_of;
  dims_of.domain = kOnyxDomain;
  dims_of.op_type = "DimsOf";
  dims_of.since = kOnyxOpset;
  dims_of.infer = InferDimsOf;
  dims_of.impls.push_back(KernelImpl{"DimsOf_any", nullptr, MakeDimsOfKernel, nullptr});
  r.AddDef(std::move(dims_of));
}

}  // namespace onyx::kernels
