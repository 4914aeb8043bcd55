// Text family: StringNormalizer, StringConcat, StringSplit, RegexFullMatch, TfIdfVectorizer.
#include "kernels/reference/text.h"

#include <algorithm>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"

namespace onyx::kernels {
namespace {

using reference::CaseChange;
using reference::TfIdfModel;

// Registers an op whose kernel is prepared once per node at plan time.
void AddPrepared(OpRegistry& r, const std::string& op_type, int64_t since, InferFn infer,
                 CreateFn create) {
  OpDef def;
  def.op_type = op_type;
  def.since = since;
  def.infer = infer;
  def.impls.push_back(KernelImpl{op_type + "_ref", nullptr, std::move(create), nullptr});
  r.AddDef(std::move(def));
}

Status ExpectStringInput(InferContext& ctx, int i) {
  return ExpectInputType(ctx, i, {DType::kString});
}

Status CheckStringTensor(const NodeView& node, const Tensor& t, int i) {
  if (t.dtype() == DType::kString) return Status::Ok();
  return node.NotSupported("input ", i, " '", InputName(node, i), "' has type ",
                           DTypeName(t.dtype()), "; expected string");
}

// ---- StringNormalizer (opset 10) ----

StatusOr<CaseChange> ParseCaseChange(const NodeView& node) {
  const std::string action = node.attr_string("case_change_action", "NONE");
  if (action == "NONE") return CaseChange::kNone;
  if (action == "LOWER") return CaseChange::kLower;
  if (action == "UPPER") return CaseChange::kUpper;
  return node.Invalid("attribute 'case_change_action' must be NONE, LOWER or UPPER, got '", action,
                      "'");
}

// ONNX accepts only [C] and [1, C] inputs.
Status CheckNormalizerShape(const NodeView& node, const std::vector<Dim>& dims) {
  const bool ok =
      dims.size() == 1 || (dims.size() == 2 && (!dims[0].known() || dims[0].value == 1));
  if (ok) return Status::Ok();
  TypeInfo t = TypeInfo::Tensor(DType::kString);
  t.has_shape = true;
  t.dims = dims;
  return node.Invalid("input 0 '", InputName(node, 0), "' has shape ", t.ToString(),
                      "; expected [C] or [1, C]");
}

Status InferStringNormalizer(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_RETURN_IF_ERROR(ExpectStringInput(ctx, 0));
  ONYX_RETURN_IF_ERROR(ParseCaseChange(node).status());
  const TypeInfo& x = ctx.input_type(0);
  TypeInfo y = TypeInfo::Tensor(DType::kString);
  if (x.is_tensor() && x.has_shape) {
    ONYX_RETURN_IF_ERROR(CheckNormalizerShape(node, x.dims));
    y.has_shape = true;
    y.dims = x.dims;
    // Stop words remove a data-dependent number of elements.
    if (!node.attr_strings("stopwords").empty()) y.dims.back() = Dim();
  }
  ctx.SetOutputType(0, y);
  return Status::Ok();
}

Status StringNormalizerKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  ONYX_RETURN_IF_ERROR(CheckStringTensor(node, x, 0));
  std::vector<Dim> dims;
  for (int64_t d : x.shape()) dims.push_back(Dim::Known(d));
  ONYX_RETURN_IF_ERROR(CheckNormalizerShape(node, dims));
  ONYX_ASSIGN_OR_RETURN(const CaseChange action, ParseCaseChange(node));
  std::vector<std::string> kept =
      reference::StringNormalize(x.strings(), x.numel(), node.attr_strings("stopwords"),
                                 node.attr_int("is_case_sensitive", 0) != 0, action);
  // When every element is dropped the output is one empty string ([1] or [1, 1]).
  if (kept.empty()) kept.emplace_back();
  Shape shape = x.shape();
  shape.back() = static_cast<int64_t>(kept.size());
  Tensor y = ctx.Output(0, DType::kString, shape);
  std::move(kept.begin(), kept.end(), y.strings());
  return Status::Ok();
}

// ---- StringConcat (opset 20) ----

Status InferStringConcat(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectStringInput(ctx, 0));
  ONYX_RETURN_IF_ERROR(ExpectStringInput(ctx, 1));
  return InferBroadcast(ctx, {0, 1}, DType::kString);
}

Status StringConcatKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& y = ctx.input(1);
  ONYX_RETURN_IF_ERROR(CheckStringTensor(node, x, 0));
  ONYX_RETURN_IF_ERROR(CheckStringTensor(node, y, 1));
  auto shape = BroadcastShapes({x.shape(), y.shape()});
  if (!shape.ok()) return node.Fail("inputs 0 and 1: ", shape.status().message());
  Tensor z = ctx.Output(0, DType::kString, shape.value());
  reference::StringConcat(x, y, &z);
  return Status::Ok();
}

// ---- StringSplit (opset 20) ----

Status InferStringSplit(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectStringInput(ctx, 0));
  const TypeInfo& x = ctx.input_type(0);
  TypeInfo y = TypeInfo::Tensor(DType::kString);
  TypeInfo z = TypeInfo::Tensor(DType::kInt64);
  if (x.is_tensor() && x.has_shape) {
    z.has_shape = true;
    z.dims = x.dims;
    y.has_shape = true;
    y.dims = x.dims;
    y.dims.push_back(Dim());  // the most substrings of any element: data-dependent
  }
  ctx.SetOutputType(0, y);
  if (ctx.num_outputs() > 1) ctx.SetOutputType(1, z);
  return Status::Ok();
}

Status StringSplitKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  ONYX_RETURN_IF_ERROR(CheckStringTensor(node, x, 0));
  const std::string delimiter = node.attr_string("delimiter", "");
  // Unset (or negative, as in Python) means no limit.
  const int64_t maxsplit = node.attr_int("maxsplit", -1);
  const int64_t n = x.numel();
  std::vector<std::vector<std::string>> parts(static_cast<size_t>(n));
  int64_t width = 0;
  for (int64_t i = 0; i < n; ++i) {
    parts[i] = reference::SplitString(x.strings()[i], delimiter, maxsplit);
    width = std::max(width, static_cast<int64_t>(parts[i].size()));
  }
  Shape y_shape = x.shape();
  y_shape.push_back(width);
  Tensor y = ctx.Output(0, DType::kString, y_shape);
  std::string* dst = y.strings();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < width; ++j) {
      // Shorter rows are padded with empty strings.
      dst[i * width + j] =
          j < static_cast<int64_t>(parts[i].size()) ? std::move(parts[i][j]) : std::string();
    }
  }
  if (ctx.num_outputs() > 1 && ctx.has_output(1)) {
    Tensor z = ctx.Output(1, DType::kInt64, x.shape());
    for (int64_t i = 0; i < n; ++i) z.data<int64_t>()[i] = static_cast<int64_t>(parts[i].size());
  }
  return Status::Ok();
}

// ---- RegexFullMatch (opset 20) ----
// ONNX specifies RE2 syntax; onyx uses std::regex with the ECMAScript grammar. The common subset
// (classes, \w \d \s \b, groups, alternation, bounded repeats, anchors) behaves the same. They
// differ in: RE2's (?P<name>...), \A, \z, \pL/\p{Greek} and inline flags like (?i) are rejected
// here; ECMAScript's backreferences and lookaheads are accepted here but rejected by RE2; '.' and
// classes match one byte here but one UTF-8 code point in RE2; and std::regex backtracks (it can
// be slow, and very long inputs can exhaust the stack) where RE2 runs in linear time.

StatusOr<std::shared_ptr<const std::regex>> CompilePattern(const NodeView& node) {
  ONYX_ASSIGN_OR_RETURN(const std::string pattern, node.RequiredString("pattern"));
  try {
    return std::make_shared<const std::regex>(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return node.Invalid("attribute 'pattern' '", pattern, "' is not a valid regex: ", e.what());
  }
}

class RegexFullMatchKernel : public Kernel {
 public:
  explicit RegexFullMatchKernel(std::shared_ptr<const std::regex> re) : re_(std::move(re)) {}
  Status Run(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    ONYX_RETURN_IF_ERROR(CheckStringTensor(ctx.node(), x, 0));
    Tensor y = ctx.Output(0, DType::kBool, x.shape());
    reference::RegexFullMatch(*re_, x.strings(), y.data<bool>(), x.numel());
    return Status::Ok();
  }

 private:
  std::shared_ptr<const std::regex> re_;
};

Status InferRegexFullMatch(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ExpectStringInput(ctx, 0));
  ONYX_RETURN_IF_ERROR(CompilePattern(ctx.node()).status());
  TypeInfo y = ctx.input_type(0);
  y.kind = TypeInfo::Kind::kTensor;
  y.elem = DType::kBool;
  ctx.SetOutputType(0, y);
  return Status::Ok();
}

StatusOr<std::unique_ptr<Kernel>> CreateRegexFullMatch(const NodeView& node,
                                                       const std::vector<TypeInfo>&) {
  ONYX_ASSIGN_OR_RETURN(auto re, CompilePattern(node));
  return std::unique_ptr<Kernel>(new RegexFullMatchKernel(std::move(re)));
}

// ---- TfIdfVectorizer (opset 9) ----

StatusOr<TfIdfModel> ParseTfIdf(const NodeView& node) {
  TfIdfModel m;
  ONYX_ASSIGN_OR_RETURN(const std::string mode, node.RequiredString("mode"));
  if (mode == "TF") {
    m.mode = TfIdfModel::Mode::kTf;
  } else if (mode == "IDF") {
    m.mode = TfIdfModel::Mode::kIdf;
  } else if (mode == "TFIDF") {
    m.mode = TfIdfModel::Mode::kTfIdf;
  } else {
    return node.Invalid("attribute 'mode' must be TF, IDF or TFIDF, got '", mode, "'");
  }
  ONYX_ASSIGN_OR_RETURN(m.min_gram_length, node.RequiredInt("min_gram_length"));
  ONYX_ASSIGN_OR_RETURN(m.max_gram_length, node.RequiredInt("max_gram_length"));
  ONYX_ASSIGN_OR_RETURN(m.max_skip_count, node.RequiredInt("max_skip_count"));
  if (m.min_gram_length < 1 || m.max_gram_length < m.min_gram_length) {
    return node.Invalid("attributes 'min_gram_length' (", m.min_gram_length,
                        ") and 'max_gram_length' (", m.max_gram_length,
                        ") must satisfy 1 <= min <= max");
  }
  if (m.max_skip_count < 0)
    return node.Invalid("attribute 'max_skip_count' must be >= 0, got ", m.max_skip_count);
  ONYX_ASSIGN_OR_RETURN(const std::vector<int64_t> counts, node.RequiredInts("ngram_counts"));
  ONYX_ASSIGN_OR_RETURN(const std::vector<int64_t> indexes, node.RequiredInts("ngram_indexes"));
  const bool has_ints = node.has_attr("pool_int64s");
  const bool has_strings = node.has_attr("pool_strings");
  if (has_ints == has_strings)
    return node.Invalid("exactly one of attributes 'pool_int64s' and 'pool_strings' must be set");
  m.strings = has_strings;
  const std::vector<int64_t> pool_ints = node.attr_ints("pool_int64s");
  const std::vector<std::string> pool_strings = node.attr_strings("pool_strings");
  const int64_t pool_size =
      static_cast<int64_t>(has_strings ? pool_strings.size() : pool_ints.size());
  if (indexes.empty()) return node.Invalid("attribute 'ngram_indexes' is empty");
  for (int64_t v : indexes) {
    if (v < 0) return node.Invalid("attribute 'ngram_indexes' has negative entry ", v);
    m.output_size = std::max(m.output_size, v + 1);
  }
  // ngram_counts[i] is where the (i+1)-grams start in the pool (CSR style).
  int64_t gram_index = 0;  // running index of the n-gram across all lengths
  for (size_t i = 0; i < counts.size(); ++i) {
    const int64_t n = static_cast<int64_t>(i) + 1;
    const int64_t begin = counts[i];
    const int64_t end = i + 1 < counts.size() ? counts[i + 1] : pool_size;
    if (begin < 0 || end < begin || end > pool_size) {
      return node.Invalid("attribute 'ngram_counts' [", i, "] = ", begin,
                          " does not describe a range of the pool (size ", pool_size, ")");
    }
    if ((end - begin) % n != 0) {
      return node.Invalid("attribute 'ngram_counts': the ", n, "-gram section [", begin, ", ", end,
                          ") is not a multiple of ", n, " items");
    }
    for (int64_t start = begin; start < end; start += n, ++gram_index) {
      if (n < m.min_gram_length || n > m.max_gram_length) continue;
      if (gram_index >= static_cast<int64_t>(indexes.size())) {
        return node.Invalid("attribute 'ngram_indexes' has ", indexes.size(),
                            " entries but the pool holds more n-grams");
      }
      const int64_t column = indexes[gram_index];
      // A repeated n-gram keeps its last column, as the ONNX reference does.
      if (has_strings) {
        m.string_grams[n][std::vector<std::string>(pool_strings.begin() + start,
                                                   pool_strings.begin() + start + n)] = column;
      } else {
        m.int_grams[n][std::vector<int64_t>(pool_ints.begin() + start,
                                            pool_ints.begin() + start + n)] = column;
      }
    }
  }
  m.weights = node.attr_floats("weights");
  if (!m.weights.empty() && static_cast<int64_t>(m.weights.size()) < m.output_size) {
    return node.Invalid("attribute 'weights' has ", m.weights.size(),
                        " entries; expected one per output column (", m.output_size, ")");
  }
  return m;
}

Status CheckTfIdfInput(const NodeView& node, const TfIdfModel& m, DType t) {
  const bool ok = m.strings ? t == DType::kString : (t == DType::kInt32 || t == DType::kInt64);
  if (ok) return Status::Ok();
  return node.NotSupported(
      "input 0 '", InputName(node, 0), "' has type ", DTypeName(t), "; expected ",
      m.strings ? "string (pool_strings is set)" : "int32 or int64 (pool_int64s is set)");
}

Status InferTfIdfVectorizer(InferContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(const TfIdfModel m, ParseTfIdf(node));
  const TypeInfo& x = ctx.input_type(0);
  TypeInfo y = TypeInfo::Tensor(DType::kFloat);
  if (x.is_tensor()) {
    ONYX_RETURN_IF_ERROR(CheckTfIdfInput(node, m, x.elem));
    if (x.has_shape) {
      if (x.rank() != 1 && x.rank() != 2) {
        return node.Invalid("input 0 '", InputName(node, 0), "' has shape ", x.ToString(),
                            "; expected [C] or [N, C]");
      }
      y.has_shape = true;
      if (x.rank() == 2) y.dims.push_back(x.dims[0]);
      y.dims.push_back(Dim::Known(m.output_size));
    }
  }
  ctx.SetOutputType(0, y);
  return Status::Ok();
}

class TfIdfVectorizerKernel : public Kernel {
 public:
  explicit TfIdfVectorizerKernel(TfIdfModel model) : model_(std::move(model)) {}
  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    const Tensor& x = ctx.input(0);
    ONYX_RETURN_IF_ERROR(CheckTfIdfInput(node, model_, x.dtype()));
    if (x.rank() != 1 && x.rank() != 2) {
      return node.Fail("input 0 '", InputName(node, 0), "' has shape ", ShapeToString(x.shape()),
                       "; expected [C] or [N, C]");
    }
    const int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
    const int64_t cols = x.shape().back();
    Shape y_shape = {model_.output_size};
    if (x.rank() == 2) y_shape.insert(y_shape.begin(), rows);
    Tensor y = ctx.Output(0, DType::kFloat, y_shape);
    reference::TfIdfVectorize(model_, x, rows, cols, y.data<float>());
    return Status::Ok();
  }

 private:
  TfIdfModel model_;
};

StatusOr<std::unique_ptr<Kernel>> CreateTfIdfVectorizer(const NodeView& node,
                                                        const std::vector<TypeInfo>&) {
  ONYX_ASSIGN_OR_RETURN(TfIdfModel m, ParseTfIdf(node));
  return std::unique_ptr<Kernel>(new TfIdfVectorizerKernel(std::move(m)));
}

}  // namespace

void RegisterText(OpRegistry& r) {
  r.Add("", "StringNormalizer", 10, kLatestOpset, InferStringNormalizer, StringNormalizerKernel);
  r.Add("", "StringConcat", 20, kLatestOpset, InferStringConcat, StringConcatKernel);
  r.Add("", "StringSplit", 20, kLatestOpset, InferStringSplit, StringSplitKernel);
  AddPrepared(r, "RegexFullMatch", 20, InferRegexFullMatch, CreateRegexFullMatch);
  AddPrepared(r, "TfIdfVectorizer", 9, InferTfIdfVectorizer, CreateTfIdfVectorizer);
}

}  // namespace onyx::kernels
