// Matmul family: MatMul, Gemm, Einsum, MatMulInteger, QLinearMatMul: shape inference and
// registration. The kernels live in kernels/reference/matmul*.cc.
#include "kernels/reference/matmul.h"

#include <string>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"

namespace onyx::kernels {
namespace {

const std::vector<DType> kMatMulTypes = {DType::kFloat,    DType::kDouble, DType::kFloat16,
                                         DType::kBFloat16, DType::kInt32,  DType::kInt64,
                                         DType::kUInt32,   DType::kUInt64};
const std::vector<DType> k8BitTypes = {DType::kUInt8, DType::kInt8};

// numpy matmul shape rule on (possibly symbolic) dims: output type `out`.
Status InferMatMulLike(InferContext& ctx, int a_index, int b_index, DType out) {
  const TypeInfo& a = ctx.input_type(a_index);
  const TypeInfo& b = ctx.input_type(b_index);
  TypeInfo result = TypeInfo::Tensor(out);
  if (!a.has_shape || !b.has_shape) {
    ctx.SetOutputType(0, result);
    return Status::Ok();
  }
  const auto& names = ctx.node().node().inputs;
  if (a.dims.empty() || b.dims.empty()) {
    return ctx.node().Invalid("inputs ", a_index, " '", names[a_index], "' ", a.ToString(), " and ",
                              b_index, " '", names[b_index], "' ", b.ToString(),
                              " must have rank >= 1");
  }
  std::vector<Dim> ad = a.dims, bd = b.dims;
  if (ad.size() == 1) ad.insert(ad.begin(), Dim::Known(1));
  if (bd.size() == 1) bd.push_back(Dim::Known(1));
  const Dim& ka = ad.back();
  const Dim& kb = bd[bd.size() - 2];
  if (ka.known() && kb.known() && ka.value != kb.value) {
    return ctx.node().Invalid("input ", b_index, " '", names[b_index], "' has type ", b.ToString(),
                              "; expected K = ", ka.value, " to match input ", a_index, " '",
                              names[a_index], "' ", a.ToString());
  }
  auto batch = BroadcastDims(std::vector<Dim>(ad.begin(), ad.end() - 2),
                             std::vector<Dim>(bd.begin(), bd.end() - 2));
  if (!batch.ok()) {
    return ctx.node().Invalid("batch dims of ", a.ToString(), " and ", b.ToString(),
                              " do not broadcast: ", batch.status().message());
  }
  result.has_shape = true;
  result.dims = std::move(batch).value();
  if (a.dims.size() > 1) result.dims.push_back(ad[ad.size() - 2]);
  if (b.dims.size() > 1) result.dims.push_back(bd.back());
  ctx.SetOutputType(0, result);
  return Status::Ok();
}

Status InferMatMul(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kMatMulTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, kMatMulTypes));
  return InferMatMulLike(ctx, 0, 1, ctx.input_type(0).elem);
}

Status InferMatMulInteger(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, k8BitTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, k8BitTypes));
  return InferMatMulLike(ctx, 0, 1, DType::kInt32);
}

Status InferQLinearMatMul(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, k8BitTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 3, k8BitTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 7, k8BitTypes));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, {DType::kFloat, DType::kFloat16, DType::kBFloat16}));
  return InferMatMulLike(ctx, 0, 3, ctx.input_type(7).elem);
}

Status InferGemm(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, kMatMulTypes));
  const TypeInfo& a = ctx.input_type(0);
  const TypeInfo& b = ctx.input_type(1);
  TypeInfo out = TypeInfo::Tensor(a.elem);
  const auto& names = ctx.node().node().inputs;
  for (int i : {0, 1}) {
    const TypeInfo& t = ctx.input_type(i);
    if (t.has_shape && t.dims.size() != 2) {
      return ctx.node().Invalid("input ", i, " '", names[i], "' has type ", t.ToString(),
                                "; expected a matrix (rank 2)");
    }
  }
  if (a.has_shape && b.has_shape) {
    const bool ta = ctx.node().attr_int("transA", 0) != 0;
    const bool tb = ctx.node().attr_int("transB", 0) != 0;
    const Dim& ka = a.dims[ta ? 0 : 1];
    const Dim& kb = b.dims[tb ? 1 : 0];
    if (ka.known() && kb.known() && ka.value != kb.value) {
      return ctx.node().Invalid("input 1 '", names[1], "' has type ", b.ToString(),
                                "; expected K = ", ka.value, " to match input 0 '", names[0], "' ",
                                a.ToString(), " (transA=", ta, ", transB=", tb, ")");
    }
    out.has_shape = true;
    out.dims = {a.dims[ta ? 1 : 0], b.dims[tb ? 0 : 1]};
    // C must broadcast unidirectionally to [M, N].
    const TypeInfo* c = ctx.num_inputs() > 2 && ctx.has_input(2) ? &ctx.input_type(2) : nullptr;
    if (c && c->has_shape) {
      bool ok = c->dims.size() <= 2;
      for (size_t i = 0; ok && i < c->dims.size(); ++i) {
        const Dim& want = out.dims[2 - c->dims.size() + i];
        const Dim& got = c->dims[i];
        if (got.known() && want.known() && got.value != 1 && got.value != want.value) ok = false;
      }
      if (!ok) {
        return ctx.node().Invalid(
            "input 2 '", names[2], "' has type ", c->ToString(),
            "; expected it to broadcast to the output [",
            out.dims[0].known() ? std::to_string(out.dims[0].value) : "?", ",",
            out.dims[1].known() ? std::to_string(out.dims[1].value) : "?", "]");
      }
    }
  }
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

const std::vector<DType> kEinsumTypes = {
    DType::kFloat,  DType::kDouble, DType::kFloat16, DType::kUInt8, DType::kUInt16, DType::kUInt32,
    DType::kUInt64, DType::kInt8,   DType::kInt16,   DType::kInt32, DType::kInt64};
const std::vector<DType> kEinsumTypes28 = [] {  // opset 28 added bfloat16
  std::vector<DType> t = kEinsumTypes;
  t.push_back(DType::kBFloat16);
  return t;
}();

// Einsum: output shape from the equation when every operand shape is static.
Status InferEinsum(InferContext& ctx) {
  ONYX_ASSIGN_OR_RETURN(std::string equation, ctx.node().RequiredString("equation"));
  std::vector<Shape> shapes;
  bool known = true;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    ONYX_RETURN_IF_ERROR(
        ExpectInputType(ctx, i, ctx.node().opset() >= 28 ? kEinsumTypes28 : kEinsumTypes));
    const TypeInfo& t = ctx.input_type(i);
    if (t.shape_is_static()) {
      shapes.push_back(t.static_shape());
    } else {
      known = false;
    }
  }
  const DType elem = ctx.num_inputs() > 0 ? ctx.input_type(0).elem : DType::kUndefined;
  if (!known) {
    ctx.SetOutputType(0, TypeInfo::Tensor(elem));
    return Status::Ok();
  }
  auto plan = PlanEinsum(equation, shapes);
  if (!plan.ok()) return ctx.node().Invalid(plan.status().message());
  ctx.SetOutputType(0, TypeInfo::TensorWithShape(elem, plan.value().output_shape));
  return Status::Ok();
}

}  // namespace

void RegisterMatmul(OpRegistry& r) {
  // MatMul 1/9/13 differ only in the type list.
  r.Add("", "MatMul", 1, kLatestOpset, InferMatMul, MatMulKernel, "matmul_blocked_gemm");
  // Gemm: C broadcasts unidirectionally from 7 (earlier opsets gate it with `broadcast`, which
  // never allows more than that) and is optional from 11.
  r.Add("", "Gemm", 1, kLatestOpset, InferGemm, GemmKernel, "gemm_blocked_gemm");
  r.Add("", "Einsum", 12, 27, InferEinsum, EinsumKernel);
  r.Add("", "Einsum", 28, kLatestOpset, InferEinsum, EinsumKernel);
  r.Add("", "MatMulInteger", 10, kLatestOpset, InferMatMulInteger, MatMulIntegerKernel);
  // QLinearMatMul 21 adds float8 operands and float16/bfloat16 scales; float8 is not supported
  // (reported by the shape function).
  r.Add("", "QLinearMatMul", 10, kLatestOpset, InferQLinearMatMul, QLinearMatMulKernel);
}

}  // namespace onyx::kernels
