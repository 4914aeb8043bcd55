// Helpers shared by the ai.onnx.ml operator families (ml.cc, ml_tree.cc, ml_linear.cc,
// ml_features.cc): type checks, input checks, class labels, registration of prepared kernels and
// attribute readers.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"
#include "kernels/reference/ml_tree.h"

namespace onyx::kernels::ml {

inline constexpr char kMl[] = "ai.onnx.ml";

// The numeric input types most ai.onnx.ml operators accept (read as float or double).
inline const std::vector<DType> kNumericInputs = {DType::kFloat, DType::kDouble, DType::kInt64,
                                                  DType::kInt32};

inline bool Contains(const std::vector<DType>& set, DType t) {
  return std::find(set.begin(), set.end(), t) != set.end();
}

inline Status CheckType(const NodeView& node, int i, DType t, const std::vector<DType>& allowed) {
  if (Contains(allowed, t)) return Status::Ok();
  return node.NotSupported("input ", i, " '", InputName(node, i), "' has type ", DTypeName(t),
                           ", which this operator does not support");
}

// A tensor type of element type `elem` with `like`'s shape (when known).
inline TypeInfo SameShape(const TypeInfo& like, DType elem) {
  TypeInfo t = TypeInfo::Tensor(elem);
  if (like.is_tensor() && like.has_shape) {
    t.has_shape = true;
    t.dims = like.dims;
  }
  return t;
}

// The rows N of an [N, F] or [F] input (1 for [F]); unknown without a shape.
inline Dim RowsDim(const TypeInfo& x) {
  if (!x.is_tensor() || !x.has_shape) return Dim{};
  return x.rank() == 1 ? Dim::Known(1) : x.dims[0];
}

// Plan-time check of input 0 as rows [N, F] or [F] of a numeric type; when a tree model reads
// feature `max_feature` (-1: none), a known F must exceed it.
inline Status CheckRowsInput(const NodeView& node, const TypeInfo& x, int64_t max_feature = -1) {
  if (!x.is_tensor()) return Status::Ok();
  ONYX_RETURN_IF_ERROR(CheckType(node, 0, x.elem, kNumericInputs));
  if (!x.has_shape) return Status::Ok();
  if (x.rank() != 1 && x.rank() != 2)
    return node.Invalid("input 0 '", InputName(node, 0), "' has shape ", x.ToString(),
                        "; expected [N, F] or [F]");
  const Dim& f = x.dims.back();
  if (f.known() && f.value <= max_feature)
    return node.Invalid("input 0 '", InputName(node, 0), "' has ", f.value,
                        " features but the trees read feature ", max_feature);
  return Status::Ok();
}

// Input 0's element type at plan time, kUndefined when not a tensor or not known.
inline DType InputDType(const std::vector<TypeInfo>& types) {
  return !types.empty() && types[0].is_tensor() ? types[0].elem : DType::kUndefined;
}

// Class labels: int64 or strings, exactly one list (the attribute names vary by op).
struct Labels {
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  bool use_strings = false;
  int64_t size() const { return static_cast<int64_t>(use_strings ? strings.size() : ints.size()); }
};

inline StatusOr<Labels> ParseLabels(const NodeView& node, const char* ints_name) {
  Labels l;
  const bool ints = node.has_attr(ints_name);
  const bool strings = node.has_attr("classlabels_strings");
  if (ints == strings)
    return node.Invalid("exactly one of '", ints_name, "' and 'classlabels_strings' must be set");
  l.use_strings = strings;
  if (ints) l.ints = node.attr_ints(ints_name);
  if (strings) l.strings = node.attr_strings("classlabels_strings");
  if (l.size() == 0) return node.Invalid("the class label list is empty");
  return l;
}

// Output 0 of a classifier: one label per row.
inline Tensor LabelOutput(KernelContext& ctx, const Labels& l, int64_t n) {
  return ctx.Output(0, l.use_strings ? DType::kString : DType::kInt64, {n});
}

// Writes label index `i` of `l`, or, when i < 0, the literal positive (1) / negative (0) label
// ONNX Runtime writes when a single score is not paired with two labels.
inline void WriteLabel(Tensor& y, const Labels& l, int64_t row, int64_t i, bool positive) {
  if (l.use_strings)
    y.strings()[row] = i >= 0 ? l.strings[i] : (positive ? "1" : "0");
  else
    y.data<int64_t>()[row] = i >= 0 ? l.ints[i] : (positive ? 1 : 0);
}

// A 1-D string tensor of `v`.
inline Tensor StringList(const std::vector<std::string>& v) {
  Tensor t = Tensor::Allocate(DType::kString, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.strings());
  return t;
}

// Registers an ai.onnx.ml op whose kernel is built once per node at plan time.
inline void AddPrepared(OpRegistry& r, const std::string& op_type, int64_t since, int64_t until,
                        InferFn infer, CreateFn create) {
  OpDef def;
  def.domain = kMl;
  def.op_type = op_type;
  def.since = since;
  def.until = until;
  def.infer = infer;
  def.impls.push_back(KernelImpl{op_type + "_ref", nullptr, std::move(create), nullptr});
  r.AddDef(std::move(def));
}

// Reads the string attribute `name` (default `def`) and maps it through `names` (value i is the
// i-th name); any other value is an error naming node, attribute and value.
inline StatusOr<int> EnumAttr(const NodeView& node, const char* name, const std::string& def,
                              const std::vector<std::string>& names) {
  const std::string v = node.attr_string(name, def);
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == v) return static_cast<int>(i);
  std::string all;
  for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
  return node.NotSupported("attribute '", name, "' = '", v, "' is not supported (expected one of ",
                           all, ")");
}

// The CreateFn of a kernel class K constructed from what Parse(node) returns (its model, parsed
// once at plan time).
template <typename K, auto Parse>
StatusOr<std::unique_ptr<Kernel>> CreateParsed(const NodeView& node, const std::vector<TypeInfo>&) {
  auto m = Parse(node);
  if (!m.ok()) return m.status();
  return std::unique_ptr<Kernel>(new K(std::move(m).value()));
}

// The post_transform attribute (NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO or PROBIT).
inline StatusOr<reference::MlPostTransform> PostTransformAttr(const NodeView& node) {
  ONYX_ASSIGN_OR_RETURN(const int p,
                        EnumAttr(node, "post_transform", "NONE",
                                 {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"}));
  return static_cast<reference::MlPostTransform>(p);
}

// The post transform of one row's k scores, in place: ONNX Runtime applies only PROBIT to a
// single score.
inline void TransformRow(reference::MlPostTransform post, float* z, int64_t k) {
  if (k > 1) {
    reference::ApplyMlPostTransform(post, z, k);
  } else if (k == 1 && post == reference::MlPostTransform::kProbit) {
    z[0] = reference::MlProbit(z[0]);
  }
}

// A float list attribute, or (opset >= 3 where the op has one) its `<name>_as_tensor` double
// twin. Sets *is_double when the tensor form was used. Both at once is an error.
StatusOr<std::vector<double>> FloatsOrTensor(const NodeView& node, const std::string& name,
                                             bool* is_double = nullptr);

// Registration of each family (called from RegisterMl in ml.cc).
void RegisterMlTree(OpRegistry& r);
void RegisterMlLinear(OpRegistry& r);
void RegisterMlFeatures(OpRegistry& r);

}  // namespace onyx::kernels::ml
