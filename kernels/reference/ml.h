// Reference kernels for the ai.onnx.ml operators the node tests contain: ArrayFeatureExtractor,
// Binarizer, LabelEncoder (opsets 1-4) and TreeEnsemble (opset 5).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "onyx/tensor.h"

namespace onyx::kernels::reference {

// ArrayFeatureExtractor-1: z[..., j] = x[..., indices[j]] over x's last axis, viewed as
// [outer, n]. Indices must already be checked to lie in [0, n). x and z share the dtype (numeric
// or string); z holds outer * num_indices elements.
void ArrayFeatureExtract(const Tensor& x, int64_t outer, int64_t n, const int64_t* indices,
                         int64_t num_indices, Tensor* z);

// Binarizer-1: y = x > threshold ? 1 : 0 (NaN gives 0). x and y: float, double, int32 or int64.
void Binarize(const Tensor& x, double threshold, Tensor* y);

// LabelEncoder lookup table: keys of one type mapped to positions in `values`.
struct LabelEncoderTable {
  DType key_type = DType::kUndefined;  // the input's dtype
  std::unordered_map<std::string, int64_t> string_keys;
  std::unordered_map<int64_t, int64_t> int_keys;  // int16/int32/int64 inputs
  std::map<double, int64_t> float_keys;           // float/double inputs, NaN excluded
  int64_t nan_index = -1;                         // value position for a NaN key, or -1
  Tensor values;                                  // 1-D, the output dtype
  Tensor default_value;                           // one element, the output dtype
};

// Maps every element of x through the table (a key not found gives the default). y has x's
// shape and the values' dtype.
void LabelEncode(const LabelEncoderTable& table, const Tensor& x, Tensor* y);

// TreeEnsemble-5 model. Interior nodes and leaves are parallel arrays (the ONNX attributes).
struct TreeEnsembleModel {
  enum class Mode : uint8_t { kLeq = 0, kLt, kGte, kGt, kEq, kNeq, kMember };
  enum class Aggregate { kAverage = 0, kSum, kMin, kMax };
  enum class PostTransform { kNone = 0, kSoftmax, kLogistic, kSoftmaxZero, kProbit };
  struct Node {
    Mode mode = Mode::kLeq;
    int64_t feature = 0;
    double split = 0;
    std::vector<double> members;  // kMember only
    bool missing_tracks_true = false;
    int64_t true_id = 0;  // node or leaf index, as true_is_leaf says
    int64_t false_id = 0;
    bool true_is_leaf = false;
    bool false_is_leaf = false;
  };
  std::vector<Node> nodes;
  std::vector<double> leaf_weights;
  std::vector<int64_t> leaf_targets;  // each in [0, n_targets)
  std::vector<int64_t> roots;         // one per tree
  int64_t n_targets = 0;
  int64_t max_feature = -1;  // largest feature id used by any node
  Aggregate aggregate = Aggregate::kSum;
  PostTransform post_transform = PostTransform::kNone;
};

// Predicts rows x [n, f] (float, double or float16; f > model.max_feature, checked by the caller)
// into y [n, n_targets] of x's dtype. The model must be validated: every index in range and no
// cycles, so each walk reaches a leaf.
void TreeEnsemblePredict(const TreeEnsembleModel& model, const Tensor& x, Tensor* y);

// Pieces of TreeEnsemblePredict that the flat-forest kernel (kernels/ops/ml.cc) shares with it:
// the post transform of one row's n_targets scores, in place, and the values MIN and MAX start
// from for output type t (the type's highest and lowest values, as the ONNX reference does).
void TreeEnsemblePostTransform(TreeEnsembleModel::PostTransform t, std::vector<double>* v);
double TreeEnsembleHighest(DType t);
double TreeEnsembleLowest(DType t);

}  // namespace onyx::kernels::reference
