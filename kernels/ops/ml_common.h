// Helpers shared by the ai.onnx.ml operator families (ml.cc, ml_tree.cc, ml_linear.cc,
// ml_features.cc): type checks, registration of prepared kernels and attribute readers.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"

namespace onyx::kernels::ml {

inline constexpr char kMl[] = "ai.onnx.ml";

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

// A float list attribute, or (opset >= 3 where the op has one) its `<name>_as_tensor` double
// twin. Sets *is_double when the tensor form was used. Both at once is an error.
StatusOr<std::vector<double>> FloatsOrTensor(const NodeView& node, const std::string& name,
                                             bool* is_double = nullptr);

// Registration of each family (called from RegisterMl in ml.cc).
void RegisterMlTree(OpRegistry& r);
void RegisterMlLinear(OpRegistry& r);
void RegisterMlFeatures(OpRegistry& r);

}  // namespace onyx::kernels::ml
