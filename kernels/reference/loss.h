// Reference loops of the loss family: NegativeLogLikelihoodLoss and the log-softmax step of
// SoftmaxCrossEntropyLoss. Buffers are contiguous row-major; an input of shape (N, C, d1, ..., dk)
// is viewed as [n, c, d] with d = d1 * ... * dk (1 when k = 0), a target as [n, d].
// Element types: float, double, float16_t, bfloat16_t; every sum is accumulated in double.
#pragma once

#include <cstdint>

namespace onyx::kernels::reference {

enum class LossReduction { kNone, kSum, kMean };

// Which target values count as "ignored" (loss 0, weight 0). ONNX: ignore_index is optional.
struct IgnoreIndex {
  bool present = false;
  int64_t value = 0;
  bool Matches(int64_t t) const { return present && t == value; }
};

// Negative log likelihood of `src` [n, c, d] at the classes `target` [n, d]:
//   loss[i, j] = -src[i, target[i, j], j] * weight[target[i, j]]   (weight = 1 when null),
//   loss[i, j] = 0 when target[i, j] is ignored.
// Contract: every target is in [0, c) or ignored (the caller validates).
// kNone writes n * d losses to dst; kSum writes sum(loss) to dst[0]; kMean writes
// sum(loss) / sum(applied weights), where ignored targets contribute no weight (so without `weight`
// it is the mean over the non-ignored targets; 0 / 0 = NaN when every target is ignored).
// S is the input element type (T, or double for the log-probabilities of SoftmaxCrossEntropyLoss).
template <typename S, typename T>
void NegativeLogLikelihood(const S* src, const int64_t* target, const T* weight, T* dst, int64_t n,
                           int64_t c, int64_t d, IgnoreIndex ignore, LossReduction reduction);

// log(softmax(src)) over the class axis of [n, c, d], in double (max-subtracted for stability).
// dst holds n * c * d values; not in-place safe.
template <typename T>
void LogSoftmaxClasses(const T* src, double* dst, int64_t n, int64_t c, int64_t d);

}  // namespace onyx::kernels::reference
