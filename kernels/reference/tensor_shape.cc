// Reference kernels of the tensor-shape family (see tensor_shape.h for the contracts).
#include "kernels/reference/tensor_shape.h"

#include <algorithm>
#include <cstring>

#include "kernels/op_helpers.h"

namespace onyx::kernels::reference {
namespace {

// A transpose-like copy: the innermost dst dim L is strided in src while dim c is contiguous in
// src. Walks (c, L) in square tiles so that both the reads and the writes of a tile stay in cache.
template <typename E>
void TiledCopyT(const E* src, const std::vector<int64_t>& strides, const Shape& shape, size_t c,
                E* dst) {
  constexpr int64_t kTile = 16;
  const size_t rank = shape.size();
  const size_t last = rank - 1;
  const std::vector<int64_t> dst_strides = ContiguousStrides(shape);
  const int64_t nc = shape[c], nl = shape[last];
  const int64_t sl = strides[last], dc = dst_strides[c];
  // Odometer over every dim but c and last.
  std::vector<int64_t> idx(rank, 0);
  int64_t outer = 1;
  for (size_t d = 0; d < last; ++d)
    if (d != c) outer *= shape[d];
  int64_t src_off = 0, dst_off = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c0 = 0; c0 < nc; c0 += kTile) {
      const int64_t c1 = std::min(nc, c0 + kTile);
      for (int64_t l0 = 0; l0 < nl; l0 += kTile) {
        const int64_t l1 = std::min(nl, l0 + kTile);
        for (int64_t l = l0; l < l1; ++l) {
          const E* s = src + src_off + l * sl;
          E* d = dst + dst_off + l;
          for (int64_t ci = c0; ci < c1; ++ci) d[ci * dc] = s[ci];
        }
      }
    }
    for (size_t d = last; d-- > 0;) {
      if (d == c) continue;
      src_off += strides[d];
      dst_off += dst_strides[d];
      if (++idx[d] < shape[d]) break;
      src_off -= strides[d] * shape[d];
      dst_off -= dst_strides[d] * shape[d];
      idx[d] = 0;
    }
  }
}

template <typename E>
void StridedCopyT(const E* src, const std::vector<int64_t>& strides, const Shape& shape, E* dst) {
  const size_t rank = shape.size();
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  if (rank >= 2 && strides[rank - 1] != 1 && shape[rank - 1] > 1) {
    for (size_t c = rank - 1; c-- > 0;) {
      if (strides[c] == 1) {
        TiledCopyT(src, strides, shape, c, dst);
        return;
      }
    }
  }
  const int64_t inner = shape[rank - 1];
  const int64_t inner_stride = strides[rank - 1];
  int64_t outer = 1;
  for (size_t d = 0; d + 1 < rank; ++d) outer *= shape[d];
  std::vector<int64_t> idx(rank, 0);
  int64_t off = 0;
  for (int64_t o = 0; o < outer; ++o) {
    const E* s = src + off;
    if (inner_stride == 1) {
      std::copy(s, s + inner, dst);
    } else if (inner_stride == 0) {
      std::fill(dst, dst + inner, *s);
    } else {
      for (int64_t i = 0; i < inner; ++i) dst[i] = s[i * inner_stride];
    }
    dst += inner;
    // Odometer over the outer dims, keeping the source offset in step.
    for (size_t d = rank - 1; d-- > 0;) {
      off += strides[d];
      if (++idx[d] < shape[d]) break;
      off -= strides[d] * shape[d];
      idx[d] = 0;
    }
  }
}

// The zero of a dtype as stored: "" for strings, StoreFromDouble(0) for the rest (float8e8m0 has
// no zero and stores its smallest value, which is what a cast of 0 gives).
template <typename E>
E ZeroElement(DType dtype) {
  if constexpr (std::is_same_v<E, std::string>) {
    return std::string();
  } else {
    E e{};
    StoreFromDouble(dtype, &e, 0, 0.0);
    return e;
  }
}

}  // namespace

void StridedCopy(DType dtype, const void* src, int64_t src_offset, std::vector<int64_t> src_strides,
                 Shape shape, void* dst) {
  if (ShapeElementCount(shape) == 0) return;
  // Drop size-1 dims, then merge a dim into its inner neighbour when they are contiguous in src
  // (dst is always contiguous).
  Shape dims;
  std::vector<int64_t> strides;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!dims.empty() && strides.back() == src_strides[d] * shape[d]) {
      dims.back() *= shape[d];
      strides.back() = src_strides[d];
    } else {
      dims.push_back(shape[d]);
      strides.push_back(src_strides[d]);
    }
  }
  VisitStorage(dtype, [&](auto tag) {
    using E = typename decltype(tag)::type;
    StridedCopyT(static_cast<const E*>(src) + src_offset, strides, dims, static_cast<E*>(dst));
  });
}

void FillElements(DType dtype, const void* value, void* dst, int64_t n) {
  VisitStorage(dtype, [&](auto tag) {
    using E = typename decltype(tag)::type;
    std::fill(static_cast<E*>(dst), static_cast<E*>(dst) + n, *static_cast<const E*>(value));
  });
}

namespace {

// y = x viewed as the row-major shape `view` (same element count), transposed by `perm`.
void TransposeView(const Tensor& x, const Shape& view, const std::vector<int64_t>& perm,
                   Tensor& y) {
  // The strides of an empty view such as [0, 2^40, 2^40] overflow; there is nothing to copy.
  if (y.numel() == 0) return;
  const std::vector<int64_t> view_strides = ContiguousStrides(view);
  Shape shape(perm.size());
  std::vector<int64_t> strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    shape[i] = view[perm[i]];
    strides[i] = view_strides[perm[i]];
  }
  StridedCopy(x.dtype(), x.raw_data(), 0, strides, shape, y.raw_data());
}

}  // namespace

void Transpose(const Tensor& x, const std::vector<int64_t>& perm, Tensor& y) {
  TransposeView(x, x.shape(), perm, y);
}

void Concat(const std::vector<const Tensor*>& inputs, int64_t axis, Tensor& y) {
  // An empty y may have dims whose product overflows ([2^40, 2^40, 0]); nothing to write.
  if (y.numel() == 0) return;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= y.dim(d);
  for (int64_t d = axis + 1; d < y.rank(); ++d) inner *= y.dim(d);
  VisitStorage(y.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    E* dst = y.data<E>();
    for (int64_t o = 0; o < outer; ++o) {
      for (const Tensor* in : inputs) {
        const int64_t block = in->dim(axis) * inner;
        const E* src = in->data<E>() + o * block;
        dst = std::copy(src, src + block, dst);
      }
    }
  });
}

void Slice(const Tensor& x, const std::vector<int64_t>& starts, const std::vector<int64_t>& steps,
           Tensor& y) {
  // A non-empty y means a non-empty x, whose strides do not overflow.
  if (y.numel() == 0) return;
  const std::vector<int64_t> in_strides = ContiguousStrides(x.shape());
  std::vector<int64_t> strides(in_strides.size());
  int64_t offset = 0;
  for (size_t a = 0; a < in_strides.size(); ++a) {
    offset += starts[a] * in_strides[a];
    // The step of an axis read once is never used and may be 2^62 (step * stride overflows);
    // otherwise |step| < dim and the product stays within x.
    strides[a] = y.dim(a) > 1 ? steps[a] * in_strides[a] : 0;
  }
  StridedCopy(x.dtype(), x.raw_data(), offset, strides, y.shape(), y.raw_data());
}

void Tile(const Tensor& x, Tensor& y) {
  if (y.numel() == 0) return;  // an empty x may have strides that overflow
  // y viewed as [r0, d0, r1, d1, ...] (row-major identical) reads x with stride 0 on every r.
  const std::vector<int64_t> in_strides = ContiguousStrides(x.shape());
  Shape shape;
  std::vector<int64_t> strides;
  for (int64_t a = 0; a < x.rank(); ++a) {
    shape.push_back(x.dim(a) == 0 ? 0 : y.dim(a) / x.dim(a));
    strides.push_back(0);
    shape.push_back(x.dim(a));
    strides.push_back(in_strides[a]);
  }
  StridedCopy(x.dtype(), x.raw_data(), 0, strides, shape, y.raw_data());
}

void Expand(const Tensor& x, Tensor& y) {
  if (y.numel() == 0) return;  // an empty x may have strides that overflow
  StridedCopy(x.dtype(), x.raw_data(), 0, BroadcastStrides(x.shape(), y.shape()), y.shape(),
              y.raw_data());
}

namespace {
// Source index along one axis for output position `o`, or -1 for the constant value.
// [lo, lo + n) is what is left of the input after negative pads crop it; `front` is the positive
// begin pad.
int64_t PadSource(int64_t o, int64_t front, int64_t lo, int64_t n, PadMode mode) {
  const int64_t c = o - front;
  if (c >= 0 && c < n) return lo + c;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return lo + (c < 0 ? 0 : n - 1);
    case PadMode::kWrap:
      return lo + ((c % n) + n) % n;
    case PadMode::kReflect: {
      if (n == 1) return lo;
      const int64_t period = 2 * (n - 1);
      int64_t m = ((c % period) + period) % period;
      if (m >= n) m = period - m;
      return lo + m;
    }
  }
  return -1;
}
}  // namespace

void Pad(const Tensor& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
         PadMode mode, const void* value, Tensor& y) {
  const int64_t rank = x.rank();
  const int64_t total = y.numel();
  if (total == 0) return;
  if (x.numel() == 0) {
    // Only constant padding makes something of nothing; x's strides may overflow
    // ([0, 2^62, 2^62] cropped to [1, 1, 1]) and no element of x is read.
    if (value != nullptr) FillElements(y.dtype(), value, y.raw_data(), total);
    return;
  }
  // Per axis: the source index of every output position (-1: constant).
  std::vector<std::vector<int64_t>> maps(rank);
  for (int64_t a = 0; a < rank; ++a) {
    const int64_t lo = std::max<int64_t>(0, -begin[a]);
    const int64_t n = x.dim(a) - lo - std::max<int64_t>(0, -end[a]);
    const int64_t front = std::max<int64_t>(0, begin[a]);
    maps[a].resize(y.dim(a));
    for (int64_t o = 0; o < y.dim(a); ++o) maps[a][o] = PadSource(o, front, lo, n, mode);
  }
  const std::vector<int64_t> in_strides = ContiguousStrides(x.shape());
  VisitStorage(x.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E* src = x.data<E>();
    E* dst = y.data<E>();
    const E& fill = *static_cast<const E*>(value == nullptr ? dst : value);
    if (rank == 0) {
      dst[0] = src[0];
      return;
    }
    const int64_t inner = y.dim(rank - 1);
    const std::vector<int64_t>& inner_map = maps[rank - 1];
    std::vector<int64_t> idx(rank - 1, 0);
    for (int64_t row = 0; row < total / inner; ++row) {
      int64_t base = 0;
      bool constant_row = false;
      for (int64_t a = 0; a + 1 < rank; ++a) {
        const int64_t s = maps[a][idx[a]];
        if (s < 0) constant_row = true;
        base += s * in_strides[a];
      }
      E* out = dst + row * inner;
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t s = inner_map[i];
        out[i] = (constant_row || s < 0) ? fill : src[base + s];
      }
      for (int64_t a = rank - 1; a-- > 0;) {
        if (++idx[a] < y.dim(a)) break;
        idx[a] = 0;
      }
    }
  });
}

void DepthToSpace(const Tensor& x, int64_t blocksize, bool crd, Tensor& y) {
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3), b = blocksize;
  const int64_t c_out = c / (b * b);
  // View x as 6-D, then read it in y's order [N, C', H, b, W, b].
  Shape view;
  std::vector<int64_t> perm;
  if (crd) {
    view = {n, c_out, b, b, h, w};
    perm = {0, 1, 4, 2, 5, 3};
  } else {
    view = {n, b, b, c_out, h, w};
    perm = {0, 3, 4, 1, 5, 2};
  }
  TransposeView(x, view, perm, y);
}

void SpaceToDepth(const Tensor& x, int64_t blocksize, bool crd, Tensor& y) {
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3), b = blocksize;
  // View x as [N, C, H/b, b, W/b, b] and read it in y's order: [N, b, b, C, H/b, W/b] (DCR) or
  // [N, C, b, b, H/b, W/b] (CRD).
  const Shape view = {n, c, h / b, b, w / b, b};
  const std::vector<int64_t> perm =
      crd ? std::vector<int64_t>{0, 1, 3, 5, 2, 4} : std::vector<int64_t>{0, 3, 5, 1, 2, 4};
  TransposeView(x, view, perm, y);
}

void EyeLike(int64_t k, Tensor& y) {
  const int64_t rows = y.dim(0), cols = y.dim(1);
  VisitStorage(y.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<E, std::string>) {
      E zero = ZeroElement<E>(y.dtype());
      E one{};
      StoreFromDouble(y.dtype(), &one, 0, 1.0);
      E* dst = y.data<E>();
      std::fill(dst, dst + rows * cols, zero);
      // k is any int64: i + k overflows unless k is within the matrix.
      if (k > -rows && k < cols) {
        for (int64_t i = 0; i < rows; ++i) {
          const int64_t j = i + k;
          if (j >= 0 && j < cols) dst[i * cols + j] = one;
        }
      }
    }
  });
}

void Trilu(const Tensor& x, int64_t k, bool upper, Tensor& y) {
  const int64_t rank = x.rank();
  const int64_t rows = x.dim(rank - 2), cols = x.dim(rank - 1);
  if (y.numel() == 0) return;
  const int64_t batch = y.numel() / (rows * cols);
  VisitStorage(x.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E zero = ZeroElement<E>(x.dtype());
    const E* src = x.data<E>();
    E* dst = y.data<E>();
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) {
          const bool keep = upper ? j - i >= k : j - i <= k;
          *dst++ = keep ? *src : zero;
          ++src;
        }
      }
    }
  });
}

void Range(const Tensor& start, const Tensor& delta, Tensor& y) {
  const int64_t n = y.numel();
  if (IsInteger(y.dtype())) {
    const int64_t s = TensorToInts(start)[0];
    const int64_t d = TensorToInts(delta)[0];
    VisitInteger(y.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* dst = y.data<T>();
      // Every value lies in [start, limit), but i * d alone may not fit int64 (start -2^63,
      // delta 2^24): wrapping unsigned arithmetic gives the exact value.
      for (int64_t i = 0; i < n; ++i)
        dst[i] = static_cast<T>(static_cast<int64_t>(
            static_cast<uint64_t>(s) + static_cast<uint64_t>(i) * static_cast<uint64_t>(d)));
    });
    return;
  }
  const double s = ElementAsDouble(start, 0);
  const double d = ElementAsDouble(delta, 0);
  for (int64_t i = 0; i < n; ++i)
    StoreFromDouble(y.dtype(), y.raw_data(), i, s + static_cast<double>(i) * d);
}

void Col2Im(const Tensor& x, const Col2ImParams& p, Tensor& y) {
  // With N or C 0 the image product is unbounded (and the scratch below would be that big).
  if (y.numel() == 0) return;
  const size_t nd = p.image.size();
  const int64_t batch = y.dim(0), channels = y.dim(1);
  int64_t block_size = 1, image_size = 1;
  for (size_t d = 0; d < nd; ++d) {
    block_size *= p.block[d];
    image_size *= p.image[d];
  }
  // Number of sliding positions per spatial dim (the columns are their row-major product).
  std::vector<int64_t> positions(nd);
  for (size_t d = 0; d < nd; ++d) {
    const int64_t extent = p.dilations[d] * (p.block[d] - 1) + 1;
    positions[d] = (p.image[d] + p.pads[d] + p.pads[nd + d] - extent) / p.strides[d] + 1;
  }
  const int64_t cols = x.dim(2);
  std::vector<double> acc(static_cast<size_t>(image_size));
  std::vector<int64_t> kb(nd), pos(nd);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t c = 0; c < channels; ++c) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t k = 0; k < block_size; ++k) {
        // Block offset of row k, row-major over the block dims.
        for (int64_t r = k, d = static_cast<int64_t>(nd) - 1; d >= 0; --d) {
          kb[d] = r % p.block[d];
          r /= p.block[d];
        }
        const int64_t row = (b * channels + c) * block_size + k;
        for (int64_t l = 0; l < cols; ++l) {
          int64_t target = 0;
          bool inside = true;
          for (int64_t r = l, d = static_cast<int64_t>(nd) - 1; d >= 0; --d) {
            pos[d] = r % positions[d];
            r /= positions[d];
          }
          for (size_t d = 0; d < nd; ++d) {
            const int64_t at = pos[d] * p.strides[d] - p.pads[d] + kb[d] * p.dilations[d];
            if (at < 0 || at >= p.image[d]) {
              inside = false;
              break;
            }
            target = target * p.image[d] + at;
          }
          if (inside) acc[target] += ElementAsDouble(x, row * cols + l);
        }
      }
      const int64_t base = (b * channels + c) * image_size;
      for (int64_t i = 0; i < image_size; ++i)
        StoreFromDouble(y.dtype(), y.raw_data(), base + i, acc[i]);
    }
  }
}

}  // namespace onyx::kernels::reference
