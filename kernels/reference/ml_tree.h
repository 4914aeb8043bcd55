// Tree ensembles of ai.onnx.ml TreeEnsembleClassifier and TreeEnsembleRegressor (opsets 1 and 3):
// the attributes compiled into a flat, cache-friendly node array, evaluated over blocks of rows
// (many rows walk one tree in lockstep) and threaded over those blocks.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "onyx/status.h"
#include "onyx/tensor.h"

namespace onyx::kernels::reference {

// kMember (TreeEnsemble-5's BRANCH_MEMBER): true when the value is in the node's set.
enum class TreeMode : uint8_t { kLeq = 0, kLt, kGte, kGt, kEq, kNeq, kLeaf, kMember };
enum class TreeAggregate : uint8_t { kAverage = 0, kSum, kMin, kMax };
// The ai.onnx.ml post_transform values, in the order the ONNX spec lists them.
enum class MlPostTransform : uint8_t { kNone = 0, kSoftmax, kLogistic, kSoftmaxZero, kProbit };

// The trees as the node attributes list them (parallel arrays, one entry per node / weight).
struct TreeEnsembleSpec {
  std::vector<int64_t> tree_ids, node_ids, feature_ids, true_ids, false_ids;
  std::vector<TreeMode> modes;
  std::vector<double> thresholds;            // nodes_values(_as_tensor)
  std::vector<std::vector<double>> members;  // empty, or per node: its kMember set
  std::vector<uint8_t> missing_true;         // empty or one per node
  std::vector<int64_t> weight_tree_ids, weight_node_ids, weight_targets;
  std::vector<double> weights;
  int64_t n_targets = 1;  // regressor targets or classifier classes
  // The trees' roots as node positions (TreeEnsemble-5); empty: the first node listed for each
  // tree id (TreeEnsembleClassifier/Regressor, as ONNX Runtime).
  std::vector<int64_t> roots;
};

// One node of the flat layout. A leaf points to itself on both sides, so a walk needs no leaf
// test: it takes the tree's depth in steps, or stops when no row of the group moves. A leaf's
// `value` holds its weight (single-target forests) or the bits of the int32 index of its header in
// `weights`.
template <typename T>
struct ForestNode {
  T value;          // threshold, or leaf payload (see above)
  int32_t feature;  // column of X read by an interior node; 0 for leaves
  int32_t next[2];  // [0]: taken when the test holds, [1]: otherwise; self for a leaf
};

// A compiled forest with thresholds and weights of type T (float, or double when the model or the
// input needs it).
template <typename T>
struct Forest {
  struct Weight {
    int32_t target;
    T value;
  };
  std::vector<ForestNode<T>> nodes;  // trees one after another, each in depth-first order
  std::vector<uint8_t> flags;        // per node: mode | missing-tracks-true << 4 (mixed forests)
  // kMember nodes: set i is [member_begin[i], member_begin[i + 1]) in `members`; the node's
  // value holds the bits of i (int32).
  std::vector<T> members;
  std::vector<int32_t> member_begin;
  std::vector<int32_t> roots;   // one per tree, in the order the model lists trees
  std::vector<int32_t> depths;  // per tree: longest root-to-leaf path, -1 when not known
  // Multi-target forests: each leaf's weights, after a header entry whose `target` is their count.
  std::vector<Weight> weights;
  int64_t n_targets = 1;
  int64_t max_feature = -1;
  bool single_weight = false;  // one target: a leaf's value is the sum of its weights
  bool uniform = false;        // every interior node has mode `mode` and no missing-track flag
  TreeMode mode = TreeMode::kLeq;
};

// Builds the flat layout; fails naming the attribute on a dangling child, a cycle, a weight for a
// node that does not exist, a target outside [0, n_targets) or a feature id over 2^31.
template <typename T>
StatusOr<Forest<T>> CompileForest(const TreeEnsembleSpec& spec);

// Called once per block of rows with the block's accumulators: score and has are [rows,
// n_targets], row-major; `has` says whether any leaf reached that target. Runs on the thread that
// evaluated the block, so several blocks may be finalized at once.
template <typename T>
using ForestBlockFn =
    std::function<void(int64_t row_begin, int64_t rows, const T* score, const uint8_t* has)>;

// Evaluates a forest on x [rows, f] (float, double, int32 or int64; f > forest.max_feature,
// checked by the caller), aggregating leaf weights per row in tree order with `agg` (AVERAGE
// sums; the caller divides). Threads over blocks of rows with the engine's ParallelFor.
template <typename T>
void EvaluateForest(const Forest<T>& forest, TreeAggregate agg, const Tensor& x, int threads,
                    const ForestBlockFn<T>& block_fn);

// ONNX Runtime's float formulas, so that scores match it: logistic, probit (its erf inverse
// approximation), softmax and SOFTMAX_ZERO (values within 1e-7 of zero are left out of the sum).
float MlLogistic(float v);
float MlProbit(float v);
void MlSoftmax(float* v, int64_t n);
void MlSoftmaxZero(float* v, int64_t n);
// Applies a post transform to n >= 2 scores in place.
void ApplyMlPostTransform(MlPostTransform t, float* v, int64_t n);

}  // namespace onyx::kernels::reference
