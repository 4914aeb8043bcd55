// Reference loops of the reduction family: Reduce* over any axis set, ArgMax/ArgMin, the
// Softmax/LogSoftmax/Hardmax family, CumSum/CumProd and TopK. Buffers are contiguous row-major.
// Element types: every numeric type listed for the op in ONNX (float16_t/bfloat16_t compute in
// float or double; integers accumulate in 64-bit integers), bool for ReduceMax/ReduceMin.
#pragma once

#include <cstdint>
#include <vector>

#include "onyx/tensor.h"

namespace onyx::kernels::reference {

enum class ReduceOp { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

// An input tensor viewed as (kept elements) x (reduced elements). Output element o reduces the
// input elements at base[o] + offsets[j] for every j; outputs are row-major over the kept dims.
struct ReduceGeometry {
  std::vector<int64_t> base;     // one per output element
  std::vector<int64_t> offsets;  // one per reduced element, relative to base
  bool contiguous = false;       // offsets == 0, 1, ..., offsets.size() - 1
};
// `reduced[d]` marks the dims of `shape` that are reduced away.
ReduceGeometry MakeReduceGeometry(const Shape& shape, const std::vector<bool>& reduced);

// dst[o] = op over the reduced elements of output o. An empty reduced set gives the identity:
// 0 (Sum, L1, L2, SumSquare), 1 (Prod), -inf / lowest (Max), +inf / highest (Min), -inf (LogSum,
// LogSumExp), NaN (Mean of floats). Integer Mean/L2/LogSum* are computed in double and truncated.
template <typename T>
void Reduce(ReduceOp op, const T* src, T* dst, const ReduceGeometry& g, int threads = 1);

// Index of the max (is_max) or min along the middle axis of [outer, n, inner]; n >= 1. Ties pick
// the first index, or the last with select_last. dst is [outer, inner].
template <typename T>
void ArgReduce(const T* src, int64_t* dst, int64_t outer, int64_t n, int64_t inner, bool is_max,
               bool select_last);

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };
// Softmax-family along the middle axis of [outer, n, inner] (ONNX >= 13 semantics; the opset < 13
// flattening is [outer, n, 1]). Hardmax is one-hot at the first maximum. In-place unsafe.
template <typename T>
void SoftmaxAxis(SoftmaxKind kind, const T* src, T* dst, int64_t outer, int64_t n, int64_t inner,
                 int threads = 1);

// Running sum (or product) along the middle axis of [outer, n, inner]; `exclusive` leaves out the
// current element (starting from 0 / 1), `reverse` runs from the end.
template <typename T>
void Cumulative(const T* src, T* dst, int64_t outer, int64_t n, int64_t inner, bool exclusive,
                bool reverse, bool product);

// The k largest (or smallest) elements along the middle axis of [outer, n, inner], sorted, ties
// in increasing index order; NaN ranks above every number. values/indices are [outer, k, inner].
template <typename T>
void TopK(const T* src, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner,
          int64_t k, bool largest);

}  // namespace onyx::kernels::reference
