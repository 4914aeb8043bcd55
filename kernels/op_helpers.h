// Helpers shared by op definitions: shape-inference building blocks, broadcasting, axis handling
// and element copies that work for every dtype (strings included).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/element_types.h"
#include "kernels/kernel.h"
#include "onyx/tensor.h"
#include "onyx/value.h"

namespace onyx::kernels {

// ---- shape inference helpers ----
// Output 0 gets input 0's type and shape.
Status InferSameAsInput0(InferContext& ctx);
// Every output i gets input i's type (Identity-like).
Status InferPassThrough(InferContext& ctx);
// Multidirectional (numpy) broadcast of the given inputs' shapes; element type `out`. Returns an
// error naming both inputs when two known dims differ and neither is 1.
Status InferBroadcast(InferContext& ctx, const std::vector<int>& inputs, DType out, int output = 0);
// Broadcast over all present inputs, output type = input 0's type.
Status InferBroadcastAll(InferContext& ctx);
// Broadcast over all present inputs, output type bool (comparisons, logic).
Status InferBroadcastAllBool(InferContext& ctx);
// Fails with kInvalidModel naming the input unless input i's dtype is one of `allowed`.
Status ExpectInputType(InferContext& ctx, int i, const std::vector<DType>& allowed);
// Reads a constant int tensor input (int32 or int64) as int64 values; false when not constant.
bool ConstantInts(InferContext& ctx, int i, std::vector<int64_t>* out);

// Broadcasts two dim lists; error message uses the given descriptions.
StatusOr<std::vector<Dim>> BroadcastDims(const std::vector<Dim>& a, const std::vector<Dim>& b);

// ---- run-time helpers ----
// Numpy broadcast of concrete shapes; error when incompatible.
StatusOr<Shape> BroadcastShapes(const std::vector<Shape>& shapes);
// Strides (in elements) of `in` viewed as broadcast to `out` (0 on broadcast dims).
std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out);
// Row-major strides of a shape.
std::vector<int64_t> ContiguousStrides(const Shape& shape);
// Normalises axis into [0, rank); error naming the attribute/input when out of range.
StatusOr<int64_t> NormalizeAxis(const NodeView& node, int64_t axis, int64_t rank,
                                const char* what = "axis");
// Reads an int32/int64 tensor's values as int64.
std::vector<int64_t> TensorToInts(const Tensor& t);
// Reads any numeric tensor's values as double.
std::vector<double> TensorToDoubles(const Tensor& t);
// Reads element i of a numeric/bool tensor as double (any dtype but string).
inline double ElementAsDouble(const Tensor& t, int64_t i) {
  return LoadAsDouble(t.dtype(), t.raw_data(), i);
}
// uint8 or int8: the element types of quantized activations and weights.
inline bool Is8BitInt(DType t) {
  return t == DType::kUInt8 || t == DType::kInt8;
}
// Copies n elements from src[src_off..] to dst[dst_off..]; both of dtype t (strings deep-copied).
void CopyElements(DType t, const void* src, int64_t src_off, void* dst, int64_t dst_off, int64_t n);
// Makes a 1-D int64 tensor.
Tensor MakeInt64Tensor(const std::vector<int64_t>& values);

// Calls f(out_index, offsets) for every element of `out_shape`, where offsets[k] is the element
// offset into input k broadcast by `strides[k]` (from BroadcastStrides). Iterates row-major.
template <typename F>
void ForEachBroadcast(const Shape& out_shape, const std::vector<std::vector<int64_t>>& strides,
                      F&& f) {
  const int64_t n = ShapeElementCount(out_shape);
  if (n == 0) return;
  const size_t rank = out_shape.size();
  const size_t k = strides.size();
  std::vector<int64_t> idx(rank, 0);
  std::vector<int64_t> off(k, 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, off.data());
    // Odometer increment, updating offsets incrementally.
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < out_shape[d]) {
        for (size_t j = 0; j < k; ++j) off[j] += strides[j][d];
        break;
      }
      for (size_t j = 0; j < k; ++j) off[j] -= strides[j][d] * (out_shape[d] - 1);
      idx[d] = 0;
    }
  }
}

// ---- kernel input/output checks ----
// "input 1 'shape'" (the ONNX input name from the node), for error messages.
std::string DescribeInput(const NodeView& node, int i);
// Fails naming the input unless every present input holds a tensor (not a sequence or optional).
Status CheckTensorInputs(KernelContext& ctx);
// Fails unless inputs [0, n) are present; then CheckTensorInputs.
Status RequireInputs(KernelContext& ctx, int n);
// Largest element count a shape function lets through (guards products of user-given dims
// before they reach the planner, which then applies the session's max_tensor_bytes).
constexpr int64_t kMaxOutputElements = int64_t{1} << 46;
// Fails when the known dims multiply out beyond kMaxOutputElements (or overflow int64).
Status CheckElementCount(const NodeView& node, const std::vector<Dim>& dims);
// Fails (kLimit) when output `i` of `node` with this concrete shape would have more elements or
// bytes than 64 bits can count, or more than `max_bytes` bytes (0: no ceiling). The message
// names node, output, shape, bytes and limit, and says how to raise the limit.
Status CheckOutputSize(const NodeView& node, int i, DType dtype, const Shape& shape,
                       uint64_t max_bytes);
// ctx.Output after checking that the shape is sane (no negative dims) and within the ceiling
// that the run set on this thread (memory::TensorByteCeiling).
StatusOr<Tensor> NewOutput(KernelContext& ctx, int i, DType dtype, const Shape& shape);
// A tensor type of element type t with the given (possibly symbolic) dims.
TypeInfo RankedType(DType t, std::vector<Dim> dims);
// A tensor type of element type t, rank `rank`, every dim unknown.
TypeInfo UnknownDimsType(DType t, int64_t rank);
// Plan-time input checks for the fast kernels' `supports` (x86 and portable alike).
bool IsFloatStatic(const TypeInfo& t);                       // float32 with a static shape
bool Present(const std::vector<TypeInfo>& types, size_t i);  // input i given (any type)

// ---- threading ----
// Calls fn(begin, end) over disjoint chunks covering [0, n), on at most `threads` threads (the
// session's intra-op count). A single call fn(0, n) on the calling thread when threads <= 1 or the
// work is small (n * work_per_item < 2^16, roughly elements touched). Nothing runs when n <= 0.
void ParallelFor(int64_t n, int64_t work_per_item, int threads,
                 const std::function<void(int64_t, int64_t)>& fn);
// Called by the engine before a run on `threads` from the calling thread. A run on one thread
// after one on more starts no OpenMP region, so the previous team's workers would spin beside it
// for up to GOMP_SPINCOUNT (about 40 ms at the Python package's setting); on a busy host they
// take the core the run needs (ShuffleNet's one-thread runs after two-thread ones: up to 8.2 ms
// against 4.0 steady), and the adaptive count's probes of one thread measured that instead of
// the count. So this thread's OpenMP pool is released first (omp_pause_resource_all: its workers
// exit), and a later run on more threads starts them afresh. Nothing without OpenMP.
void ReleaseIdleWorkers(int threads);
// Elements below which a cheap memory-bound loop (a copy, an activation) is not worth splitting:
// 2^16 when ParallelFor runs on the OpenMP team (a dispatch costs 1-2 us), 2^18 on TBB (tens of
// us on a loaded machine).
int64_t MinParallelWork();

// One axis of ONNX Slice on a dim of known size: negative start/end count from the back, then
// clamp to [0, dim] (positive steps) or [0, dim-1] / [-1, dim-1] (negative steps). Returns the
// first index read and the number of elements. `step` must not be 0.
struct SliceRange {
  int64_t start = 0;
  int64_t count = 0;
};
SliceRange ResolveSliceRange(int64_t start, int64_t end, int64_t step, int64_t dim);

// The name of the node's input i for error messages; "" when the node lists fewer inputs, so an
// error about a missing input never reads past the list.
const std::string& InputName(const NodeView& node, int i);

}  // namespace onyx::kernels
