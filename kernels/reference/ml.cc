// Reference kernels for the ai.onnx.ml operators (see ml.h).
#include "kernels/reference/ml.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/element_types.h"
#include "kernels/op_helpers.h"

namespace onyx::kernels::reference {

void ArrayFeatureExtract(const Tensor& x, int64_t outer, int64_t n, const int64_t* indices,
                         int64_t num_indices, Tensor* z) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < num_indices; ++j)
      CopyElements(x.dtype(), x.raw_data(), o * n + indices[j], z->raw_data(), o * num_indices + j,
                   1);
}

void Binarize(const Tensor& x, double threshold, Tensor* y) {
  VisitNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = x.data<T>();
    T* dst = y->data<T>();
    for (int64_t i = 0; i < x.numel(); ++i)
      dst[i] = static_cast<double>(src[i]) > threshold ? T(1) : T(0);
  });
}

void LabelEncode(const LabelEncoderTable& table, const Tensor& x, Tensor* y) {
  const DType out = table.values.dtype();
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t pos = -1;
    switch (x.dtype()) {
      case DType::kString: {
        auto it = table.string_keys.find(x.strings()[i]);
        if (it != table.string_keys.end()) pos = it->second;
        break;
      }
      case DType::kFloat:
      case DType::kDouble: {
        const double v = ElementAsDouble(x, i);
        if (std::isnan(v)) {
          pos = table.nan_index;  // a NaN key matches any NaN input
        } else {
          auto it = table.float_keys.find(v);
          if (it != table.float_keys.end()) pos = it->second;
        }
        break;
      }
      default: {
        int64_t v = 0;
        if (x.dtype() == DType::kInt64) v = x.data<int64_t>()[i];
        if (x.dtype() == DType::kInt32) v = x.data<int32_t>()[i];
        if (x.dtype() == DType::kInt16) v = x.data<int16_t>()[i];
        auto it = table.int_keys.find(v);
        if (it != table.int_keys.end()) pos = it->second;
        break;
      }
    }
    if (pos >= 0) {
      CopyElements(out, table.values.raw_data(), pos, y->raw_data(), i, 1);
    } else {
      CopyElements(out, table.default_value.raw_data(), 0, y->raw_data(), i, 1);
    }
  }
}

namespace {

using Model = TreeEnsembleModel;

bool GoesTrue(const Model::Node& node, double v) {
  if (std::isnan(v) && node.missing_tracks_true) return true;
  switch (node.mode) {
    case Model::Mode::kLeq:
      return v <= node.split;
    case Model::Mode::kLt:
      return v < node.split;
    case Model::Mode::kGte:
      return v >= node.split;
    case Model::Mode::kGt:
      return v > node.split;
    case Model::Mode::kEq:
      return v == node.split;
    case Model::Mode::kNeq:
      return v != node.split;
    case Model::Mode::kMember:
      return std::find(node.members.begin(), node.members.end(), v) != node.members.end();
  }
  return false;
}

// The leaf a row reaches from `root`.
int64_t FindLeaf(const Model& model, int64_t root, const double* row) {
  int64_t id = root;
  while (true) {
    const Model::Node& node = model.nodes[id];
    const bool t = GoesTrue(node, row[node.feature]);
    const int64_t next = t ? node.true_id : node.false_id;
    if (t ? node.true_is_leaf : node.false_is_leaf) return next;
    id = next;
  }
}

// Inverse error function: a rational first guess refined by Newton steps on std::erf.
double ErfInv(double y) {
  if (y <= -1) return -std::numeric_limits<double>::infinity();
  if (y >= 1) return std::numeric_limits<double>::infinity();
  // Giles' single-precision approximation as the starting point.
  double w = -std::log((1.0 - y) * (1.0 + y));
  double x;
  if (w < 5.0) {
    w -= 2.5;
    double p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
    x = p * y;
  } else {
    w = std::sqrt(w) - 3.0;
    double p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
    x = p * y;
  }
  const double kTwoOverSqrtPi = 1.1283791670955126;
  for (int i = 0; i < 2; ++i) x -= (std::erf(x) - y) / (kTwoOverSqrtPi * std::exp(-x * x));
  return x;
}

}  // namespace

void TreeEnsemblePostTransform(TreeEnsembleModel::PostTransform t, std::vector<double>* v) {
  switch (t) {
    case Model::PostTransform::kNone:
      return;
    case Model::PostTransform::kLogistic:
      for (double& e : *v) e = 1.0 / (1.0 + std::exp(-e));
      return;
    case Model::PostTransform::kProbit:
      for (double& e : *v) e = std::sqrt(2.0) * ErfInv(2.0 * e - 1.0);
      return;
    case Model::PostTransform::kSoftmax:
    case Model::PostTransform::kSoftmaxZero: {
      // SOFTMAX_ZERO (as in ONNX Runtime) keeps exact zeros at zero and leaves them out of the sum.
      const bool zero = t == Model::PostTransform::kSoftmaxZero;
      if (v->empty()) return;
      const double mx = *std::max_element(v->begin(), v->end());
      double sum = 0;
      for (double& e : *v) {
        e = zero && e == 0 ? 0 : std::exp(e - mx);
        sum += e;
      }
      if (sum > 0)
        for (double& e : *v) e /= sum;
      return;
    }
  }
}

double TreeEnsembleHighest(DType t) {
  if (t == DType::kFloat) return std::numeric_limits<float>::max();
  if (t == DType::kFloat16) return 65504.0;
  return std::numeric_limits<double>::max();
}

double TreeEnsembleLowest(DType t) {
  return -TreeEnsembleHighest(t);
}

void TreeEnsemblePredict(const TreeEnsembleModel& model, const Tensor& x, Tensor* y) {
  const int64_t n = x.dim(0);
  const int64_t f = x.dim(1);
  const int64_t targets = model.n_targets;
  const DType t = x.dtype();
  // MIN/MAX start from the type's extremes, as the ONNX reference does.
  const double lowest = TreeEnsembleLowest(t);
  const double highest = TreeEnsembleHighest(t);
  std::vector<double> row(static_cast<size_t>(f));
  std::vector<double> acc(static_cast<size_t>(targets));
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < f; ++c) row[c] = ElementAsDouble(x, r * f + c);
    switch (model.aggregate) {
      case Model::Aggregate::kMin:
        std::fill(acc.begin(), acc.end(), highest);
        break;
      case Model::Aggregate::kMax:
        std::fill(acc.begin(), acc.end(), lowest);
        break;
      default:
        std::fill(acc.begin(), acc.end(), 0.0);
        break;
    }
    for (int64_t root : model.roots) {
      const int64_t leaf = FindLeaf(model, root, row.data());
      const double w = model.leaf_weights[leaf];
      double& a = acc[model.leaf_targets[leaf]];
      switch (model.aggregate) {
        case Model::Aggregate::kSum:
        case Model::Aggregate::kAverage:
          a += w;
          break;
        case Model::Aggregate::kMin:
          a = std::min(a, w);
          break;
        case Model::Aggregate::kMax:
          a = std::max(a, w);
          break;
      }
    }
    if (model.aggregate == Model::Aggregate::kAverage && !model.roots.empty())
      for (double& a : acc) a /= static_cast<double>(model.roots.size());
    TreeEnsemblePostTransform(model.post_transform, &acc);
    for (int64_t k = 0; k < targets; ++k)
      StoreFromDouble(t, y->raw_data(), r * targets + k, acc[k]);
  }
}

}  // namespace onyx::kernels::reference
