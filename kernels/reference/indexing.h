// Reference kernels of the indexing family: gathers, scatters, Compress, NonZero, Unique, OneHot.
// Indices arrive already validated and normalised to [0, dim) by kernels/ops/indexing.cc (which
// names the node and input in its errors); these loops trust them. Data movement copies elements by
// storage size (see VisitStorage in tensor_shape.h), so every dtype works.
#pragma once

#include <cstdint>
#include <vector>

#include "onyx/tensor.h"

namespace onyx::kernels::reference {

// y[o, j, i] = data[o, indices[j], i] with data viewed as [outer, dim(axis), inner];
// y has data's dims with dim(axis) replaced by the index shape.
void Gather(const Tensor& data, int64_t axis, const std::vector<int64_t>& indices, Tensor& y);

// y[p] = data[p with its `axis` coordinate replaced by indices[p]]; y has the indices' shape
// (every other dim <= data's).
void GatherElements(const Tensor& data, int64_t axis, const std::vector<int64_t>& indices,
                    const Shape& indices_shape, Tensor& y);

// y[b, t, ...] = data[b, indices[b, t, 0..k), ...]: indices [B..., T..., k] (flat, normalised),
// `batch_dims` leading dims shared with data.
void GatherND(const Tensor& data, int64_t batch_dims, const std::vector<int64_t>& indices,
              const Shape& indices_shape, Tensor& y);

enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };

// y (already a copy of data) gets y[p with axis coordinate indices[p]] (op)= updates[p] for every
// position p of the indices, in row-major order (duplicates: the last one wins for kNone).
// Reductions compute in the element type (bool: add = or, mul = and); numeric types and bool only.
void ScatterElements(int64_t axis, const std::vector<int64_t>& indices, const Shape& indices_shape,
                     const Tensor& updates, ScatterReduction reduction, Tensor& y);

// y (already a copy of data) gets y[indices[t, 0..k), ...] (op)= updates[t, ...] for every index
// tuple t in order.
void ScatterND(const std::vector<int64_t>& indices, const Shape& indices_shape,
               const Tensor& updates, ScatterReduction reduction, Tensor& y);

// Copies the slices j (along axis; axis < 0: the flattened elements) whose condition[j] is true,
// in order. condition may be shorter than the axis (the rest is dropped).
void Compress(const Tensor& x, int64_t axis, const std::vector<bool>& condition, Tensor& y);

// Flat positions of the non-zero elements (strings: non-empty) in row-major order.
std::vector<int64_t> NonZeroPositions(const Tensor& x);

// Unique slices of x along `axis` (axis < 0: unique elements of the flattened x), compared
// lexicographically element by element (NaN sorts last and equals NaN).
struct UniqueResult {
  std::vector<int64_t> first;    // per unique slice: index of its first occurrence
  std::vector<int64_t> inverse;  // per input slice: index of its unique slice
  std::vector<int64_t> counts;   // per unique slice: number of occurrences
};
// sorted: unique slices in ascending order; else in order of first occurrence. Returns false
// for a dtype it cannot compare (float8, complex ...).
bool Unique(const Tensor& x, int64_t axis, bool sorted, UniqueResult* result);

// y = indices with a new axis `axis` of length `depth`: on where the new coordinate equals the
// index (normalised; -1 = no match), off elsewhere. `off`/`on` point at one element of y's dtype.
void OneHot(const std::vector<int64_t>& indices, const Shape& indices_shape, int64_t depth,
            int64_t axis, const void* off, const void* on, Tensor& y);

}  // namespace onyx::kernels::reference
