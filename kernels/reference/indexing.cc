// Reference kernels of the indexing family (see indexing.h for the contracts).
#include "kernels/reference/indexing.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>

#include "kernels/element_types.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/tensor_shape.h"

namespace onyx::kernels::reference {
namespace {

// Calls f(dst_offset, src_position) for every position of `shape` (row-major), where dst_offset is
// the offset into a tensor of strides `strides` whose `axis` coordinate is replaced by
// indices[src_position]. Shared by GatherElements and ScatterElements.
template <typename F>
void ForEachAlongAxis(const Shape& shape, const std::vector<int64_t>& strides, int64_t axis,
                      const std::vector<int64_t>& indices, F&& f) {
  const int64_t n = ShapeElementCount(shape);
  if (n == 0) return;
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> coord(static_cast<size_t>(rank), 0);
  int64_t base = 0;  // offset of the coordinates other than `axis`
  for (int64_t p = 0; p < n; ++p) {
    f(base + indices[p] * strides[axis], p);
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (d != axis) base += strides[d];
      if (++coord[d] < shape[d]) break;
      if (d != axis) base -= strides[d] * shape[d];
      coord[d] = 0;
    }
  }
}

// Calls f(dst_offset, src_position) for every element ScatterND writes.
template <typename F>
void ForEachNDSlice(const std::vector<int64_t>& indices, const Shape& indices_shape,
                    const Shape& data_shape, F&& f) {
  const int64_t k = indices_shape.back();
  int64_t tuples = 1;
  for (size_t d = 0; d + 1 < indices_shape.size(); ++d) tuples *= indices_shape[d];
  const std::vector<int64_t> strides = ContiguousStrides(data_shape);
  int64_t slice = 1;
  for (size_t d = static_cast<size_t>(k); d < data_shape.size(); ++d) slice *= data_shape[d];
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; ++j) off += indices[t * k + j] * strides[j];
    for (int64_t e = 0; e < slice; ++e) f(off + e, t * slice + e);
  }
}

template <typename T>
T Combine(T a, T b, ScatterReduction r) {
  if constexpr (std::is_same_v<T, bool>) {
    // bool: add and max are "or", mul and min are "and".
    return (r == ScatterReduction::kAdd || r == ScatterReduction::kMax) ? (a || b) : (a && b);
  } else if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
    return T(Combine<float>(static_cast<float>(a), static_cast<float>(b), r));
  } else {
    switch (r) {
      case ScatterReduction::kAdd:
        return static_cast<T>(a + b);
      case ScatterReduction::kMul:
        return static_cast<T>(a * b);
      case ScatterReduction::kMax:
        return b > a ? b : a;
      case ScatterReduction::kMin:
        return b < a ? b : a;
      case ScatterReduction::kNone:
        return b;
    }
    return b;
  }
}

// Runs a scatter: `for_each(f)` must call f(dst_offset, src_position) for every update.
template <typename ForEach>
void RunScatter(const Tensor& updates, ScatterReduction reduction, Tensor& y, ForEach&& for_each) {
  if (reduction == ScatterReduction::kNone) {
    VisitStorage(y.dtype(), [&](auto tag) {
      using E = typename decltype(tag)::type;
      E* dst = y.data<E>();
      const E* src = updates.data<E>();
      for_each([&](int64_t d, int64_t s) { dst[d] = src[s]; });
    });
    return;
  }
  const bool typed = VisitNumericOrBool(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = y.data<T>();
    const T* src = updates.data<T>();
    for_each([&](int64_t d, int64_t s) { dst[d] = Combine<T>(dst[d], src[s], reduction); });
  });
  if (!typed) {  // float8 and friends: through double
    for_each([&](int64_t d, int64_t s) {
      const double v = Combine<double>(LoadAsDouble(y.dtype(), y.raw_data(), d),
                                       LoadAsDouble(y.dtype(), updates.raw_data(), s), reduction);
      StoreFromDouble(y.dtype(), y.raw_data(), d, v);
    });
  }
}

// Total order used by Unique: NaN after every number and equal to NaN.
template <typename T>
auto SortKey(const T& v) {
  if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
    return static_cast<float>(v);
  } else {
    return v;
  }
}
template <typename K>
bool KeyLess(const K& a, const K& b) {
  if constexpr (std::is_floating_point_v<K>) {
    const bool an = std::isnan(a), bn = std::isnan(b);
    if (an || bn) return !an && bn;
  }
  return a < b;
}

template <typename T>
void UniqueT(const T* x, int64_t outer, int64_t n, int64_t inner, bool sorted, UniqueResult* r) {
  // Slice j is {x[(o * n + j) * inner + i]}; compare lexicographically over (o, i).
  auto cmp = [&](int64_t a, int64_t b) -> int {
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const auto va = SortKey(x[(o * n + a) * inner + i]);
        const auto vb = SortKey(x[(o * n + b) * inner + i]);
        if (KeyLess(va, vb)) return -1;
        if (KeyLess(vb, va)) return 1;
      }
    }
    return 0;
  };
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  // Stable: the first of each run of equal slices is its first occurrence.
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
  r->first.clear();
  r->counts.clear();
  r->inverse.assign(static_cast<size_t>(n), 0);
  for (size_t p = 0; p < order.size(); ++p) {
    if (p == 0 || cmp(order[p - 1], order[p]) != 0) {
      r->first.push_back(order[p]);
      r->counts.push_back(0);
    }
    r->inverse[order[p]] = static_cast<int64_t>(r->first.size()) - 1;
    ++r->counts.back();
  }
  if (sorted) return;
  // Renumber the groups by first occurrence.
  const size_t u = r->first.size();
  std::vector<int64_t> by_first(u);
  std::iota(by_first.begin(), by_first.end(), 0);
  std::sort(by_first.begin(), by_first.end(),
            [&](int64_t a, int64_t b) { return r->first[a] < r->first[b]; });
  std::vector<int64_t> rank(u), first(u), counts(u);
  for (size_t g = 0; g < u; ++g) {
    rank[by_first[g]] = static_cast<int64_t>(g);
    first[g] = r->first[by_first[g]];
    counts[g] = r->counts[by_first[g]];
  }
  for (int64_t& v : r->inverse) v = rank[v];
  r->first = std::move(first);
  r->counts = std::move(counts);
}

}  // namespace

void Gather(const Tensor& data, int64_t axis, const std::vector<int64_t>& indices, Tensor& y) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data.dim(d);
  for (int64_t d = axis + 1; d < data.rank(); ++d) inner *= data.dim(d);
  const int64_t dim = data.dim(axis);
  VisitStorage(data.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E* src = data.data<E>();
    E* dst = y.data<E>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t idx : indices) {
        const E* block = src + (o * dim + idx) * inner;
        dst = std::copy(block, block + inner, dst);
      }
    }
  });
}

void GatherElements(const Tensor& data, int64_t axis, const std::vector<int64_t>& indices,
                    const Shape& indices_shape, Tensor& y) {
  const std::vector<int64_t> strides = ContiguousStrides(data.shape());
  VisitStorage(data.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E* src = data.data<E>();
    E* dst = y.data<E>();
    ForEachAlongAxis(indices_shape, strides, axis, indices,
                     [&](int64_t s, int64_t p) { dst[p] = src[s]; });
  });
}

void GatherND(const Tensor& data, int64_t batch_dims, const std::vector<int64_t>& indices,
              const Shape& indices_shape, Tensor& y) {
  const int64_t k = indices_shape.back();
  int64_t batch = 1, tuples = 1, slice = 1, batch_stride = 1;
  for (int64_t d = 0; d < batch_dims; ++d) batch *= indices_shape[d];
  for (size_t d = batch_dims; d + 1 < indices_shape.size(); ++d) tuples *= indices_shape[d];
  for (int64_t d = batch_dims + k; d < data.rank(); ++d) slice *= data.dim(d);
  for (int64_t d = batch_dims; d < data.rank(); ++d) batch_stride *= data.dim(d);
  // Strides of the k indexed dims (in elements of data).
  std::vector<int64_t> strides(static_cast<size_t>(k));
  for (int64_t j = k - 1, s = slice; j >= 0; --j) {
    strides[j] = s;
    s *= data.dim(batch_dims + j);
  }
  VisitStorage(data.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E* src = data.data<E>();
    E* dst = y.data<E>();
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t t = 0; t < tuples; ++t) {
        const int64_t* idx = indices.data() + (b * tuples + t) * k;
        int64_t off = b * batch_stride;
        for (int64_t j = 0; j < k; ++j) off += idx[j] * strides[j];
        dst = std::copy(src + off, src + off + slice, dst);
      }
    }
  });
}

void ScatterElements(int64_t axis, const std::vector<int64_t>& indices, const Shape& indices_shape,
                     const Tensor& updates, ScatterReduction reduction, Tensor& y) {
  const std::vector<int64_t> strides = ContiguousStrides(y.shape());
  RunScatter(updates, reduction, y,
             [&](auto&& f) { ForEachAlongAxis(indices_shape, strides, axis, indices, f); });
}

void ScatterND(const std::vector<int64_t>& indices, const Shape& indices_shape,
               const Tensor& updates, ScatterReduction reduction, Tensor& y) {
  RunScatter(updates, reduction, y,
             [&](auto&& f) { ForEachNDSlice(indices, indices_shape, y.shape(), f); });
}

void Compress(const Tensor& x, int64_t axis, const std::vector<bool>& condition, Tensor& y) {
  int64_t outer = 1, n = x.numel(), inner = 1;
  if (axis >= 0) {
    n = x.dim(axis);
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
    for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  }
  const int64_t m = std::min<int64_t>(n, static_cast<int64_t>(condition.size()));
  VisitStorage(x.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E* src = x.data<E>();
    E* dst = y.data<E>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < m; ++j) {
        if (!condition[j]) continue;
        const E* block = src + (o * n + j) * inner;
        dst = std::copy(block, block + inner, dst);
      }
    }
  });
}

std::vector<int64_t> NonZeroPositions(const Tensor& x) {
  std::vector<int64_t> out;
  const int64_t n = x.numel();
  if (x.dtype() == DType::kString) {
    for (int64_t i = 0; i < n; ++i)
      if (!x.strings()[i].empty()) out.push_back(i);
    return out;
  }
  if (x.dtype() == DType::kComplex64 || x.dtype() == DType::kComplex128) {
    // Non-zero when either part is (so -0 + 0i is zero, like numpy).
    for (int64_t i = 0; i < n; ++i) {
      const bool nz = x.dtype() == DType::kComplex64
                          ? (x.data<float>()[2 * i] != 0 || x.data<float>()[2 * i + 1] != 0)
                          : (x.data<double>()[2 * i] != 0 || x.data<double>()[2 * i + 1] != 0);
      if (nz) out.push_back(i);
    }
    return out;
  }
  const bool typed = VisitNumericOrBool(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = x.data<T>();
    for (int64_t i = 0; i < n; ++i)
      if (static_cast<double>(p[i]) != 0) out.push_back(i);
  });
  if (!typed) {
    for (int64_t i = 0; i < n; ++i)
      if (ElementAsDouble(x, i) != 0) out.push_back(i);
  }
  return out;
}

bool Unique(const Tensor& x, int64_t axis, bool sorted, UniqueResult* result) {
  int64_t outer = 1, n = x.numel(), inner = 1;
  if (axis >= 0) {
    n = x.dim(axis);
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
    for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  }
  return VisitAll(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    UniqueT<T>(x.data<T>(), outer, n, inner, sorted, result);
  });
}

void OneHot(const std::vector<int64_t>& indices, const Shape& indices_shape, int64_t depth,
            int64_t axis, const void* off, const void* on, Tensor& y) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= indices_shape[d];
  for (size_t d = axis; d < indices_shape.size(); ++d) inner *= indices_shape[d];
  VisitStorage(y.dtype(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E& off_v = *static_cast<const E*>(off);
    const E& on_v = *static_cast<const E*>(on);
    E* dst = y.data<E>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t d = 0; d < depth; ++d)
        for (int64_t i = 0; i < inner; ++i) *dst++ = indices[o * inner + i] == d ? on_v : off_v;
  });
}

}  // namespace onyx::kernels::reference
