// Helpers shared by the control-flow and sequence kernels: merging static types of values that may
// come from several places (If branches, loop iterations, sequence elements) and moving one slice
// of a tensor in or out along an axis (Scan inputs and outputs, Loop scan outputs).
#pragma once

#include <cstdint>
#include <vector>

#include "onyx/status.h"
#include "onyx/tensor.h"
#include "onyx/value.h"

namespace onyx::kernels::reference {

// The most precise type that covers both `a` and `b`: dims that agree are kept, others become
// unknown; a rank mismatch drops the shape; differing element types or kinds give kUnknown.
// An optional merged with a plain value of its element kind stays optional.
TypeInfo MergeTypes(const TypeInfo& a, const TypeInfo& b);
// True when the two types are identical (kind, element type, shape, dims, inner types).
bool SameType(const TypeInfo& a, const TypeInfo& b);
// `t` with every dim made unknown (rank kept); inner types of sequences/optionals likewise.
TypeInfo RelaxDims(const TypeInfo& t);

// Whether an If branch's inference/planning failure may wait until the branch runs: the shapes
// reaching a branch that a run never takes can break it (Silero VAD's 8 kHz branch at 16 kHz).
// Unsupported operators and limits stay load-time errors.
inline bool DeferrableInferenceError(const Status& s) {
  return s.code() == ErrorCode::kInvalidModel || s.code() == ErrorCode::kInvalidArgument ||
         s.code() == ErrorCode::kRuntime;
}

// The sub-tensor of `src` at `index` along `axis` (rank one less), in a buffer it owns.
// The caller validates axis < rank and 0 <= index < dim(axis).
Tensor TakeAlongAxis(const Tensor& src, int64_t axis, int64_t index);
// Copies `part` (dst's shape with `axis` removed) into dst at `index` along `axis`.
// The caller validates the shapes.
void PutAlongAxis(const Tensor& part, Tensor* dst, int64_t axis, int64_t index);
// Sets every element of `t` to zero (empty strings for string tensors).
void FillZero(Tensor* t);
// The shape of a declared tensor type with unknown dims as 0; {} when the rank is unknown. Used
// for scan outputs of loops that ran zero iterations, whose element shape nothing else tells.
Shape DeclaredShapeOrZeros(const TypeInfo& t);
// `shape` with `value` inserted before position `axis`.
Shape InsertDim(const Shape& shape, int64_t axis, int64_t value);
// A deep copy of `v` when it is a tensor (so outputs never alias input memory); sequences and
// empty optionals are immutable and shared as they are.
Value OwnedCopy(const Value& v);

}  // namespace onyx::kernels::reference
