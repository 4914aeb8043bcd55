// TreeEnsembleClassifier and TreeEnsembleRegressor (ai.onnx.ml 1 and 3): attributes parsed into
// a compiled forest at plan time; scores follow ONNX Runtime's rules (base values, the binary
// single-score case, post transforms) so converted scikit-learn models give its results.
#include "kernels/reference/ml_tree.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"
#include "kernels/ops/ml_common.h"

namespace onyx::kernels::ml {
namespace {

using reference::CompileForest;
using reference::EvaluateForest;
using reference::Forest;
using reference::MlPostTransform;
using reference::TreeAggregate;
using reference::TreeEnsembleSpec;
using reference::TreeMode;

Status CheckLength(const NodeView& node, const char* name, size_t got, size_t want,
                   const char* like) {
  if (got == want) return Status::Ok();
  return node.Invalid("attribute '", name, "' has ", got, " entries; expected ", want, " (as '",
                      like, "')");
}

// The node and weight attributes; `prefix` is "class" or "target".
StatusOr<TreeEnsembleSpec> ParseSpec(const NodeView& node, const std::string& prefix,
                                     bool* wants_double) {
  TreeEnsembleSpec s;
  s.tree_ids = node.attr_ints("nodes_treeids");
  const size_t n = s.tree_ids.size();
  if (n == 0) return node.Invalid("attribute 'nodes_treeids' is missing or empty");
  s.node_ids = node.attr_ints("nodes_nodeids");
  s.feature_ids = node.attr_ints("nodes_featureids");
  s.true_ids = node.attr_ints("nodes_truenodeids");
  s.false_ids = node.attr_ints("nodes_falsenodeids");
  ONYX_RETURN_IF_ERROR(CheckLength(node, "nodes_nodeids", s.node_ids.size(), n, "nodes_treeids"));
  ONYX_RETURN_IF_ERROR(
      CheckLength(node, "nodes_featureids", s.feature_ids.size(), n, "nodes_treeids"));
  ONYX_RETURN_IF_ERROR(
      CheckLength(node, "nodes_truenodeids", s.true_ids.size(), n, "nodes_treeids"));
  ONYX_RETURN_IF_ERROR(
      CheckLength(node, "nodes_falsenodeids", s.false_ids.size(), n, "nodes_treeids"));
  const std::vector<std::string> modes = node.attr_strings("nodes_modes");
  ONYX_RETURN_IF_ERROR(CheckLength(node, "nodes_modes", modes.size(), n, "nodes_treeids"));
  static const char* const kModes[] = {"BRANCH_LEQ", "BRANCH_LT",  "BRANCH_GTE", "BRANCH_GT",
                                       "BRANCH_EQ",  "BRANCH_NEQ", "LEAF"};
  s.modes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    int m = -1;
    for (int k = 0; k < 7; ++k)
      if (modes[i] == kModes[k]) m = k;
    if (m < 0)
      return node.NotSupported("attribute 'nodes_modes' [", i, "] = '", modes[i],
                               "' is not supported (BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT, "
                               "BRANCH_EQ, BRANCH_NEQ or LEAF)");
    s.modes[i] = static_cast<TreeMode>(m);
  }
  bool values_double = false;
  ONYX_ASSIGN_OR_RETURN(s.thresholds, FloatsOrTensor(node, "nodes_values", &values_double));
  if (s.thresholds.empty()) s.thresholds.assign(n, 0.0);  // all leaves
  ONYX_RETURN_IF_ERROR(CheckLength(node, "nodes_values", s.thresholds.size(), n, "nodes_treeids"));
  const std::vector<int64_t> missing = node.attr_ints("nodes_missing_value_tracks_true");
  if (!missing.empty()) {
    ONYX_RETURN_IF_ERROR(
        CheckLength(node, "nodes_missing_value_tracks_true", missing.size(), n, "nodes_treeids"));
    s.missing_true.assign(missing.begin(), missing.end());
    for (auto& m : s.missing_true) m = m != 0;
  }
  // nodes_hitrates(_as_tensor) describe the training data and do not change predictions.
  s.weight_tree_ids = node.attr_ints(prefix + "_treeids");
  s.weight_node_ids = node.attr_ints(prefix + "_nodeids");
  s.weight_targets = node.attr_ints(prefix + "_ids");
  bool weights_double = false;
  ONYX_ASSIGN_OR_RETURN(s.weights, FloatsOrTensor(node, prefix + "_weights", &weights_double));
  const size_t w = s.weights.size();
  const std::string wname = prefix + "_weights";
  ONYX_RETURN_IF_ERROR(
      CheckLength(node, (prefix + "_treeids").c_str(), s.weight_tree_ids.size(), w, wname.c_str()));
  ONYX_RETURN_IF_ERROR(
      CheckLength(node, (prefix + "_nodeids").c_str(), s.weight_node_ids.size(), w, wname.c_str()));
  ONYX_RETURN_IF_ERROR(
      CheckLength(node, (prefix + "_ids").c_str(), s.weight_targets.size(), w, wname.c_str()));
  *wants_double = values_double || weights_double;
  return s;
}

// What the classifier and the regressor share: the compiled forest in float and/or double.
struct TreeModel {
  std::shared_ptr<const Forest<float>> f32;
  std::shared_ptr<const Forest<double>> f64;
  TreeAggregate aggregate = TreeAggregate::kSum;
  MlPostTransform post = MlPostTransform::kNone;
  std::vector<double> base_values;
  int64_t n_targets = 1;
  int64_t n_trees = 0;
  int64_t max_feature = -1;
};

// Thresholds compare in the input's precision: float inputs against a float forest (as ONNX
// Runtime does), double inputs, and models that give double attributes, against a double one.
// Shape inference (compile = false) checks the attributes and finds max_feature without
// building the forest.
StatusOr<TreeModel> BuildModel(const NodeView& node, const std::string& prefix, int64_t n_targets,
                               DType input, bool compile) {
  bool wants_double = false;
  ONYX_ASSIGN_OR_RETURN(TreeEnsembleSpec spec, ParseSpec(node, prefix, &wants_double));
  spec.n_targets = n_targets;
  TreeModel m;
  m.n_targets = n_targets;
  ONYX_ASSIGN_OR_RETURN(m.post, PostTransformAttr(node));
  ONYX_ASSIGN_OR_RETURN(m.base_values, FloatsOrTensor(node, "base_values"));
  if (!compile) {
    for (size_t i = 0; i < spec.modes.size(); ++i)
      if (spec.modes[i] != TreeMode::kLeaf)
        m.max_feature = std::max(m.max_feature, spec.feature_ids[i]);
    return m;
  }
  if (wants_double || input == DType::kDouble || input == DType::kUndefined) {
    auto f = CompileForest<double>(spec);
    if (!f.ok()) return f.status().WithContext(node.node().Describe() + ": ");
    m.f64 = std::make_shared<const Forest<double>>(std::move(f).value());
    m.n_trees = static_cast<int64_t>(m.f64->roots.size());
    m.max_feature = m.f64->max_feature;
  }
  if (!wants_double && input != DType::kDouble) {
    auto f = CompileForest<float>(spec);
    if (!f.ok()) return f.status().WithContext(node.node().Describe() + ": ");
    m.f32 = std::make_shared<const Forest<float>>(std::move(f).value());
    m.n_trees = static_cast<int64_t>(m.f32->roots.size());
    m.max_feature = m.f32->max_feature;
  }
  return m;
}

// X as [N, F]: a 1-D input is one row.
StatusOr<Tensor> Rows(const NodeView& node, const Tensor& x, int64_t max_feature) {
  ONYX_RETURN_IF_ERROR(CheckType(node, 0, x.dtype(), kNumericInputs));
  if (x.rank() != 1 && x.rank() != 2)
    return node.Fail("input 0 '", InputName(node, 0), "' has shape ", ShapeToString(x.shape()),
                     "; expected [N, F] or [F]");
  Tensor rows = x.rank() == 1 ? x.Reshaped({1, x.dim(0)}) : x;
  if (rows.dim(1) <= max_feature)
    return node.Fail("input 0 '", InputName(node, 0), "' has ", rows.dim(1),
                     " features but the trees read feature ", max_feature);
  return rows;
}

// Runs the forest that matches x's type; fn(row_begin, rows, score, has) gets doubles.
template <typename Fn>
void Evaluate(const TreeModel& m, const Tensor& x, int threads, const Fn& fn) {
  if (m.f32 && x.dtype() != DType::kDouble) {
    EvaluateForest<float>(*m.f32, m.aggregate, x, threads,
                          [&](int64_t r0, int64_t rows, const float* score, const uint8_t* has) {
                            fn(r0, rows, score, has);
                          });
  } else {
    EvaluateForest<double>(*m.f64, m.aggregate, x, threads,
                           [&](int64_t r0, int64_t rows, const double* score, const uint8_t* has) {
                             fn(r0, rows, score, has);
                           });
  }
}

// ---- TreeEnsembleRegressor ----

StatusOr<TreeModel> BuildRegressor(const NodeView& node, DType input, bool compile) {
  ONYX_ASSIGN_OR_RETURN(const int64_t n_targets, node.RequiredInt("n_targets"));
  // Accumulators hold rows x n_targets values: a bound keeps a bad model from asking for more
  // memory than any real one needs.
  constexpr int64_t kMaxTargets = int64_t{1} << 24;
  if (n_targets < 1 || n_targets > kMaxTargets)
    return node.Invalid("attribute 'n_targets' must be in [1, 2^24], got ", n_targets);
  ONYX_ASSIGN_OR_RETURN(
      const int agg, EnumAttr(node, "aggregate_function", "SUM", {"AVERAGE", "SUM", "MIN", "MAX"}));
  ONYX_ASSIGN_OR_RETURN(TreeModel m, BuildModel(node, "target", n_targets, input, compile));
  m.aggregate = static_cast<TreeAggregate>(agg);
  const size_t b = m.base_values.size();
  if (b != 0 && b != 1 && b != static_cast<size_t>(n_targets))
    return node.Invalid("attribute 'base_values' has ", b, " entries; expected 0, 1 or ", n_targets,
                        " (n_targets)");
  return m;
}

Status InferTreeRegressor(InferContext& ctx) {
  const NodeView& node = ctx.node();
  const TypeInfo& x = ctx.input_type(0);
  ONYX_ASSIGN_OR_RETURN(const TreeModel m, BuildRegressor(node, DType::kFloat, false));
  ONYX_RETURN_IF_ERROR(CheckRowsInput(node, x, m.max_feature));
  ctx.SetOutputType(0, RankedType(DType::kFloat, {RowsDim(x), Dim::Known(m.n_targets)}));
  return Status::Ok();
}

class TreeRegressorKernel : public Kernel {
 public:
  explicit TreeRegressorKernel(TreeModel m) : m_(std::move(m)) {}
  Status Run(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor x, Rows(ctx.node(), ctx.input(0), m_.max_feature));
    const int64_t k = m_.n_targets;
    ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kFloat, {x.dim(0), k}));
    float* out = y.data<float>();
    const std::vector<double>& base = m_.base_values;
    const bool average = m_.aggregate == TreeAggregate::kAverage;
    Evaluate(m_, x, ctx.intra_op_threads(),
             [&](int64_t r0, int64_t rows, const auto* score, const uint8_t* has) {
               using T = std::remove_cv_t<std::remove_pointer_t<decltype(score)>>;
               for (int64_t r = 0; r < rows; ++r) {
                 float* z = out + (r0 + r) * k;
                 for (int64_t j = 0; j < k; ++j) {
                   // Several targets: one no leaf reached is 0, base value or not (as ONNX
                   // Runtime 1.2x); one target always has a value (a leaf without weights
                   // counts as 0).
                   if (k > 1 && !has[r * k + j]) {
                     z[j] = 0.0f;
                     continue;
                   }
                   T v = score[r * k + j];
                   if (average) v /= static_cast<T>(m_.n_trees);
                   // One target: a single base value is the origin (as ONNX Runtime); several
                   // targets: base values count only when there is one per target.
                   if (base.size() == static_cast<size_t>(k) || (k == 1 && base.size() == 1))
                     v += static_cast<T>(base[j]);
                   z[j] = static_cast<float>(v);
                 }
                 TransformRow(m_.post, z, k);
               }
             });
    return Status::Ok();
  }

 private:
  TreeModel m_;
};

StatusOr<std::unique_ptr<Kernel>> CreateTreeRegressor(const NodeView& node,
                                                      const std::vector<TypeInfo>& types) {
  ONYX_ASSIGN_OR_RETURN(TreeModel m, BuildRegressor(node, InputDType(types), true));
  return std::unique_ptr<Kernel>(new TreeRegressorKernel(std::move(m)));
}

// ---- TreeEnsembleClassifier ----

struct ClassifierModel {
  TreeModel trees;
  Labels labels;
  bool binary_case = false;  // two classes, every weight for one class: one score per row
  bool all_positive = true;  // no negative weight (then the binary threshold is 0.5, not 0)
  int64_t n_classes() const { return trees.n_targets; }
};

StatusOr<ClassifierModel> BuildClassifier(const NodeView& node, DType input, bool compile) {
  ClassifierModel c;
  ONYX_ASSIGN_OR_RETURN(c.labels, ParseLabels(node, "classlabels_int64s"));
  const int64_t k = c.labels.size();
  ONYX_ASSIGN_OR_RETURN(c.trees, BuildModel(node, "class", k, input, compile));
  const std::vector<int64_t> ids = node.attr_ints("class_ids");
  std::vector<double> weights;
  ONYX_ASSIGN_OR_RETURN(weights, FloatsOrTensor(node, "class_weights"));
  bool one_class = true;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != ids[0]) one_class = false;
    if (weights[i] < 0) c.all_positive = false;
  }
  c.binary_case = k == 2 && !ids.empty() && one_class;
  const size_t b = c.trees.base_values.size();
  if (b != 0 && b != static_cast<size_t>(k) && !(k == 2 && b == 1))
    return node.Invalid("attribute 'base_values' has ", b, " entries; expected 0 or ", k,
                        " (the classes)");
  return c;
}

Status InferTreeClassifier(InferContext& ctx) {
  const NodeView& node = ctx.node();
  const TypeInfo& x = ctx.input_type(0);
  ONYX_ASSIGN_OR_RETURN(const ClassifierModel c, BuildClassifier(node, DType::kFloat, false));
  ONYX_RETURN_IF_ERROR(CheckRowsInput(node, x, c.trees.max_feature));
  const Dim n = RowsDim(x);
  ctx.SetOutputType(0, RankedType(c.labels.use_strings ? DType::kString : DType::kInt64, {n}));
  ctx.SetOutputType(1, RankedType(DType::kFloat, {n, Dim::Known(c.n_classes())}));
  return Status::Ok();
}

// One row's label (an index into the labels) and scores z[k], from its sums, by ONNX Runtime's
// rules: more than two classes take the arg max (first on ties) after base values; two classes
// with weights for one class only keep one score s and write [1 - s, s] (weights all >= 0,
// threshold 0.5) or [-s, s] / [logistic(-s), logistic(s)] (mixed weights, threshold 0).
template <typename T>
int64_t ClassifyRow(const ClassifierModel& c, const T* score, const uint8_t* has, float* z) {
  const int64_t k = c.n_classes();
  const std::vector<double>& base = c.trees.base_values;
  const MlPostTransform post = c.trees.post;
  if (k != 2) {
    int64_t best = -1;
    T best_score = 0;
    const int64_t based = std::min<int64_t>(static_cast<int64_t>(base.size()), k);
    for (int64_t j = 0; j < k; ++j) {
      // A base value gives its class a score even when no leaf did.
      const T s = j < based ? score[j] + static_cast<T>(base[j]) : score[j];
      if ((j < based || has[j]) && (best < 0 || s > best_score)) {
        best = j;
        best_score = s;
      }
      z[j] = static_cast<float>(s);
    }
    if (k > 1) reference::ApplyMlPostTransform(post, z, k);
    return best < 0 ? 0 : best;
  }
  T s0 = score[0];
  T s1 = score[1];
  bool h0 = has[0] != 0;
  bool h1 = has[1] != 0;
  bool single = false;  // only s0 is kept
  if (base.size() == 2) {
    if (h1) {
      // As ONNX Runtime: base_values[0] is unused, s1 becomes base[1] + s0.
      s1 = static_cast<T>(base[1]) + s0;
      s0 = -s1;
    } else {
      s1 += static_cast<T>(base[1]);
      s0 += static_cast<T>(base[0]);
    }
    h1 = true;
  } else if (base.size() == 1) {
    s0 += static_cast<T>(base[0]);
    single = !h1;
  } else {
    single = !h1;
  }
  const T pos = (!single && h1) ? s1 : (h0 || single ? s0 : T(0));
  int64_t label;
  int mode = -1;  // how the second score is written (binary case)
  if (c.binary_case) {
    if (c.all_positive) {
      label = pos > T(0.5) ? 1 : 0;
      mode = pos > T(0.5) ? 0 : 1;
    } else {
      label = pos > 0 ? 1 : 0;
      mode = pos > 0 ? 2 : 3;
    }
  } else {
    label = pos > 0 ? 1 : 0;
    if (single) mode = 3;
  }
  if (!single) {
    z[0] = static_cast<float>(s0);
    z[1] = static_cast<float>(s1);
    reference::ApplyMlPostTransform(post, z, 2);
    return label;
  }
  const float v = static_cast<float>(s0);
  if (post == MlPostTransform::kProbit) {
    z[0] = reference::MlProbit(v);
    z[1] = 0;
  } else if (mode <= 1) {
    z[0] = 1.0f - v;
    z[1] = v;
  } else if (post == MlPostTransform::kLogistic) {
    z[0] = reference::MlLogistic(-v);
    z[1] = reference::MlLogistic(v);
  } else {
    z[0] = -v;
    z[1] = v;
  }
  return label;
}

class TreeClassifierKernel : public Kernel {
 public:
  explicit TreeClassifierKernel(ClassifierModel c) : c_(std::move(c)) {}
  Status Run(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor x, Rows(ctx.node(), ctx.input(0), c_.trees.max_feature));
    const int64_t n = x.dim(0);
    const int64_t k = c_.n_classes();
    Tensor y = LabelOutput(ctx, c_.labels, n);
    ONYX_ASSIGN_OR_RETURN(Tensor z, NewOutput(ctx, 1, DType::kFloat, {n, k}));
    float* zd = z.data<float>();
    Evaluate(c_.trees, x, ctx.intra_op_threads(),
             [&](int64_t r0, int64_t rows, const auto* score, const uint8_t* has) {
               for (int64_t r = 0; r < rows; ++r) {
                 const int64_t i = r0 + r;
                 const int64_t label = ClassifyRow(c_, score + r * k, has + r * k, zd + i * k);
                 WriteLabel(y, c_.labels, i, label, true);
               }
             });
    return Status::Ok();
  }

 private:
  ClassifierModel c_;
};

StatusOr<std::unique_ptr<Kernel>> CreateTreeClassifier(const NodeView& node,
                                                       const std::vector<TypeInfo>& types) {
  ONYX_ASSIGN_OR_RETURN(ClassifierModel c, BuildClassifier(node, InputDType(types), true));
  return std::unique_ptr<Kernel>(new TreeClassifierKernel(std::move(c)));
}

}  // namespace

void RegisterMlTree(OpRegistry& r) {
  // Opset 3 added the *_as_tensor (double) attributes; one parser reads both versions.
  AddPrepared(r, "TreeEnsembleClassifier", 1, 2, InferTreeClassifier, CreateTreeClassifier);
  AddPrepared(r, "TreeEnsembleClassifier", 3, 4, InferTreeClassifier, CreateTreeClassifier);
  AddPrepared(r, "TreeEnsembleRegressor", 1, 2, InferTreeRegressor, CreateTreeRegressor);
  AddPrepared(r, "TreeEnsembleRegressor", 3, 4, InferTreeRegressor, CreateTreeRegressor);
}

}  // namespace onyx::kernels::ml
