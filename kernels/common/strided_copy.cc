// Byte-level copy helpers of the data-movement kernels (see strided_copy.h).
#include "kernels/common/strided_copy.h"

#include <algorithm>
#include <cstring>

#include "kernels/common/fast_kernel.h"
#include "kernels/common/simd_kernels.h"
#include "kernels/op_helpers.h"

namespace onyx::kernels::common {
namespace {

// Calls f(E{}) with the unsigned integer type of `elem_size` bytes.
template <typename F>
void VisitElemSize(size_t elem_size, F&& f) {
  switch (elem_size) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    default:
      return f(uint64_t{});
  }
}

}  // namespace

void StridedCopy(const void* src, int64_t offset, std::vector<int64_t> strides, Shape shape,
                 void* dst, size_t elem_size, int threads) {
  const int64_t total = ShapeElementCount(shape);
  if (total == 0) return;
  // Collapsed dims, outermost first: size-1 dims dropped, a dim merged into its inner neighbour
  // when that neighbour's walk continues it.
  std::vector<int64_t> dims, st;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    dims.push_back(shape[d]);
    st.push_back(strides[d]);
    const size_t k = dims.size();
    if (k >= 2 && st[k - 2] == st[k - 1] * dims[k - 1]) {
      dims[k - 2] *= dims[k - 1];
      st[k - 2] = st[k - 1];
      dims.pop_back();
      st.pop_back();
    }
  }
  const char* s = static_cast<const char*>(src);
  char* o = static_cast<char*>(dst);
  if (dims.empty()) {
    std::memcpy(o, s + offset * static_cast<int64_t>(elem_size), elem_size);
    return;
  }
  const size_t rank = dims.size();
  const int64_t run = dims.back();
  const int64_t run_stride = st.back();
  const int64_t runs = total / run;
  const int64_t es = static_cast<int64_t>(elem_size);
  ParallelFor(runs, run, ThreadsFor(total, threads), [&](int64_t begin, int64_t end) {
    // Odometer over the outer dims, positioned at run `begin`.
    std::vector<int64_t> idx(rank, 0);
    int64_t off = offset;
    int64_t r = begin;
    for (size_t d = rank - 1; d-- > 0;) {
      idx[d] = r % dims[d];
      r /= dims[d];
      off += idx[d] * st[d];
    }
    VisitElemSize(elem_size, [&](auto tag) {
      using E = decltype(tag);
      for (int64_t k = begin; k < end; ++k) {
        char* out = o + k * run * es;
        if (run_stride == 1) {
          std::memcpy(out, s + off * es, static_cast<size_t>(run * es));
        } else {
          const E* in = reinterpret_cast<const E*>(s) + off;
          E* dst_e = reinterpret_cast<E*>(out);
          for (int64_t i = 0; i < run; ++i) dst_e[i] = in[i * run_stride];
        }
        for (size_t d = rank - 1; d-- > 0;) {
          off += st[d];
          if (++idx[d] < dims[d]) break;
          off -= st[d] * dims[d];
          idx[d] = 0;
        }
      }
    });
  });
}

void Transpose2D(const void* src, int64_t src_stride, void* dst, int64_t dst_stride, int64_t rows,
                 int64_t cols, size_t elem_size) {
  if (elem_size == 4) {
    return Transpose2D32(static_cast<const uint32_t*>(src), src_stride, static_cast<uint32_t*>(dst),
                         dst_stride, rows, cols);
  }
  if (elem_size == 8) {
    return Transpose2D64(static_cast<const uint64_t*>(src), src_stride, static_cast<uint64_t*>(dst),
                         dst_stride, rows, cols);
  }
  // 1- and 2-byte elements: the plain loop (sequential writes, constant-stride reads) measured
  // faster here than scalar cache tiles.
  VisitElemSize(elem_size, [&](auto tag) {
    using E = decltype(tag);
    const E* s = static_cast<const E*>(src);
    E* d = static_cast<E*>(dst);
    for (int64_t a = 0; a < rows; ++a)
      for (int64_t b = 0; b < cols; ++b) d[a * dst_stride + b] = s[a + b * src_stride];
  });
}

}  // namespace onyx::kernels::common
