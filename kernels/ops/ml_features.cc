// Feature-handling ai.onnx.ml operators (all opset 1): ZipMap and DictVectorizer (the map
// values), OneHotEncoder, Imputer, FeatureVectorizer and CategoryMapper. Behaviour follows the
// ONNX specs and, where they are silent, ONNX Runtime (noted per op).
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"
#include "kernels/ops/ml_common.h"

namespace onyx::kernels::ml {
namespace {

// [N, C] for a 2-D x, [1, C] for a 1-D one.
StatusOr<std::pair<int64_t, int64_t>> RowsCols(const NodeView& node, const Tensor& x) {
  if (x.rank() == 1) return std::make_pair(int64_t{1}, x.dim(0));
  if (x.rank() == 2) return std::make_pair(x.dim(0), x.dim(1));
  return node.Fail("input 0 '", InputName(node, 0), "' has shape ", ShapeToString(x.shape()),
                   "; expected [N, C] or [C]");
}

// ---- ZipMap ----

// Labels sorted, as ONNX Runtime's maps iterate them; `order[i]` is the column of label i.
struct ZipMapLabels {
  Tensor keys;  // int64 or string, sorted
  std::vector<int64_t> order;
};

StatusOr<ZipMapLabels> ParseZipMap(const NodeView& node) {
  const bool ints = node.has_attr("classlabels_int64s");
  const bool strings = node.has_attr("classlabels_strings");
  if (ints == strings)
    return node.Invalid(
        "exactly one of 'classlabels_int64s' and 'classlabels_strings' must be set");
  ZipMapLabels z;
  if (ints) {
    const std::vector<int64_t> l = node.attr_ints("classlabels_int64s");
    z.order.resize(l.size());
    std::iota(z.order.begin(), z.order.end(), 0);
    std::stable_sort(z.order.begin(), z.order.end(),
                     [&](int64_t a, int64_t b) { return l[a] < l[b]; });
    z.keys = Tensor::Allocate(DType::kInt64, {static_cast<int64_t>(l.size())});
    for (size_t i = 0; i < l.size(); ++i) {
      z.keys.data<int64_t>()[i] = l[z.order[i]];
      if (i > 0 && l[z.order[i]] == l[z.order[i - 1]])
        return node.Invalid("attribute 'classlabels_int64s' repeats label ", l[z.order[i]]);
    }
  } else {
    const std::vector<std::string> l = node.attr_strings("classlabels_strings");
    z.order.resize(l.size());
    std::iota(z.order.begin(), z.order.end(), 0);
    std::stable_sort(z.order.begin(), z.order.end(),
                     [&](int64_t a, int64_t b) { return l[a] < l[b]; });
    std::vector<std::string> sorted;
    for (size_t i = 0; i < l.size(); ++i) {
      sorted.push_back(l[z.order[i]]);
      if (i > 0 && sorted[i] == sorted[i - 1])
        return node.Invalid("attribute 'classlabels_strings' repeats label '", sorted[i], "'");
    }
    z.keys = StringList(sorted);
  }
  return z;
}

Status InferZipMap(InferContext& ctx) {
  ONYX_ASSIGN_OR_RETURN(const ZipMapLabels z, ParseZipMap(ctx.node()));
  const TypeInfo& x = ctx.input_type(0);
  if (x.is_tensor()) ONYX_RETURN_IF_ERROR(CheckType(ctx.node(), 0, x.elem, {DType::kFloat}));
  TypeInfo map;
  map.kind = TypeInfo::Kind::kMap;
  map.map_key = z.keys.dtype();
  map.inner = std::make_shared<TypeInfo>(TypeInfo::Tensor(DType::kFloat));
  TypeInfo seq;
  seq.kind = TypeInfo::Kind::kSequence;
  seq.inner = std::make_shared<TypeInfo>(std::move(map));
  ctx.SetOutputType(0, std::move(seq));
  return Status::Ok();
}

class ZipMapKernel : public Kernel {
 public:
  explicit ZipMapKernel(ZipMapLabels z) : z_(std::move(z)) {}
  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    const Tensor& x = ctx.input(0);
    ONYX_RETURN_IF_ERROR(CheckType(node, 0, x.dtype(), {DType::kFloat}));
    ONYX_ASSIGN_OR_RETURN(const auto nc, RowsCols(node, x));
    const auto [n, c] = nc;
    if (c != z_.keys.numel())
      return node.Fail("input 0 '", InputName(node, 0), "' has ", c, " columns but there are ",
                       z_.keys.numel(), " labels");
    // All rows' values in one buffer, in label order; each map views its row.
    auto values = std::make_shared<Tensor>(Tensor::Allocate(DType::kFloat, {n, c}));
    const float* src = x.data<float>();
    float* dst = values->data<float>();
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < c; ++j) dst[r * c + j] = src[r * c + z_.order[j]];
    std::vector<Value> maps;
    maps.reserve(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r)
      maps.push_back(Value::Map(z_.keys, Tensor::Wrap(DType::kFloat, {c}, values, dst + r * c)));
    ctx.SetOutput(0, Value::MapSequence(std::move(maps), z_.keys.dtype(), DType::kFloat));
    return Status::Ok();
  }

 private:
  ZipMapLabels z_;
};

// ---- DictVectorizer ----
// Y [1, V]: Y[0, i] is the map's value for vocabulary entry i, 0 (or "") when the map lacks it;
// keys outside the vocabulary are dropped (ONNX Runtime's output shape).

struct Vocabulary {
  DType key = DType::kUndefined;
  std::unordered_map<std::string, int64_t> strings;
  std::unordered_map<int64_t, int64_t> ints;
  int64_t size = 0;
};

StatusOr<Vocabulary> ParseVocabulary(const NodeView& node) {
  const bool strings = node.has_attr("string_vocabulary");
  const bool ints = node.has_attr("int64_vocabulary");
  if (strings == ints)
    return node.Invalid("exactly one of 'string_vocabulary' and 'int64_vocabulary' must be set");
  Vocabulary v;
  if (strings) {
    v.key = DType::kString;
    const auto s = node.attr_strings("string_vocabulary");
    v.size = static_cast<int64_t>(s.size());
    for (size_t i = 0; i < s.size(); ++i) v.strings.emplace(s[i], static_cast<int64_t>(i));
  } else {
    v.key = DType::kInt64;
    const auto s = node.attr_ints("int64_vocabulary");
    v.size = static_cast<int64_t>(s.size());
    for (size_t i = 0; i < s.size(); ++i) v.ints.emplace(s[i], static_cast<int64_t>(i));
  }
  return v;
}

const std::vector<DType> kDictValueTypes = {DType::kFloat, DType::kDouble, DType::kInt64,
                                            DType::kString};

Status InferDictVectorizer(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(const Vocabulary v, ParseVocabulary(node));
  const TypeInfo& x = ctx.input_type(0);
  if (x.kind == TypeInfo::Kind::kUnknown) return Status::Ok();
  if (x.kind != TypeInfo::Kind::kMap)
    return node.Invalid("input 0 '", InputName(node, 0), "' is ", x.ToString(), "; expected a map");
  if (x.map_key != v.key)
    return node.Invalid("input 0 '", InputName(node, 0), "' has ", DTypeName(x.map_key),
                        " keys but the vocabulary is ", DTypeName(v.key));
  const DType value = x.inner && x.inner->is_tensor() ? x.inner->elem : DType::kUndefined;
  if (!Contains(kDictValueTypes, value))
    return node.NotSupported("input 0 '", InputName(node, 0), "' has ", DTypeName(value),
                             " values; expected float, double, int64 or string");
  ctx.SetOutputType(0, RankedType(value, {Dim::Known(1), Dim::Known(v.size)}));
  return Status::Ok();
}

class DictVectorizerKernel : public Kernel {
 public:
  explicit DictVectorizerKernel(Vocabulary v) : v_(std::move(v)) {}
  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    const Value& in = ctx.input_value(0);
    if (!in.is_map()) return node.Fail("input 0 '", InputName(node, 0), "' is not a map");
    const Tensor& keys = in.map_keys();
    const Tensor& values = in.map_values();
    if (keys.dtype() != v_.key)
      return node.Fail("input 0 '", InputName(node, 0), "' has ", DTypeName(keys.dtype()),
                       " keys but the vocabulary is ", DTypeName(v_.key));
    if (!Contains(kDictValueTypes, values.dtype()))
      return node.Fail("input 0 '", InputName(node, 0), "' has ", DTypeName(values.dtype()),
                       " values; expected float, double, int64 or string");
    Tensor y = ctx.Output(0, values.dtype(), {1, v_.size});
    if (y.dtype() != DType::kString)
      std::fill_n(static_cast<uint8_t*>(y.raw_data()), y.nbytes(), 0);
    for (int64_t i = 0; i < keys.numel(); ++i) {
      int64_t pos = -1;
      if (v_.key == DType::kString) {
        auto it = v_.strings.find(keys.strings()[i]);
        if (it != v_.strings.end()) pos = it->second;
      } else {
        auto it = v_.ints.find(keys.data<int64_t>()[i]);
        if (it != v_.ints.end()) pos = it->second;
      }
      if (pos >= 0) CopyElements(values.dtype(), values.raw_data(), i, y.raw_data(), pos, 1);
    }
    return Status::Ok();
  }

 private:
  Vocabulary v_;
};

// ---- OneHotEncoder ----
// Y has X's shape plus a last dim of the categories. Numeric inputs are truncated to int64 before
// the look-up (3.7 is category 3), as in ONNX Runtime.

struct Categories {
  DType key = DType::kUndefined;
  std::unordered_map<std::string, int64_t> strings;
  std::unordered_map<int64_t, int64_t> ints;
  int64_t size = 0;
  bool zeros = true;  // an unknown category gives all zeros (else an error)
};

StatusOr<Categories> ParseCategories(const NodeView& node) {
  const bool strings = node.has_attr("cats_strings");
  const bool ints = node.has_attr("cats_int64s");
  if (strings == ints)
    return node.Invalid("exactly one of 'cats_strings' and 'cats_int64s' must be set");
  Categories c;
  if (strings) {
    c.key = DType::kString;
    const auto s = node.attr_strings("cats_strings");
    c.size = static_cast<int64_t>(s.size());
    for (size_t i = 0; i < s.size(); ++i) c.strings.emplace(s[i], static_cast<int64_t>(i));
  } else {
    c.key = DType::kInt64;
    const auto s = node.attr_ints("cats_int64s");
    c.size = static_cast<int64_t>(s.size());
    for (size_t i = 0; i < s.size(); ++i) c.ints.emplace(s[i], static_cast<int64_t>(i));
  }
  if (c.size == 0) return node.Invalid("the category list is empty");
  const int64_t zeros = node.attr_int("zeros", 1);
  if (zeros != 0 && zeros != 1)
    return node.NotSupported("attribute 'zeros' = ", zeros, " is not supported (0 or 1)");
  c.zeros = zeros == 1;
  return c;
}

const std::vector<DType> kOneHotInputs = {DType::kString, DType::kInt64, DType::kInt32,
                                          DType::kFloat, DType::kDouble};

Status CheckOneHotInput(const NodeView& node, const Categories& c, DType t) {
  ONYX_RETURN_IF_ERROR(CheckType(node, 0, t, kOneHotInputs));
  if ((t == DType::kString) != (c.key == DType::kString))
    return node.Invalid("input 0 '", InputName(node, 0), "' has type ", DTypeName(t),
                        " but the categories are ", DTypeName(c.key));
  return Status::Ok();
}

Status InferOneHotEncoder(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(const Categories c, ParseCategories(node));
  const TypeInfo& x = ctx.input_type(0);
  if (!x.is_tensor()) return Status::Ok();
  ONYX_RETURN_IF_ERROR(CheckOneHotInput(node, c, x.elem));
  TypeInfo y = TypeInfo::Tensor(DType::kFloat);
  if (x.has_shape) {
    y.has_shape = true;
    y.dims = x.dims;
    y.dims.push_back(Dim::Known(c.size));
  }
  ctx.SetOutputType(0, y);
  return Status::Ok();
}

class OneHotEncoderKernel : public Kernel {
 public:
  explicit OneHotEncoderKernel(Categories c) : c_(std::move(c)) {}
  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    const Tensor& x = ctx.input(0);
    ONYX_RETURN_IF_ERROR(CheckOneHotInput(node, c_, x.dtype()));
    Shape shape = x.shape();
    shape.push_back(c_.size);
    ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kFloat, shape));
    float* dst = y.data<float>();
    std::fill(dst, dst + y.numel(), 0.0f);
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t pos = -1;
      if (x.dtype() == DType::kString) {
        auto it = c_.strings.find(x.strings()[i]);
        if (it != c_.strings.end()) pos = it->second;
      } else {
        const double v = ElementAsDouble(x, i);
        if (std::abs(v) < 9.2e18) {  // NaN and out-of-range values match nothing
          auto it = c_.ints.find(static_cast<int64_t>(v));
          if (it != c_.ints.end()) pos = it->second;
        }
      }
      if (pos >= 0) {
        dst[i * c_.size + pos] = 1.0f;
      } else if (!c_.zeros) {
        return node.Fail("input 0 '", InputName(node, 0), "' element ", i,
                         " is not a known category and attribute 'zeros' is 0");
      }
    }
    return Status::Ok();
  }

 private:
  Categories c_;
};

// ---- Imputer ----
// Elements equal to the replaced value (NaN matches NaN) take the imputed value of their column
// (the last dim), or the single imputed value.

struct ImputerAttrs {
  std::vector<double> imputed;
  double replaced = 0;
  bool floats = true;  // imputed_value_floats / replaced_value_float (else the int64 pair)
};

StatusOr<ImputerAttrs> ParseImputer(const NodeView& node) {
  ImputerAttrs a;
  const bool f = node.has_attr("imputed_value_floats");
  const bool i = node.has_attr("imputed_value_int64s");
  if (f == i)
    return node.Invalid(
        "exactly one of 'imputed_value_floats' and 'imputed_value_int64s' must be set");
  a.floats = f;
  if (f) {
    for (float v : node.attr_floats("imputed_value_floats")) a.imputed.push_back(v);
    a.replaced = node.attr_float("replaced_value_float", 0.0f);
  } else {
    for (int64_t v : node.attr_ints("imputed_value_int64s"))
      a.imputed.push_back(static_cast<double>(v));
    a.replaced = static_cast<double>(node.attr_int("replaced_value_int64", 0));
  }
  if (a.imputed.empty()) return node.Invalid("the imputed value list is empty");
  return a;
}

Status CheckImputerInput(const NodeView& node, const ImputerAttrs& a, DType t) {
  ONYX_RETURN_IF_ERROR(CheckType(node, 0, t, kNumericInputs));
  const bool floating = t == DType::kFloat || t == DType::kDouble;
  if (floating != a.floats)
    return node.Invalid("input 0 '", InputName(node, 0), "' has type ", DTypeName(t), " but the ",
                        a.floats ? "float" : "int64", " imputed values are set");
  return Status::Ok();
}

Status InferImputer(InferContext& ctx) {
  ONYX_ASSIGN_OR_RETURN(const ImputerAttrs a, ParseImputer(ctx.node()));
  const TypeInfo& x = ctx.input_type(0);
  if (x.is_tensor()) ONYX_RETURN_IF_ERROR(CheckImputerInput(ctx.node(), a, x.elem));
  return InferSameAsInput0(ctx);
}

class ImputerKernel : public Kernel {
 public:
  explicit ImputerKernel(ImputerAttrs a) : a_(std::move(a)) {}
  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    const ImputerAttrs& a = a_;
    const Tensor& x = ctx.input(0);
    ONYX_RETURN_IF_ERROR(CheckImputerInput(node, a, x.dtype()));
    const int64_t cols = x.rank() == 0 ? 1 : x.shape().back();
    if (a.imputed.size() != 1 && static_cast<int64_t>(a.imputed.size()) != cols)
      return node.Fail("there are ", a.imputed.size(), " imputed values but input 0 '",
                       InputName(node, 0), "' has ", cols, " columns (expected 1 or ", cols, ")");
    Tensor y = ctx.Output(0, x.dtype(), x.shape());
    const bool nan = std::isnan(a.replaced);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double v = ElementAsDouble(x, i);
      const bool replace = nan ? std::isnan(v) : v == a.replaced;
      if (replace) {
        StoreFromDouble(x.dtype(), y.raw_data(), i,
                        a.imputed[a.imputed.size() == 1 ? 0 : i % cols]);
      } else {
        CopyElements(x.dtype(), x.raw_data(), i, y.raw_data(), i, 1);
      }
    }
    return Status::Ok();
  }

 private:
  ImputerAttrs a_;
};

// ---- FeatureVectorizer ----
// Y [N, sum(inputdimensions)] float: input i contributes the first inputdimensions[i] values of
// each row (its elements after the first dim; a 1-D input is one row), zero-padded when shorter.

// The sum of inputdimensions (one per input), each in [0, kMaxOutputElements], as is the sum.
StatusOr<int64_t> FeatureVectorizerWidth(const NodeView& node, int inputs) {
  const std::vector<int64_t> dims = node.attr_ints("inputdimensions");
  if (static_cast<int>(dims.size()) != inputs)
    return node.Invalid("attribute 'inputdimensions' has ", dims.size(), " entries for ", inputs,
                        " inputs");
  int64_t total = 0;
  for (int64_t d : dims) {
    if (d < 0 || d > kMaxOutputElements - total)
      return node.Invalid("attribute 'inputdimensions' has an entry ", d,
                          " outside [0, 2^46] or a sum over 2^46");
    total += d;
  }
  return total;
}

Status InferFeatureVectorizer(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(const int64_t total, FeatureVectorizerWidth(node, ctx.num_inputs()));
  Dim n;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const TypeInfo& x = ctx.input_type(i);
    if (!x.is_tensor()) continue;
    ONYX_RETURN_IF_ERROR(CheckType(node, i, x.elem, kNumericInputs));
    if (i == 0 && x.has_shape) n = x.rank() <= 1 ? Dim::Known(1) : x.dims[0];
  }
  ctx.SetOutputType(0, RankedType(DType::kFloat, {n, Dim::Known(total)}));
  return Status::Ok();
}

Status FeatureVectorizerKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(RequireInputs(ctx, ctx.num_inputs()));
  ONYX_ASSIGN_OR_RETURN(const int64_t total, FeatureVectorizerWidth(node, ctx.num_inputs()));
  const std::vector<int64_t> dims = node.attr_ints("inputdimensions");
  const auto rows_of = [](const Tensor& x) { return x.rank() <= 1 ? int64_t{1} : x.dim(0); };
  const int64_t n = ctx.num_inputs() > 0 ? rows_of(ctx.input(0)) : 0;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    ONYX_RETURN_IF_ERROR(CheckType(node, i, ctx.input(i).dtype(), kNumericInputs));
    if (rows_of(ctx.input(i)) != n)
      return node.Fail("input ", i, " '", InputName(node, i), "' has ", rows_of(ctx.input(i)),
                       " rows; input 0 has ", n);
  }
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kFloat, {n, total}));
  float* dst = y.data<float>();
  std::fill(dst, dst + y.numel(), 0.0f);
  int64_t offset = 0;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& x = ctx.input(i);
    const int64_t row = n > 0 ? x.numel() / n : 0;
    const int64_t take = std::min(row, dims[i]);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < take; ++j)
        dst[r * total + offset + j] = static_cast<float>(ElementAsDouble(x, r * row + j));
    offset += dims[i];
  }
  return Status::Ok();
}

// ---- CategoryMapper ----
// string -> int64 through cats_strings[i] -> cats_int64s[i] (default_int64 when missing), or
// int64 -> string the other way (default_string).

Status CheckCategoryMapper(const NodeView& node) {
  const auto s = node.attr_strings("cats_strings");
  const auto i = node.attr_ints("cats_int64s");
  if (s.size() != i.size())
    return node.Invalid("attributes 'cats_strings' (", s.size(), ") and 'cats_int64s' (", i.size(),
                        ") have different lengths");
  return Status::Ok();
}

Status InferCategoryMapper(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(CheckCategoryMapper(ctx.node()));
  const TypeInfo& x = ctx.input_type(0);
  if (!x.is_tensor()) return Status::Ok();
  ONYX_RETURN_IF_ERROR(CheckType(ctx.node(), 0, x.elem, {DType::kString, DType::kInt64}));
  ctx.SetOutputType(0, SameShape(x, x.elem == DType::kString ? DType::kInt64 : DType::kString));
  return Status::Ok();
}

class CategoryMapperKernel : public Kernel {
 public:
  explicit CategoryMapperKernel(const NodeView& node)
      : default_int_(node.attr_int("default_int64", -1)),
        default_string_(node.attr_string("default_string", "_Unused")) {
    const auto s = node.attr_strings("cats_strings");
    const auto i = node.attr_ints("cats_int64s");
    // The first occurrence of a key wins.
    for (size_t k = 0; k < s.size(); ++k) {
      to_int_.emplace(s[k], i[k]);
      to_string_.emplace(i[k], s[k]);
    }
  }
  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    const Tensor& x = ctx.input(0);
    ONYX_RETURN_IF_ERROR(CheckType(node, 0, x.dtype(), {DType::kString, DType::kInt64}));
    if (x.dtype() == DType::kString) {
      Tensor y = ctx.Output(0, DType::kInt64, x.shape());
      for (int64_t k = 0; k < x.numel(); ++k) {
        auto it = to_int_.find(x.strings()[k]);
        y.data<int64_t>()[k] = it == to_int_.end() ? default_int_ : it->second;
      }
    } else {
      Tensor y = ctx.Output(0, DType::kString, x.shape());
      for (int64_t k = 0; k < x.numel(); ++k) {
        auto it = to_string_.find(x.data<int64_t>()[k]);
        y.strings()[k] = it == to_string_.end() ? default_string_ : it->second;
      }
    }
    return Status::Ok();
  }

 private:
  int64_t default_int_;
  std::string default_string_;
  std::unordered_map<std::string, int64_t> to_int_;
  std::unordered_map<int64_t, std::string> to_string_;
};

StatusOr<std::unique_ptr<Kernel>> CreateCategoryMapper(const NodeView& node,
                                                       const std::vector<TypeInfo>&) {
  ONYX_RETURN_IF_ERROR(CheckCategoryMapper(node));
  return std::unique_ptr<Kernel>(new CategoryMapperKernel(node));
}

}  // namespace

void RegisterMlFeatures(OpRegistry& r) {
  AddPrepared(r, "ZipMap", 1, kLatestOpset, InferZipMap, CreateParsed<ZipMapKernel, ParseZipMap>);
  AddPrepared(r, "DictVectorizer", 1, kLatestOpset, InferDictVectorizer,
              CreateParsed<DictVectorizerKernel, ParseVocabulary>);
  AddPrepared(r, "OneHotEncoder", 1, kLatestOpset, InferOneHotEncoder,
              CreateParsed<OneHotEncoderKernel, ParseCategories>);
  AddPrepared(r, "Imputer", 1, kLatestOpset, InferImputer,
              CreateParsed<ImputerKernel, ParseImputer>);
  r.Add(kMl, "FeatureVectorizer", 1, kLatestOpset, InferFeatureVectorizer, FeatureVectorizerKernel);
  AddPrepared(r, "CategoryMapper", 1, kLatestOpset, InferCategoryMapper, CreateCategoryMapper);
}

}  // namespace onyx::kernels::ml
