// Reference kernels for RandomNormal(Like), RandomUniform(Like), Bernoulli and Multinomial.
#include "kernels/reference/random.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include "kernels/element_types.h"
#include "kernels/op_helpers.h"

namespace onyx::kernels::reference {

namespace {

using Engine = std::mt19937_64;

// Seeded from the `seed` attribute when present (same values every run), else from the OS.
Engine MakeEngine(const NodeView& node) {
  if (node.has_attr("seed")) {
    const double s = node.attr_float("seed", 0.0f);
    // The attribute is a float; any finite value maps to a 64-bit seed without overflow.
    const double clamped = std::isfinite(s) ? std::max(-9.0e18, std::min(9.0e18, s)) : 0.0;
    return Engine(static_cast<uint64_t>(static_cast<int64_t>(clamped)));
  }
  std::random_device rd;
  return Engine((static_cast<uint64_t>(rd()) << 32) ^ rd());
}

// The element types the generators produce (T / T2 of RandomNormal and friends).
bool IsGeneratorType(DType t) {
  return VisitFloat(t, [](auto) {});
}

// Converts a double draw to the element type (16-bit floats round through float).
template <typename T>
T FromDouble(double v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(v);
  } else {
    return T(static_cast<float>(v));
  }
}

// Fills a float tensor with mean + scale * z, z ~ N(0, 1) (any scale sign is accepted).
Status FillNormal(const NodeView& node, Tensor* dst) {
  Engine engine = MakeEngine(node);
  const double mean = node.attr_float("mean", 0.0f);
  const double scale = node.attr_float("scale", 1.0f);
  std::normal_distribution<double> normal(0.0, 1.0);
  const bool ok = VisitFloat(dst->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = dst->data<T>();
    for (int64_t i = 0; i < dst->numel(); ++i)
      out[i] = FromDouble<T>(mean + scale * normal(engine));
  });
  if (!ok)
    return node.NotSupported("output type ", DTypeName(dst->dtype()),
                             " is not a floating-point type");
  return Status::Ok();
}

// Fills a float tensor with low + (high - low) * u, u ~ U[0, 1).
Status FillUniform(const NodeView& node, Tensor* dst) {
  Engine engine = MakeEngine(node);
  const double low = node.attr_float("low", 0.0f);
  const double high = node.attr_float("high", 1.0f);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const bool ok = VisitFloat(dst->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = dst->data<T>();
    for (int64_t i = 0; i < dst->numel(); ++i)
      out[i] = FromDouble<T>(low + (high - low) * uniform(engine));
  });
  if (!ok)
    return node.NotSupported("output type ", DTypeName(dst->dtype()),
                             " is not a floating-point type");
  return Status::Ok();
}

// The output of RandomNormal/RandomUniform: `shape` attribute (dims >= 0) and `dtype`.
StatusOr<Tensor> ShapedOutput(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> shape, node.RequiredInts("shape"));
  for (int64_t d : shape)
    if (d < 0) return node.Invalid("attribute 'shape' has a negative dim ", d);
  const DType dtype =
      static_cast<DType>(node.attr_int("dtype", static_cast<int64_t>(DType::kFloat)));
  if (!IsGeneratorType(dtype))
    return node.NotSupported("attribute 'dtype' = ", static_cast<int>(dtype),
                             " is not float16, float, double or bfloat16");
  return ctx.Output(0, dtype, shape);
}

// The output of the *Like generators: input 0's shape, `dtype` or input 0's type.
StatusOr<Tensor> LikeOutput(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  if (!ctx.has_input(0) || !ctx.input_value(0).is_tensor())
    return node.Invalid("input 0 'input' must be a tensor");
  const Tensor& x = ctx.input(0);
  const DType dtype = static_cast<DType>(node.attr_int("dtype", static_cast<int64_t>(x.dtype())));
  if (!IsGeneratorType(dtype))
    return node.NotSupported("output type ", static_cast<int>(dtype),
                             " (attribute 'dtype' or input 0's type) is not float16, float, ",
                             "double or bfloat16");
  return ctx.Output(0, dtype, x.shape());
}

}  // namespace

Status RandomNormalRef(KernelContext& ctx) {
  ONYX_ASSIGN_OR_RETURN(Tensor dst, ShapedOutput(ctx));
  return FillNormal(ctx.node(), &dst);
}

Status RandomUniformRef(KernelContext& ctx) {
  ONYX_ASSIGN_OR_RETURN(Tensor dst, ShapedOutput(ctx));
  return FillUniform(ctx.node(), &dst);
}

Status RandomNormalLikeRef(KernelContext& ctx) {
  ONYX_ASSIGN_OR_RETURN(Tensor dst, LikeOutput(ctx));
  return FillNormal(ctx.node(), &dst);
}

Status RandomUniformLikeRef(KernelContext& ctx) {
  ONYX_ASSIGN_OR_RETURN(Tensor dst, LikeOutput(ctx));
  return FillUniform(ctx.node(), &dst);
}

Status BernoulliRef(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  if (!ctx.has_input(0) || !ctx.input_value(0).is_tensor())
    return node.Invalid("input 0 'input' must be a tensor");
  const Tensor& p = ctx.input(0);
  if (!IsGeneratorType(p.dtype()))
    return node.NotSupported("input 0 'input' has type ", DTypeName(p.dtype()),
                             "; expected float16, float, double or bfloat16");
  const DType dtype = static_cast<DType>(node.attr_int("dtype", static_cast<int64_t>(p.dtype())));
  if (!VisitNumericOrBool(dtype, [](auto) {}))
    return node.NotSupported("attribute 'dtype' = ", static_cast<int>(dtype),
                             " is not a numeric or bool type");
  Tensor dst = ctx.Output(0, dtype, p.shape());
  Engine engine = MakeEngine(node);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  VisitNumericOrBool(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = dst.data<T>();
    for (int64_t i = 0; i < p.numel(); ++i)
      out[i] = FromDouble<T>(uniform(engine) < ElementAsDouble(p, i) ? 1.0 : 0.0);
  });
  return Status::Ok();
}

Status MultinomialRef(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  if (!ctx.has_input(0) || !ctx.input_value(0).is_tensor())
    return node.Invalid("input 0 'input' must be a tensor");
  const Tensor& x = ctx.input(0);
  if (!IsGeneratorType(x.dtype()))
    return node.NotSupported("input 0 'input' has type ", DTypeName(x.dtype()),
                             "; expected float16, float, double or bfloat16");
  if (x.rank() != 2)
    return node.Fail("input 0 'input' has shape ", ShapeToString(x.shape()),
                     "; expected [batch_size, class_size]");
  const int64_t sample_size = node.attr_int("sample_size", 1);
  if (sample_size < 0) return node.Invalid("attribute 'sample_size' = ", sample_size, " < 0");
  const DType dtype =
      static_cast<DType>(node.attr_int("dtype", static_cast<int64_t>(DType::kInt32)));
  if (dtype != DType::kInt32 && dtype != DType::kInt64)
    return node.NotSupported("attribute 'dtype' = ", static_cast<int>(dtype),
                             "; expected int32 (6) or int64 (7)");
  const int64_t batch = x.dim(0), classes = x.dim(1);
  Tensor dst = ctx.Output(0, dtype, {batch, sample_size});
  if (batch * sample_size == 0) return Status::Ok();
  if (classes == 0) return node.Fail("input 0 'input' has no classes to sample from");

  Engine engine = MakeEngine(node);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<double> cdf(static_cast<size_t>(classes));
  for (int64_t b = 0; b < batch; ++b) {
    // Unnormalised log-probabilities: exp(x - max) keeps the largest weight at 1.
    double max_logit = -INFINITY;
    for (int64_t c = 0; c < classes; ++c)
      max_logit = std::max(max_logit, ElementAsDouble(x, b * classes + c));
    double total = 0;
    for (int64_t c = 0; c < classes; ++c) {
      total += std::exp(ElementAsDouble(x, b * classes + c) - max_logit);
      cdf[c] = total;
    }
    if (!(total > 0) || !std::isfinite(total))
      return node.Fail("row ", b, " of input 0 'input' has no finite log-probability");
    for (int64_t s = 0; s < sample_size; ++s) {
      const double r = uniform(engine) * total;
      int64_t c = std::upper_bound(cdf.begin(), cdf.end(), r) - cdf.begin();
      c = std::min(c, classes - 1);
      if (dtype == DType::kInt32)
        dst.data<int32_t>()[b * sample_size + s] = static_cast<int32_t>(c);
      else
        dst.data<int64_t>()[b * sample_size + s] = c;
    }
  }
  return Status::Ok();
}

}  // namespace onyx::kernels::reference
