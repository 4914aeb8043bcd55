// Linear and kernel models of ai.onnx.ml (all opset 1): LinearClassifier, LinearRegressor,
// SVMClassifier, SVMRegressor, Scaler and Normalizer. Inputs are read as float and scores are
// float, as in ONNX Runtime, whose rules for labels and the two-class score layouts these follow.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"
#include "kernels/ops/ml_common.h"
#include "kernels/reference/ml_tree.h"

namespace onyx::kernels::ml {
namespace {

using reference::MlLogistic;
using reference::MlPostTransform;
using reference::MlProbit;

// X as float rows [N, F] (a 1-D X is one row). Float inputs are read in place.
struct FloatRows {
  int64_t n = 0;
  int64_t f = 0;
  const float* data = nullptr;
  std::vector<float> copy;
};

StatusOr<FloatRows> ReadRows(const NodeView& node, const Tensor& x) {
  ONYX_RETURN_IF_ERROR(CheckType(node, 0, x.dtype(), kNumericInputs));
  FloatRows r;
  if (x.rank() == 1) {
    r.n = 1;
    r.f = x.dim(0);
  } else if (x.rank() == 2) {
    r.n = x.dim(0);
    r.f = x.dim(1);
  } else {
    return node.Fail("input 0 '", InputName(node, 0), "' has shape ", ShapeToString(x.shape()),
                     "; expected [N, F] or [F]");
  }
  if (x.dtype() == DType::kFloat) {
    r.data = x.data<float>();
  } else {
    r.copy.resize(static_cast<size_t>(x.numel()));
    for (int64_t i = 0; i < x.numel(); ++i) r.copy[i] = static_cast<float>(ElementAsDouble(x, i));
    r.data = r.copy.data();
  }
  return r;
}

Status CheckFeatures(const NodeView& node, const FloatRows& r, int64_t want) {
  if (r.f == want) return Status::Ok();
  return node.Fail("input 0 '", InputName(node, 0), "' has ", r.f, " features; the model has ",
                   want);
}

// y[r, j] = sum_f x[r, f] * w[j, f] + b[j] (b may be empty), in float as ONNX Runtime's GEMM.
void Affine(const FloatRows& x, const std::vector<float>& w, const std::vector<float>& b, int64_t k,
            float* y, int threads) {
  ParallelFor(x.n, k * x.f + 1, threads, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* row = x.data + r * x.f;
      for (int64_t j = 0; j < k; ++j) {
        const float* wj = w.data() + j * x.f;
        float s = 0;
        for (int64_t c = 0; c < x.f; ++c) s = std::fma(row[c], wj[c], s);
        y[r * k + j] = b.empty() ? s : s + b[j];
      }
    }
  });
}

Status InferClassifierOutputs(InferContext& ctx, const Labels& l, Dim scores) {
  ONYX_RETURN_IF_ERROR(CheckRowsInput(ctx.node(), ctx.input_type(0)));
  const Dim n = RowsDim(ctx.input_type(0));
  ctx.SetOutputType(0, RankedType(l.use_strings ? DType::kString : DType::kInt64, {n}));
  ctx.SetOutputType(1, RankedType(DType::kFloat, {n, scores}));
  return Status::Ok();
}

// ---- LinearClassifier ----

struct LinearClassifierModel {
  std::vector<float> coefficients;  // [classes, F]
  std::vector<float> intercepts;    // [classes]
  Labels labels;
  MlPostTransform post = MlPostTransform::kNone;
  int64_t classes = 0;            // score columns before a second one is added
  bool add_second_class = false;  // one score, two labels: Z is [1 - p, p]
};

StatusOr<LinearClassifierModel> ParseLinearClassifier(const NodeView& node) {
  LinearClassifierModel m;
  ONYX_ASSIGN_OR_RETURN(m.labels, ParseLabels(node, "classlabels_ints"));
  m.coefficients = node.attr_floats("coefficients");
  if (m.coefficients.empty()) return node.Invalid("attribute 'coefficients' is missing or empty");
  m.intercepts = node.attr_floats("intercepts");
  ONYX_ASSIGN_OR_RETURN(m.post, PostTransformAttr(node));
  const int64_t multi = node.attr_int("multi_class", 0);
  // Both modes score the same way (the spec's flag records how the model was trained).
  if (multi != 0 && multi != 1)
    return node.NotSupported("attribute 'multi_class' = ", multi, " is not supported (0 or 1)");
  m.classes = m.intercepts.empty() ? m.labels.size() : static_cast<int64_t>(m.intercepts.size());
  if (static_cast<int64_t>(m.coefficients.size()) % m.classes != 0)
    return node.Invalid("attribute 'coefficients' has ", m.coefficients.size(),
                        " entries, not a multiple of the ", m.classes, " classes");
  m.add_second_class = m.classes == 1 && m.labels.size() == 2;
  if (m.classes > 1 && m.labels.size() < m.classes)
    return node.Invalid("there are ", m.classes, " classes but ", m.labels.size(), " labels");
  if (m.add_second_class && m.post == MlPostTransform::kProbit)
    return node.NotSupported(
        "attribute 'post_transform' = 'PROBIT' is not supported with one "
        "score and two class labels");
  return m;
}

Status InferLinearClassifier(InferContext& ctx) {
  ONYX_ASSIGN_OR_RETURN(const LinearClassifierModel m, ParseLinearClassifier(ctx.node()));
  return InferClassifierOutputs(ctx, m.labels, Dim::Known(m.add_second_class ? 2 : m.classes));
}

class LinearClassifierKernel : public Kernel {
 public:
  explicit LinearClassifierKernel(LinearClassifierModel m) : m_(std::move(m)) {}
  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    ONYX_ASSIGN_OR_RETURN(const FloatRows x, ReadRows(node, ctx.input(0)));
    const int64_t k = m_.classes;
    ONYX_RETURN_IF_ERROR(CheckFeatures(node, x, static_cast<int64_t>(m_.coefficients.size()) / k));
    const int64_t cols = m_.add_second_class ? 2 : k;
    Tensor y = LabelOutput(ctx, m_.labels, x.n);
    Tensor z = ctx.Output(1, DType::kFloat, {x.n, cols});
    std::vector<float> s(static_cast<size_t>(x.n * k));
    Affine(x, m_.coefficients, m_.intercepts, k, s.data(), ctx.intra_op_threads());
    float* zd = z.data<float>();
    for (int64_t r = 0; r < x.n; ++r) {
      const float* sr = s.data() + r * k;
      float* zr = zd + r * cols;
      if (k == 1) {
        const bool two = m_.labels.size() == 2;
        WriteLabel(y, m_.labels, r, two ? (sr[0] > 0 ? 1 : 0) : -1, sr[0] > 0);
        if (m_.add_second_class) {
          // As ONNX Runtime: [1 - p, p] with p the logistic of the score, or the raw score for
          // the other transforms.
          const float p = m_.post == MlPostTransform::kLogistic ? MlLogistic(sr[0]) : sr[0];
          zr[0] = 1.0f - p;
          zr[1] = p;
        } else {
          zr[0] = sr[0];
          TransformRow(m_.post, zr, 1);
        }
        continue;
      }
      int64_t best = 0;
      for (int64_t j = 1; j < k; ++j)
        if (sr[j] > sr[best]) best = j;
      WriteLabel(y, m_.labels, r, best, true);
      std::copy(sr, sr + k, zr);
      TransformRow(m_.post, zr, k);
    }
    return Status::Ok();
  }

 private:
  LinearClassifierModel m_;
};

// ---- LinearRegressor ----

struct LinearRegressorModel {
  std::vector<float> coefficients;  // [targets, F]
  std::vector<float> intercepts;    // [targets] or empty
  int64_t targets = 1;
  MlPostTransform post = MlPostTransform::kNone;
};

StatusOr<LinearRegressorModel> ParseLinearRegressor(const NodeView& node) {
  LinearRegressorModel m;
  m.coefficients = node.attr_floats("coefficients");
  if (m.coefficients.empty()) return node.Invalid("attribute 'coefficients' is missing or empty");
  m.intercepts = node.attr_floats("intercepts");
  m.targets = node.attr_int("targets", 1);
  ONYX_ASSIGN_OR_RETURN(m.post, PostTransformAttr(node));
  if (m.targets < 1) return node.Invalid("attribute 'targets' must be >= 1, got ", m.targets);
  if (static_cast<int64_t>(m.coefficients.size()) % m.targets != 0)
    return node.Invalid("attribute 'coefficients' has ", m.coefficients.size(),
                        " entries, not a multiple of the ", m.targets, " targets");
  if (!m.intercepts.empty() && static_cast<int64_t>(m.intercepts.size()) != m.targets)
    return node.Invalid("attribute 'intercepts' has ", m.intercepts.size(), " entries; expected ",
                        m.targets, " (targets)");
  return m;
}

Status InferLinearRegressor(InferContext& ctx) {
  ONYX_ASSIGN_OR_RETURN(const LinearRegressorModel m, ParseLinearRegressor(ctx.node()));
  ONYX_RETURN_IF_ERROR(CheckRowsInput(ctx.node(), ctx.input_type(0)));
  ctx.SetOutputType(0,
                    RankedType(DType::kFloat, {RowsDim(ctx.input_type(0)), Dim::Known(m.targets)}));
  return Status::Ok();
}

class LinearRegressorKernel : public Kernel {
 public:
  explicit LinearRegressorKernel(LinearRegressorModel m) : m_(std::move(m)) {}
  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    ONYX_ASSIGN_OR_RETURN(const FloatRows x, ReadRows(node, ctx.input(0)));
    const int64_t k = m_.targets;
    ONYX_RETURN_IF_ERROR(CheckFeatures(node, x, static_cast<int64_t>(m_.coefficients.size()) / k));
    ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, DType::kFloat, {x.n, k}));
    Affine(x, m_.coefficients, m_.intercepts, k, y.data<float>(), ctx.intra_op_threads());
    for (int64_t r = 0; r < x.n; ++r) TransformRow(m_.post, y.data<float>() + r * k, k);
    return Status::Ok();
  }

 private:
  LinearRegressorModel m_;
};

// ---- SVM kernels (shared by SVMClassifier and SVMRegressor) ----

enum class SvmKernelType { kLinear = 0, kPoly, kRbf, kSigmoid };

struct SvmKernel {
  SvmKernelType type = SvmKernelType::kLinear;
  float gamma = 0;
  float coef0 = 0;
  float degree = 0;
  // K(x, v) for one row and one vector of f features, in float as ONNX Runtime computes it.
  float Float(const float* x, const float* v, int64_t f) const {
    if (type == SvmKernelType::kRbf) {
      float s = 0;
      for (int64_t c = 0; c < f; ++c) {
        const float d = x[c] - v[c];
        s += d * d;
      }
      return std::exp(-gamma * s);
    }
    float dot = 0;
    for (int64_t c = 0; c < f; ++c) dot = std::fma(x[c], v[c], dot);
    switch (type) {
      case SvmKernelType::kPoly:
        return std::pow(gamma * dot + coef0, degree);
      case SvmKernelType::kSigmoid:
        return std::tanh(gamma * dot + coef0);
      default:
        return dot;
    }
  }
};

StatusOr<SvmKernel> ParseSvmKernel(const NodeView& node) {
  SvmKernel k;
  ONYX_ASSIGN_OR_RETURN(
      const int t, EnumAttr(node, "kernel_type", "LINEAR", {"LINEAR", "POLY", "RBF", "SIGMOID"}));
  k.type = static_cast<SvmKernelType>(t);
  const std::vector<float> p = node.attr_floats("kernel_params");
  if (!p.empty()) {
    if (p.size() != 3)
      return node.Invalid("attribute 'kernel_params' has ", p.size(),
                          " entries; expected 3 (gamma, coef0, degree)");
    k.gamma = p[0];
    k.coef0 = p[1];
    k.degree = p[2];
  }
  return k;
}

// ---- SVMClassifier ----

struct SvmClassifierModel {
  Labels labels;
  SvmKernel kernel;
  bool svc = false;  // support vectors given (libsvm); else linear (liblinear) coefficients
  std::vector<int64_t> vectors_per_class, first_vector;
  int64_t vectors = 0;
  int64_t features = 0;
  std::vector<float> support_vectors;  // [vectors, features]
  std::vector<float> coefficients;     // svc: [classes - 1, vectors]; linear: [classes, features]
  std::vector<float> rho, prob_a, prob_b;
  MlPostTransform post = MlPostTransform::kNone;
  bool weights_all_positive = true;
  int64_t classes() const { return labels.size(); }
  int64_t pairs() const { return classes() * (classes() - 1) / 2; }
  bool has_proba() const { return !prob_a.empty(); }
  // Z's columns: probabilities per class, pairwise scores (more than two classes) or two.
  int64_t score_columns() const {
    if (!svc || has_proba()) return classes();
    return classes() > 2 ? pairs() : 2;
  }
};

StatusOr<SvmClassifierModel> ParseSvmClassifier(const NodeView& node) {
  SvmClassifierModel m;
  ONYX_ASSIGN_OR_RETURN(m.labels, ParseLabels(node, "classlabels_ints"));
  ONYX_ASSIGN_OR_RETURN(m.kernel, ParseSvmKernel(node));
  ONYX_ASSIGN_OR_RETURN(m.post, PostTransformAttr(node));
  m.vectors_per_class = node.attr_ints("vectors_per_class");
  m.support_vectors = node.attr_floats("support_vectors");
  m.coefficients = node.attr_floats("coefficients");
  m.rho = node.attr_floats("rho");
  m.prob_a = node.attr_floats("prob_a");
  m.prob_b = node.attr_floats("prob_b");
  const int64_t k = m.classes();
  if (m.coefficients.empty()) return node.Invalid("attribute 'coefficients' is missing or empty");
  if (m.rho.empty()) return node.Invalid("attribute 'rho' is missing or empty");
  if (m.prob_a.size() != m.prob_b.size())
    return node.Invalid("attributes 'prob_a' (", m.prob_a.size(), ") and 'prob_b' (",
                        m.prob_b.size(), ") have different lengths");
  for (int64_t v : m.vectors_per_class) {
    if (v < 0) return node.Invalid("attribute 'vectors_per_class' has a negative entry ", v);
    m.first_vector.push_back(m.vectors);
    m.vectors += v;
  }
  for (float c : m.coefficients)
    if (c < 0) m.weights_all_positive = false;
  m.svc = m.vectors > 0;
  if (m.svc) {
    if (k < 2) return node.Invalid("an SVM with support vectors needs at least two classes");
    if (static_cast<int64_t>(m.vectors_per_class.size()) != k)
      return node.Invalid("attribute 'vectors_per_class' has ", m.vectors_per_class.size(),
                          " entries for ", k, " class labels");
    if (static_cast<int64_t>(m.support_vectors.size()) % m.vectors != 0)
      return node.Invalid("attribute 'support_vectors' has ", m.support_vectors.size(),
                          " entries, not a multiple of the ", m.vectors, " vectors");
    m.features = static_cast<int64_t>(m.support_vectors.size()) / m.vectors;
    if (static_cast<int64_t>(m.coefficients.size()) < (k - 1) * m.vectors)
      return node.Invalid("attribute 'coefficients' has ", m.coefficients.size(),
                          " entries; expected ", (k - 1) * m.vectors, " ((classes - 1) x vectors)");
    if (static_cast<int64_t>(m.rho.size()) < m.pairs())
      return node.Invalid("attribute 'rho' has ", m.rho.size(), " entries; expected ", m.pairs(),
                          " (one per pair of classes)");
    if (m.has_proba() && static_cast<int64_t>(m.prob_a.size()) < m.pairs())
      return node.Invalid("attribute 'prob_a' has ", m.prob_a.size(), " entries; expected ",
                          m.pairs(), " (one per pair of classes)");
  } else {
    // Linear mode scores every class with its coefficient row and rho[0]; the kernel is linear.
    m.kernel.type = SvmKernelType::kLinear;
    if (static_cast<int64_t>(m.coefficients.size()) % k != 0)
      return node.Invalid("attribute 'coefficients' has ", m.coefficients.size(),
                          " entries, not a multiple of the ", k, " classes");
    m.features = static_cast<int64_t>(m.coefficients.size()) / k;
  }
  return m;
}

Status InferSvmClassifier(InferContext& ctx) {
  ONYX_ASSIGN_OR_RETURN(const SvmClassifierModel m, ParseSvmClassifier(ctx.node()));
  return InferClassifierOutputs(ctx, m.labels, Dim::Known(m.score_columns()));
}

// Pairwise coupling of Platt probabilities into class probabilities (Wu, Lin and Weng 2004,
// method 2, as libsvm and ONNX Runtime do it, in float): r is [k, k], p gets k values.
void PairwiseCoupling(int64_t k, const std::vector<float>& r, float* p) {
  std::vector<float> q(static_cast<size_t>(k * k), 0.0f);
  std::vector<float> qp(static_cast<size_t>(k), 0.0f);
  const float eps = 0.005f / static_cast<float>(k);
  for (int64_t i = 0; i < k; ++i) {
    p[i] = 1.0f / static_cast<float>(k);
    for (int64_t j = 0; j < i; ++j) {
      q[i * k + i] += r[j * k + i] * r[j * k + i];
      q[i * k + j] = q[j * k + i];
    }
    for (int64_t j = i + 1; j < k; ++j) {
      q[i * k + i] += r[j * k + i] * r[j * k + i];
      q[i * k + j] = -r[j * k + i] * r[i * k + j];
    }
  }
  for (int iter = 0; iter < 100; ++iter) {
    float pqp = 0;
    for (int64_t i = 0; i < k; ++i) {
      qp[i] = 0;
      for (int64_t j = 0; j < k; ++j) qp[i] += q[i * k + j] * p[j];
      pqp += p[i] * qp[i];
    }
    float max_error = 0;
    for (int64_t i = 0; i < k; ++i) max_error = std::max(max_error, std::fabs(qp[i] - pqp));
    if (max_error < eps) break;
    for (int64_t i = 0; i < k; ++i) {
      const float diff = (-qp[i] + pqp) / q[i * k + i];
      p[i] += diff;
      pqp = (pqp + diff * (diff * q[i * k + i] + 2 * qp[i])) / (1 + diff) / (1 + diff);
      for (int64_t j = 0; j < k; ++j) {
        qp[j] = (qp[j] + diff * q[i * k + j]) / (1 + diff);
        p[j] /= (1 + diff);
      }
    }
  }
}

class SvmClassifierKernel : public Kernel {
 public:
  explicit SvmClassifierKernel(SvmClassifierModel m) : m_(std::move(m)) {}
  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    ONYX_ASSIGN_OR_RETURN(const FloatRows x, ReadRows(node, ctx.input(0)));
    ONYX_RETURN_IF_ERROR(CheckFeatures(node, x, m_.features));
    const int64_t cols = m_.score_columns();
    Tensor y = LabelOutput(ctx, m_.labels, x.n);
    ONYX_ASSIGN_OR_RETURN(Tensor z, NewOutput(ctx, 1, DType::kFloat, {x.n, cols}));
    const int64_t work = (m_.svc ? m_.vectors : m_.classes()) * m_.features + m_.pairs() * 8;
    ParallelFor(x.n, work, ctx.intra_op_threads(), [&](int64_t r0, int64_t r1) {
      std::vector<float> kern(static_cast<size_t>(m_.vectors));
      std::vector<float> pair_scores(static_cast<size_t>(m_.pairs()));
      std::vector<int64_t> votes(static_cast<size_t>(m_.classes()));
      std::vector<float> probs(static_cast<size_t>(m_.classes() * m_.classes()));
      for (int64_t r = r0; r < r1; ++r)
        Row(x.data + r * x.f, r, kern, pair_scores, votes, probs, y, z.data<float>() + r * cols);
    });
    return Status::Ok();
  }

 private:
  void Row(const float* xr, int64_t r, std::vector<float>& kern, std::vector<float>& pair_scores,
           std::vector<int64_t>& votes, std::vector<float>& probs, Tensor& y, float* zr) const {
    const int64_t k = m_.classes();
    const int64_t f = m_.features;
    if (!m_.svc) {
      for (int64_t j = 0; j < k; ++j)
        zr[j] = m_.kernel.Float(xr, m_.coefficients.data() + j * f, f) + m_.rho[0];
      const int64_t best = std::max_element(zr, zr + k) - zr;
      WriteLabel(y, m_.labels, r, k == 2 ? ChooseBinary(zr[best], best) : best, true);
      TransformRow(m_.post, zr, k);
      return;
    }
    for (int64_t v = 0; v < m_.vectors; ++v)
      kern[v] = m_.kernel.Float(xr, m_.support_vectors.data() + v * f, f);
    std::fill(votes.begin(), votes.end(), 0);
    // Classifier (i, j) sums class i's vectors with coefficient row j - 1 and class j's vectors
    // with row i, plus rho.
    int64_t pair = 0;
    for (int64_t i = 0; i + 1 < k; ++i) {
      for (int64_t j = i + 1; j < k; ++j, ++pair) {
        double sum = 0;
        const float* ci = m_.coefficients.data() + (j - 1) * m_.vectors;
        for (int64_t v = m_.first_vector[i]; v < m_.first_vector[i] + m_.vectors_per_class[i]; ++v)
          sum += ci[v] * kern[v];
        const float* cj = m_.coefficients.data() + i * m_.vectors;
        for (int64_t v = m_.first_vector[j]; v < m_.first_vector[j] + m_.vectors_per_class[j]; ++v)
          sum += cj[v] * kern[v];
        sum += m_.rho[pair];
        pair_scores[pair] = static_cast<float>(sum);
        ++votes[sum > 0 ? i : j];
      }
    }
    const int64_t voted = std::max_element(votes.begin(), votes.end()) - votes.begin();
    if (m_.has_proba()) {
      std::fill(probs.begin(), probs.end(), 0.0f);
      pair = 0;
      for (int64_t i = 0; i + 1 < k; ++i) {
        for (int64_t j = i + 1; j < k; ++j, ++pair) {
          const float platt =
              1.0f - MlLogistic(pair_scores[pair] * m_.prob_a[pair] + m_.prob_b[pair]);
          const float p = std::min(std::max(platt, 1.0e-7f), 1.0f - 1.0e-7f);
          probs[i * k + j] = p;
          probs[j * k + i] = 1.0f - p;
        }
      }
      PairwiseCoupling(k, probs, zr);
      // The label comes from the votes, as in ONNX Runtime (not from the probabilities).
      WriteLabel(y, m_.labels, r, voted, true);
      TransformRow(m_.post, zr, k);
      return;
    }
    WriteLabel(y, m_.labels, r, k == 2 ? ChooseBinary(0.0f, voted) : voted, true);
    if (k > 2) {
      std::copy(pair_scores.begin(), pair_scores.end(), zr);
      TransformRow(m_.post, zr, m_.pairs());
      return;
    }
    // Two classes, one decision value s: Z is [-s, s] (NONE) or [1 - s, s] (other transforms,
    // applied to nothing else), PROBIT alone transforms s in place.
    const float s = pair_scores[0];
    if (m_.post == MlPostTransform::kProbit) {
      zr[0] = MlProbit(s);
      zr[1] = 0.0f;
    } else if (m_.post == MlPostTransform::kNone) {
      zr[0] = -s;
      zr[1] = s;
    } else {
      zr[0] = 1.0f - s;
      zr[1] = s;
    }
  }

  // ONNX Runtime's two-label choice without probabilities: the positive label when the winning
  // score passes 0.5 (all coefficients >= 0) or 0 (mixed), else the arg max / vote.
  int64_t ChooseBinary(float max_weight, int64_t best) const {
    if (m_.has_proba()) return best;
    if (m_.weights_all_positive && max_weight >= 0.5f) return 1;
    if (!m_.weights_all_positive && max_weight > 0) return 1;
    return best;
  }

  SvmClassifierModel m_;
};

// ---- SVMRegressor ----

struct SvmRegressorModel {
  SvmKernel kernel;
  int64_t vectors = 0;  // n_supports; 0: linear coefficients
  int64_t features = 0;
  std::vector<float> support_vectors, coefficients, rho;
  bool one_class = false;  // output the sign (+1 / -1) of the decision value
};

StatusOr<SvmRegressorModel> ParseSvmRegressor(const NodeView& node) {
  SvmRegressorModel m;
  ONYX_ASSIGN_OR_RETURN(m.kernel, ParseSvmKernel(node));
  ONYX_ASSIGN_OR_RETURN(const MlPostTransform post, PostTransformAttr(node));
  // ONNX Runtime ignores post_transform here; rather than guess, onyx takes only NONE.
  if (post != MlPostTransform::kNone)
    return node.NotSupported("attribute 'post_transform' = '",
                             node.attr_string("post_transform", ""),
                             "' is not supported (only NONE)");
  m.vectors = node.attr_int("n_supports", 0);
  m.support_vectors = node.attr_floats("support_vectors");
  m.coefficients = node.attr_floats("coefficients");
  m.rho = node.attr_floats("rho");
  const int64_t one_class = node.attr_int("one_class", 0);
  if (one_class != 0 && one_class != 1)
    return node.NotSupported("attribute 'one_class' = ", one_class, " is not supported (0 or 1)");
  m.one_class = one_class == 1;
  if (m.coefficients.empty()) return node.Invalid("attribute 'coefficients' is missing or empty");
  if (m.rho.empty()) return node.Invalid("attribute 'rho' is missing or empty");
  if (m.vectors < 0) return node.Invalid("attribute 'n_supports' is negative: ", m.vectors);
  if (m.vectors > 0) {
    if (static_cast<int64_t>(m.support_vectors.size()) % m.vectors != 0)
      return node.Invalid("attribute 'support_vectors' has ", m.support_vectors.size(),
                          " entries, not a multiple of the ", m.vectors, " vectors");
    if (static_cast<int64_t>(m.coefficients.size()) < m.vectors)
      return node.Invalid("attribute 'coefficients' has ", m.coefficients.size(), " entries for ",
                          m.vectors, " support vectors");
    m.features = static_cast<int64_t>(m.support_vectors.size()) / m.vectors;
  } else {
    m.kernel.type = SvmKernelType::kLinear;
    m.features = static_cast<int64_t>(m.coefficients.size());
  }
  return m;
}

Status InferSvmRegressor(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ParseSvmRegressor(ctx.node()).status());
  ONYX_RETURN_IF_ERROR(CheckRowsInput(ctx.node(), ctx.input_type(0)));
  ctx.SetOutputType(0, RankedType(DType::kFloat, {RowsDim(ctx.input_type(0)), Dim::Known(1)}));
  return Status::Ok();
}

class SvmRegressorKernel : public Kernel {
 public:
  explicit SvmRegressorKernel(SvmRegressorModel m) : m_(std::move(m)) {}
  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    ONYX_ASSIGN_OR_RETURN(const FloatRows x, ReadRows(node, ctx.input(0)));
    ONYX_RETURN_IF_ERROR(CheckFeatures(node, x, m_.features));
    Tensor y = ctx.Output(0, DType::kFloat, {x.n, 1});
    float* out = y.data<float>();
    const int64_t f = m_.features;
    ParallelFor(x.n, std::max<int64_t>(m_.vectors, 1) * f, ctx.intra_op_threads(),
                [&](int64_t r0, int64_t r1) {
                  for (int64_t r = r0; r < r1; ++r) {
                    const float* xr = x.data + r * f;
                    // Float sums, as ONNX Runtime's GEMM: its rounding is what a converted
                    // model is checked against.
                    float s = 0;
                    if (m_.vectors > 0) {
                      for (int64_t v = 0; v < m_.vectors; ++v)
                        s = std::fma(m_.coefficients[v],
                                     m_.kernel.Float(xr, m_.support_vectors.data() + v * f, f), s);
                    } else {
                      s = m_.kernel.Float(xr, m_.coefficients.data(), f);
                    }
                    float v = s + m_.rho[0];
                    if (m_.one_class) v = v > 0 ? 1.0f : -1.0f;
                    out[r] = v;
                  }
                });
    return Status::Ok();
  }

 private:
  SvmRegressorModel m_;
};

// ---- Scaler ----
// Y = (X - offset) * scale in float, offset and scale each one value or one per column (last dim).

Status CheckScaleList(const NodeView& node, const char* name, size_t size, int64_t cols) {
  if (size <= 1 || static_cast<int64_t>(size) == cols) return Status::Ok();
  return node.Fail("attribute '", name, "' has ", size, " entries but input 0 '",
                   InputName(node, 0), "' has ", cols, " columns (expected 1 or ", cols, ")");
}

Status InferScaler(InferContext& ctx) {
  const TypeInfo& x = ctx.input_type(0);
  if (x.is_tensor()) ONYX_RETURN_IF_ERROR(CheckType(ctx.node(), 0, x.elem, kNumericInputs));
  ctx.SetOutputType(0, SameShape(x, DType::kFloat));
  return Status::Ok();
}

struct ScalerModel {
  std::vector<float> offset, scale;
};

StatusOr<ScalerModel> ParseScaler(const NodeView& node) {
  return ScalerModel{node.attr_floats("offset"), node.attr_floats("scale")};
}

class ScalerKernel : public Kernel {
 public:
  explicit ScalerKernel(ScalerModel m) : m_(std::move(m)) {}
  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    const Tensor& x = ctx.input(0);
    ONYX_RETURN_IF_ERROR(CheckType(node, 0, x.dtype(), kNumericInputs));
    const std::vector<float>& offset = m_.offset;
    const std::vector<float>& scale = m_.scale;
    const int64_t cols = x.rank() == 0 ? 1 : x.shape().back();
    ONYX_RETURN_IF_ERROR(CheckScaleList(node, "offset", offset.size(), cols));
    ONYX_RETURN_IF_ERROR(CheckScaleList(node, "scale", scale.size(), cols));
    Tensor y = ctx.Output(0, DType::kFloat, x.shape());
    float* dst = y.data<float>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t c = cols > 0 ? i % cols : 0;
      const float o = offset.empty() ? 0.0f : offset[offset.size() == 1 ? 0 : c];
      const float s = scale.empty() ? 1.0f : scale[scale.size() == 1 ? 0 : c];
      dst[i] = (static_cast<float>(ElementAsDouble(x, i)) - o) * s;
    }
    return Status::Ok();
  }

 private:
  ScalerModel m_;
};

// ---- Normalizer ----
// Each row divided by its max (MAX: the largest value, not magnitude, as ONNX Runtime), its L1 or
// its L2 norm; a row whose divisor is 0 is copied unchanged.

StatusOr<int> ParseNorm(const NodeView& node) {
  return EnumAttr(node, "norm", "MAX", {"MAX", "L1", "L2"});
}

Status InferNormalizer(InferContext& ctx) {
  ONYX_RETURN_IF_ERROR(ParseNorm(ctx.node()).status());
  ONYX_RETURN_IF_ERROR(CheckRowsInput(ctx.node(), ctx.input_type(0)));
  ctx.SetOutputType(0, SameShape(ctx.input_type(0), DType::kFloat));
  return Status::Ok();
}

class NormalizerKernel : public Kernel {
 public:
  explicit NormalizerKernel(int norm) : norm_(norm) {}
  Status Run(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const FloatRows x, ReadRows(ctx.node(), ctx.input(0)));
    Tensor y = ctx.Output(0, DType::kFloat, ctx.input(0).shape());
    float* dst = y.data<float>();
    for (int64_t r = 0; r < x.n; ++r) {
      const float* src = x.data + r * x.f;
      float* out = dst + r * x.f;
      float d = 0;
      if (norm_ == 0) {
        d = x.f > 0 ? *std::max_element(src, src + x.f) : 0.0f;
      } else if (norm_ == 1) {
        for (int64_t c = 0; c < x.f; ++c) d += std::fabs(src[c]);
      } else {
        for (int64_t c = 0; c < x.f; ++c) d += src[c] * src[c];
        d = std::sqrt(d);
      }
      for (int64_t c = 0; c < x.f; ++c) out[c] = d != 0 ? src[c] / d : src[c];
    }
    return Status::Ok();
  }

 private:
  int norm_;  // MAX, L1, L2
};

}  // namespace

void RegisterMlLinear(OpRegistry& r) {
  AddPrepared(r, "LinearClassifier", 1, kLatestOpset, InferLinearClassifier,
              CreateParsed<LinearClassifierKernel, ParseLinearClassifier>);
  AddPrepared(r, "LinearRegressor", 1, kLatestOpset, InferLinearRegressor,
              CreateParsed<LinearRegressorKernel, ParseLinearRegressor>);
  AddPrepared(r, "SVMClassifier", 1, kLatestOpset, InferSvmClassifier,
              CreateParsed<SvmClassifierKernel, ParseSvmClassifier>);
  AddPrepared(r, "SVMRegressor", 1, kLatestOpset, InferSvmRegressor,
              CreateParsed<SvmRegressorKernel, ParseSvmRegressor>);
  AddPrepared(r, "Scaler", 1, kLatestOpset, InferScaler, CreateParsed<ScalerKernel, ParseScaler>);
  AddPrepared(r, "Normalizer", 1, kLatestOpset, InferNormalizer,
              CreateParsed<NormalizerKernel, ParseNorm>);
}

}  // namespace onyx::kernels::ml
