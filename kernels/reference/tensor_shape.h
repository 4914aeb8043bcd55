// Reference kernels of the tensor-shape family: data movement (transpose, concat, slice, pad, tile,
// expand, depth/space rearrangements) and the generators (range, eye, trilu, col2im).
// Every kernel takes validated arguments; the op definitions in kernels/ops/tensor_shape.cc check
// shapes, axes and attributes first and name the node in their errors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/element_types.h"
#include "onyx/tensor.h"

namespace onyx::kernels::reference {

// 16 opaque bytes: the storage of complex128 elements.
struct Bytes16 {
  uint64_t lo, hi;
};

// Data-movement kernels never look at element values, only at how they are stored: calls
// f(TypeTag<E>{}) with E = std::string for strings, else the unsigned integer (or Bytes16) of the
// dtype's DTypeSize. So float8, int4 (one byte each), float16 and complex all take the same path.
// Returns false for a dtype without storage (kUndefined).
template <typename F>
bool VisitStorage(DType t, F&& f) {
  if (t == DType::kString) {
    f(TypeTag<std::string>{});
    return true;
  }
  switch (DTypeSize(t)) {
    case 1:
      f(TypeTag<uint8_t>{});
      return true;
    case 2:
      f(TypeTag<uint16_t>{});
      return true;
    case 4:
      f(TypeTag<uint32_t>{});
      return true;
    case 8:
      f(TypeTag<uint64_t>{});
      return true;
    case 16:
      f(TypeTag<Bytes16>{});
      return true;
    default:
      return false;
  }
}

// dst[i] = src[src_offset + sum_d idx_d(i) * src_strides[d]] for every row-major index i of
// `shape`. Strides are in elements and may be 0 (broadcast) or negative (reversed slices). dst is
// contiguous and must not overlap src. Size-1 dims are dropped and contiguous dims merged first, so
// a plain copy becomes one memcpy.
void StridedCopy(DType dtype, const void* src, int64_t src_offset, std::vector<int64_t> src_strides,
                 Shape shape, void* dst);

// Sets dst[0..n) to *value (one element of the same dtype).
void FillElements(DType dtype, const void* value, void* dst, int64_t n);

// y = x with dims permuted: y.dim(i) = x.dim(perm[i]).
void Transpose(const Tensor& x, const std::vector<int64_t>& perm, Tensor& y);

// y = inputs joined along `axis` (every input already has y's dims except at `axis`).
void Concat(const std::vector<const Tensor*>& inputs, int64_t axis, Tensor& y);

// y = x[..., start + i * step for i in range(y.dim(a)), ...] on every axis a (per-axis start,
// step).
void Slice(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& steps,
           Tensor& y);

// y = x repeated y.dim(a) / x.dim(a) times along every axis a.
void Tile(const Tensor& x, Tensor& y);

// y = x broadcast (numpy rules) to y's shape; y's rank >= x's rank.
void Expand(const Tensor& x, Tensor& y);

enum class PadMode { kConstant, kReflect, kEdge, kWrap };
// Pads (or, for negative pads, crops) every axis a by begin[a] in front and end[a] behind.
// Negative pads crop first; the mode then extends what is left, as ONNX Runtime does.
// `value` points at one element of x's dtype (constant mode only). The caller checks that every
// axis a mode other than constant extends has at least one element left.
void Pad(const Tensor& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
         PadMode mode, const void* value, Tensor& y);

// x [N, C, H, W] -> y [N, C / b^2, H * b, W * b]; CRD reads channels as (c, bh, bw), DCR as
// (bh, bw, c).
void DepthToSpace(const Tensor& x, int64_t blocksize, bool crd, Tensor& y);
// x [N, C, H, W] -> y [N, C * b^2, H / b, W / b], channels as (bh, bw, c).
void SpaceToDepth(const Tensor& x, int64_t blocksize, bool crd, Tensor& y);

// y (2-D, any non-string dtype) = ones on the diagonal j = i + k, zeros elsewhere.
void EyeLike(int64_t k, Tensor& y);

// Keeps the upper (j - i >= k) or lower (j - i <= k) triangle of each trailing matrix; the rest is
// zero ("" for strings).
void Trilu(const Tensor& x, int64_t k, bool upper, Tensor& y);

// y[i] = start + i * delta for i < y.numel(), computed in int64 for integers and in double (float
// for the 16-bit types, per the opset 27 stash_type) for floats.
void Range(const Tensor& start, const Tensor& delta, Tensor& y);

struct Col2ImParams {
  std::vector<int64_t> image;      // spatial output size per dim
  std::vector<int64_t> block;      // kernel size per dim
  std::vector<int64_t> dilations;  // per dim, >= 1
  std::vector<int64_t> strides;    // per dim, >= 1
  std::vector<int64_t> pads;       // begin pads for every dim, then end pads
};
// x [N, C * prod(block), L] -> y [N, C, image...]: sums every column back into its image position
// (overlaps add up). Accumulates in double; numeric dtypes only.
void Col2Im(const Tensor& x, const Col2ImParams& p, Tensor& y);

}  // namespace onyx::kernels::reference
