// Loss family: NegativeLogLikelihoodLoss (opsets 12, 13, 22) and SoftmaxCrossEntropyLoss (opsets
// 12, 13). The semantics are the same in every version; the versions differ only in the element
// types they allow (bfloat16 joins NegativeLogLikelihoodLoss at 22, SoftmaxCrossEntropyLoss at 13).
// The kernels validate shapes and every target before the loops in kernels/reference/loss.cc run.
#include "kernels/reference/loss.h"

#include <string>
#include <vector>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"

namespace onyx::kernels {
namespace {

const std::vector<DType> kFloatTypes = {DType::kFloat, DType::kDouble, DType::kFloat16};
const std::vector<DType> kFloatTypesWithBf16 = {DType::kFloat, DType::kDouble, DType::kFloat16,
                                                DType::kBFloat16};

bool IsSoftmaxCrossEntropy(const NodeView& node) {
  return node.op_type() == "SoftmaxCrossEntropyLoss";
}

// The element types input 0 may have at this node's opset.
const std::vector<DType>& AllowedTypes(const NodeView& node) {
  const int64_t bf16_since = IsSoftmaxCrossEntropy(node) ? 13 : 22;
  return node.opset() >= bf16_since ? kFloatTypesWithBf16 : kFloatTypes;
}

StatusOr<reference::LossReduction> ParseReduction(const NodeView& node) {
  const std::string r = node.attr_string("reduction", "mean");
  if (r == "none") return reference::LossReduction::kNone;
  if (r == "sum") return reference::LossReduction::kSum;
  if (r == "mean") return reference::LossReduction::kMean;
  return node.Invalid("attribute 'reduction' is '", r, "'; expected none, sum or mean");
}

reference::IgnoreIndex ParseIgnoreIndex(const NodeView& node) {
  reference::IgnoreIndex ignore;
  ignore.present = node.has_attr("ignore_index");
  if (ignore.present) ignore.value = node.attr_int("ignore_index", 0);
  return ignore;
}

// Two dims that must agree: fine when either is unknown.
bool DimsConflict(const Dim& a, const Dim& b) {
  return a.known() && b.known() && a.value != b.value;
}

std::string DimsToString(const std::vector<Dim>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += dims[i].known() ? std::to_string(dims[i].value)
                         : (dims[i].symbol.empty() ? "?" : dims[i].symbol);
  }
  return s + "]";
}

// Input (N, C, d1..dk), target (N, d1..dk), weight (C): the rule shared by plan and run time.
Status CheckLossShapes(const NodeView& node, const std::vector<Dim>* input,
                       const std::vector<Dim>* target, const std::vector<Dim>* weight) {
  if (input && input->size() < 2)
    return node.Invalid(DescribeInput(node, 0), " has shape ", DimsToString(*input),
                        "; expected rank >= 2 (N, C, d1, ..., dk)");
  if (input && target) {
    bool ok = target->size() + 1 == input->size();
    for (size_t i = 0; ok && i < target->size(); ++i)
      ok = !DimsConflict((*target)[i], (*input)[i == 0 ? 0 : i + 1]);
    if (!ok)
      return node.Invalid(DescribeInput(node, 1), " has shape ", DimsToString(*target),
                          "; expected (N, d1, ..., dk) matching ", DescribeInput(node, 0), " ",
                          DimsToString(*input));
  }
  if (weight) {
    if (weight->size() != 1 || (input && DimsConflict((*weight)[0], (*input)[1])))
      return node.Invalid(DescribeInput(node, 2), " has shape ", DimsToString(*weight),
                          "; expected (C) with C = dim 1 of ", DescribeInput(node, 0),
                          input ? " " + DimsToString(*input) : "");
  }
  return Status::Ok();
}

std::vector<Dim> KnownDims(const Shape& s) {
  std::vector<Dim> dims;
  for (int64_t v : s) dims.push_back(Dim::Known(v));
  return dims;
}

Status InferLoss(InferContext& ctx) {
  const NodeView& node = ctx.node();
  if (!ctx.has_input(0) || !ctx.has_input(1))
    return node.Invalid("required inputs 0 and 1 must both be present");
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 0, AllowedTypes(node)));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 1, {DType::kInt32, DType::kInt64}));
  ONYX_RETURN_IF_ERROR(ExpectInputType(ctx, 2, AllowedTypes(node)));
  ONYX_ASSIGN_OR_RETURN(const reference::LossReduction reduction, ParseReduction(node));
  const TypeInfo& x = ctx.input_type(0);
  const TypeInfo& t = ctx.input_type(1);
  const bool has_w = ctx.has_input(2);
  const TypeInfo& w = has_w ? ctx.input_type(2) : x;
  if (has_w && x.is_tensor() && w.is_tensor() && x.elem != DType::kUndefined &&
      w.elem != DType::kUndefined && x.elem != w.elem)
    return node.Invalid(DescribeInput(node, 2), " has type ", DTypeName(w.elem), ", expected ",
                        DTypeName(x.elem), " like input 0");
  ONYX_RETURN_IF_ERROR(CheckLossShapes(node, x.has_shape ? &x.dims : nullptr,
                                       t.has_shape ? &t.dims : nullptr,
                                       has_w && w.has_shape ? &w.dims : nullptr));
  const DType elem = x.is_tensor() ? x.elem : DType::kUndefined;
  TypeInfo loss = TypeInfo::Tensor(elem);
  if (reduction != reference::LossReduction::kNone) {
    loss.has_shape = true;  // a scalar
  } else if (t.has_shape) {
    loss.has_shape = true;
    loss.dims = t.dims;
    // Fill dims the target leaves unknown from the input's (N, d1, ..., dk).
    for (size_t i = 0; x.has_shape && i < loss.dims.size(); ++i)
      if (!loss.dims[i].known() && loss.dims[i].symbol.empty())
        loss.dims[i] = x.dims[i == 0 ? 0 : i + 1];
  } else if (x.has_shape) {
    loss.has_shape = true;
    loss.dims = x.dims;
    loss.dims.erase(loss.dims.begin() + 1);
  }
  ctx.SetOutputType(0, loss);
  if (ctx.num_outputs() > 1 && ctx.has_output(1)) {
    if (!IsSoftmaxCrossEntropy(node))
      return node.Invalid("has ", ctx.num_outputs(), " outputs; expected 1");
    TypeInfo log_prob = TypeInfo::Tensor(elem);
    log_prob.has_shape = x.has_shape;
    log_prob.dims = x.dims;
    ctx.SetOutputType(1, log_prob);
  }
  return Status::Ok();
}

// Reads the targets and checks each is a class in [0, C) or the ignore_index.
StatusOr<std::vector<int64_t>> ReadTargets(const NodeView& node, const Tensor& target, int64_t c,
                                           reference::IgnoreIndex ignore) {
  if (target.dtype() != DType::kInt32 && target.dtype() != DType::kInt64)
    return node.NotSupported(DescribeInput(node, 1), " has type ", DTypeName(target.dtype()),
                             "; expected int32 or int64");
  std::vector<int64_t> values = TensorToInts(target);
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t v = values[i];
    if ((v < 0 || v >= c) && !ignore.Matches(v))
      return node.Fail(DescribeInput(node, 1), " has class index ", v, " at position ", i,
                       ", out of range [0, ", c - 1, "]",
                       ignore.present ? StrCat(" and not ignore_index ", ignore.value) : "");
  }
  return values;
}

Status LossKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const bool sce = IsSoftmaxCrossEntropy(node);
  for (int i = 0; i < 3; ++i) {
    if (i < 2 && !ctx.has_input(i)) return node.Invalid("missing required input ", i);
    if (ctx.has_input(i) && !ctx.input_value(i).is_tensor())
      return node.Fail(DescribeInput(node, i), " must be a tensor");
  }
  ONYX_ASSIGN_OR_RETURN(const reference::LossReduction reduction, ParseReduction(node));
  const reference::IgnoreIndex ignore = ParseIgnoreIndex(node);
  const Tensor& x = ctx.input(0);
  const Tensor& target = ctx.input(1);
  const Tensor* weight = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const std::vector<Dim> x_dims = KnownDims(x.shape());
  const std::vector<Dim> t_dims = KnownDims(target.shape());
  const std::vector<Dim> w_dims = weight ? KnownDims(weight->shape()) : std::vector<Dim>();
  ONYX_RETURN_IF_ERROR(CheckLossShapes(node, &x_dims, &t_dims, weight ? &w_dims : nullptr));
  if (weight && weight->dtype() != x.dtype())
    return node.Invalid(DescribeInput(node, 2), " has type ", DTypeName(weight->dtype()),
                        ", expected ", DTypeName(x.dtype()), " like input 0");
  const int64_t n = x.dim(0);
  const int64_t c = x.dim(1);
  // d = d1 * ... * dk, taken from the target so that it is right even when C = 0 (then every
  // target must be the ignore_index).
  const int64_t d = n == 0 ? 0 : target.numel() / n;
  ONYX_ASSIGN_OR_RETURN(const std::vector<int64_t> classes, ReadTargets(node, target, c, ignore));
  const Shape loss_shape = reduction == reference::LossReduction::kNone ? target.shape() : Shape{};
  const bool visited = VisitFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor loss = ctx.Output(0, x.dtype(), loss_shape);
    const T* w = weight ? weight->data<T>() : nullptr;
    if (!sce) {
      reference::NegativeLogLikelihood(x.data<T>(), classes.data(), w, loss.data<T>(), n, c, d,
                                       ignore, reduction);
      return;
    }
    std::vector<double> log_prob(static_cast<size_t>(x.numel()));
    reference::LogSoftmaxClasses(x.data<T>(), log_prob.data(), n, c, d);
    reference::NegativeLogLikelihood(log_prob.data(), classes.data(), w, loss.data<T>(), n, c, d,
                                     ignore, reduction);
    if (ctx.num_outputs() > 1 && ctx.has_output(1)) {
      Tensor out = ctx.Output(1, x.dtype(), x.shape());
      T* dst = out.data<T>();
      for (size_t i = 0; i < log_prob.size(); ++i) dst[i] = static_cast<T>(log_prob[i]);
    }
  });
  if (!visited)
    return node.NotSupported(DescribeInput(node, 0), " has type ", DTypeName(x.dtype()),
                             ", which this operator does not support");
  return Status::Ok();
}

}  // namespace

void RegisterLoss(OpRegistry& r) {
  // One definition per opset range so each reports its own type set (see AllowedTypes).
  r.Add("", "NegativeLogLikelihoodLoss", 12, 12, InferLoss, LossKernel, "nllloss_ref");
  r.Add("", "NegativeLogLikelihoodLoss", 13, 21, InferLoss, LossKernel, "nllloss_ref");
  r.Add("", "NegativeLogLikelihoodLoss", 22, kLatestOpset, InferLoss, LossKernel, "nllloss_ref");
  r.Add("", "SoftmaxCrossEntropyLoss", 12, 12, InferLoss, LossKernel, "sce_ref");
  r.Add("", "SoftmaxCrossEntropyLoss", 13, kLatestOpset, InferLoss, LossKernel, "sce_ref");
}

}  // namespace onyx::kernels
