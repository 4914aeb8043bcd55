// Random family: RandomNormal, RandomUniform, RandomNormalLike, RandomUniformLike, Bernoulli,
// Multinomial. All are registered with deterministic = false so the planner never constant-folds
// them (each run draws new values unless a seed is given). Kernels: kernels/reference/random.cc.
#include "kernels/reference/random.h"

#include <string>
#include <vector>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"

namespace onyx::kernels {

namespace {

// T / T2 of the generators. Opset 22 added bfloat16; accepting it earlier is harmless.
bool IsGeneratorType(DType t) {
  return t == DType::kFloat || t == DType::kDouble || t == DType::kFloat16 || t == DType::kBFloat16;
}

Status CheckGeneratorDType(const NodeView& node, int64_t dtype, const char* what) {
  if (!IsKnownDType(static_cast<int32_t>(dtype)) || !IsGeneratorType(static_cast<DType>(dtype)))
    return node.NotSupported(what, " = ", dtype, " is not float16, float, double or bfloat16");
  return Status::Ok();
}

// RandomNormal / RandomUniform: static shape from the `shape` attribute.
Status InferRandomShaped(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> shape, node.RequiredInts("shape"));
  for (int64_t d : shape)
    if (d < 0) return node.Invalid("attribute 'shape' has a negative dim ", d);
  const int64_t dtype = node.attr_int("dtype", static_cast<int64_t>(DType::kFloat));
  ONYX_RETURN_IF_ERROR(CheckGeneratorDType(node, dtype, "attribute 'dtype'"));
  ctx.SetOutputType(0, TypeInfo::TensorWithShape(static_cast<DType>(dtype), shape));
  return Status::Ok();
}

// RandomNormalLike / RandomUniformLike: input 0's shape; `dtype` or input 0's element type.
Status InferRandomLike(InferContext& ctx) {
  const NodeView& node = ctx.node();
  if (!ctx.has_input(0)) return node.Invalid("input 0 'input' is missing");
  const TypeInfo& x = ctx.input_type(0);
  if (x.kind != TypeInfo::Kind::kTensor && x.kind != TypeInfo::Kind::kUnknown)
    return node.Invalid("input 0 'input' must be a tensor, got ", x.ToString());
  const int64_t dtype = node.attr_int("dtype", static_cast<int64_t>(x.elem));
  if (dtype == static_cast<int64_t>(DType::kUndefined)) return Status::Ok();  // not known yet
  ONYX_RETURN_IF_ERROR(CheckGeneratorDType(
      node, dtype, node.has_attr("dtype") ? "attribute 'dtype'" : "input 0's element type"));
  TypeInfo out = x;
  out.kind = TypeInfo::Kind::kTensor;
  out.elem = static_cast<DType>(dtype);
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

Status InferBernoulli(InferContext& ctx) {
  const NodeView& node = ctx.node();
  if (!ctx.has_input(0)) return node.Invalid("input 0 'input' is missing");
  const TypeInfo& p = ctx.input_type(0);
  if (p.kind == TypeInfo::Kind::kUnknown) return Status::Ok();
  if (p.kind != TypeInfo::Kind::kTensor)
    return node.Invalid("input 0 'input' must be a tensor, got ", p.ToString());
  if (p.elem != DType::kUndefined)
    ONYX_RETURN_IF_ERROR(CheckGeneratorDType(node, static_cast<int64_t>(p.elem), "input 0's type"));
  const int64_t dtype = node.attr_int("dtype", static_cast<int64_t>(p.elem));
  if (dtype == static_cast<int64_t>(DType::kUndefined)) return Status::Ok();  // not known yet
  if (!IsKnownDType(static_cast<int32_t>(dtype)) ||
      !VisitNumericOrBool(static_cast<DType>(dtype), [](auto) {}))
    return node.NotSupported("attribute 'dtype' = ", dtype, " is not a numeric or bool type");
  TypeInfo out = p;
  out.elem = static_cast<DType>(dtype);
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

Status InferMultinomial(InferContext& ctx) {
  const NodeView& node = ctx.node();
  if (!ctx.has_input(0)) return node.Invalid("input 0 'input' is missing");
  const int64_t dtype = node.attr_int("dtype", static_cast<int64_t>(DType::kInt32));
  if (dtype != static_cast<int64_t>(DType::kInt32) && dtype != static_cast<int64_t>(DType::kInt64))
    return node.NotSupported("attribute 'dtype' = ", dtype, "; expected int32 (6) or int64 (7)");
  const int64_t sample_size = node.attr_int("sample_size", 1);
  if (sample_size < 0) return node.Invalid("attribute 'sample_size' = ", sample_size, " < 0");
  const TypeInfo& x = ctx.input_type(0);
  TypeInfo out = TypeInfo::Tensor(static_cast<DType>(dtype));
  if (x.kind == TypeInfo::Kind::kTensor) {
    if (x.elem != DType::kUndefined)
      ONYX_RETURN_IF_ERROR(
          CheckGeneratorDType(node, static_cast<int64_t>(x.elem), "input 0's type"));
    if (x.has_shape) {
      if (x.rank() != 2)
        return node.Invalid("input 0 'input' has type ", x.ToString(),
                            "; expected [batch_size, class_size]");
      out.has_shape = true;
      out.dims = {x.dims[0], Dim::Known(sample_size)};
    }
  }
  ctx.SetOutputType(0, out);
  return Status::Ok();
}

}  // namespace

void RegisterRandom(OpRegistry& r) {
  // Opset 22 only added bfloat16 to the generators; one definition covers all versions.
  r.Add("", "RandomNormal", 1, kLatestOpset, InferRandomShaped, reference::RandomNormalRef)
      .deterministic = false;
  r.Add("", "RandomUniform", 1, kLatestOpset, InferRandomShaped, reference::RandomUniformRef)
      .deterministic = false;
  r.Add("", "RandomNormalLike", 1, kLatestOpset, InferRandomLike, reference::RandomNormalLikeRef)
      .deterministic = false;
  r.Add("", "RandomUniformLike", 1, kLatestOpset, InferRandomLike, reference::RandomUniformLikeRef)
      .deterministic = false;
  r.Add("", "Bernoulli", 15, kLatestOpset, InferBernoulli, reference::BernoulliRef).deterministic =
      false;
  r.Add("", "Multinomial", 7, kLatestOpset, InferMultinomial, reference::MultinomialRef)
      .deterministic = false;
}

}  // namespace onyx::kernels
