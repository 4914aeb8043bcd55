// Retraining-free magnitude pruning of an ONNX model's constant weights (ONNXSat experiment 2,
// after Ashouri et al.): the Flat, Triangular and Relative threshold methods, unstructured or in
// blocks of consecutive output channels, written back dense or as COO sparse initializers.
// docs/sparsity.md states every rule precisely.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "onyx/status.h"

namespace onnx {
class ModelProto;
}

namespace onyx::prune {

enum class Method { kRelative, kFlat, kTriangular };
// Which weights: every Conv and MatMul/Gemm weight, 1x1 Conv only, Conv only, MatMul/Gemm only.
enum class LayerSet { kAll, k1x1, kConv, kFc };

struct PruneOptions {
  Method method = Method::kRelative;
  double sparsity = 0.5;  // 0..1: per-layer percentile (relative) or overall target (flat, tri)
  LayerSet layers = LayerSet::kAll;
  int64_t block = 1;  // consecutive output channels pruned together (1: unstructured)
  bool sparse_initializers = false;  // write pruned weights as COO sparse_initializer
};

StatusOr<Method> ParseMethod(const std::string& s);
StatusOr<LayerSet> ParseLayerSet(const std::string& s);
const char* MethodName(Method m);

// One pruned weight, in graph order.
struct LayerReport {
  std::string initializer;  // the weight's initializer name
  std::string node;         // the first node that reads it
  std::string op_type;
  std::vector<int64_t> shape;
  double threshold = 0;  // groups whose score is <= threshold are zeroed (none when S = 0)
  int64_t elements = 0;
  int64_t zeros = 0;  // after pruning (zeros already there count too)
  double sparsity() const { return elements ? static_cast<double>(zeros) / elements : 0; }
};

struct PruneReport {
  std::vector<LayerReport> layers;
  std::vector<std::string> skipped;  // candidate weights left alone, each with the reason
  int64_t elements = 0;
  int64_t zeros = 0;
  double span_fraction = 0;  // flat and triangular: the fraction f of the span that was used
  double sparsity() const { return elements ? static_cast<double>(zeros) / elements : 0; }
};

// The score of each group of `block` consecutive output channels at one position of a weight
// viewed as [outer, channels, inner] (group axis `channels`): the root mean square of the group
// (|w| when block is 1; the L2 norm / sqrt(group size), so a short trailing group is comparable).
// Exposed for tests. `scores` is indexed [outer][channels / block rounded up][inner].
struct GroupLayout {
  int64_t outer = 1, channels = 1, inner = 1, block = 1;
  int64_t groups_per_row() const { return (channels + block - 1) / block; }
  int64_t num_groups() const { return outer * groups_per_row() * inner; }
};
std::vector<double> GroupScores(const float* w, const GroupLayout& g);

// numpy.percentile(x, q) with the default linear interpolation (q in 0..100); x is reordered.
double Percentile(std::vector<double> x, double q);

// Prunes `model` in place (main graph; weights must be float32 initializers stored inline).
// `progress` (may be empty) gets one line per layer.
StatusOr<PruneReport> PruneModel(onnx::ModelProto* model, const PruneOptions& options,
                                 const std::function<void(const std::string&)>& progress = {});

// Reads the model file `in`, prunes it and writes `out` (the CLI and Python onyx.prune).
StatusOr<PruneReport> PruneModelFile(const std::string& in, const std::string& out,
                                     const PruneOptions& options);

}  // namespace onyx::prune
