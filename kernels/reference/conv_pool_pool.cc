// Pooling: MaxPool (with Indices), AveragePool, LpPool, GlobalAveragePool, GlobalMaxPool,
// GlobalLpPool and MaxUnpool. Every kernel works on N-d inputs [N, C, D1..Dn]; planes (n, c) run in
// parallel.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/element_types.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/conv_pool.h"

namespace onyx::kernels {
namespace {

enum class PoolKind { kMax, kAverage, kLp };

// Accumulation type: float for float and the 16-bit floats, double for double, and the type
// itself for the integer types (only MaxPool takes integers).
template <typename T>
using PoolAcc = std::conditional_t<std::is_same_v<T, double>, double,
                                   std::conditional_t<std::is_integral_v<T>, T, float>>;

std::vector<int64_t> SpatialDims(const Shape& s) {
  return Shape(s.begin() + 2, s.end());
}

Shape WithSpatial(const Shape& x, const std::vector<int64_t>& spatial) {
  Shape out{x[0], x[1]};
  out.insert(out.end(), spatial.begin(), spatial.end());
  return out;
}

// For each spatial dim and output index: the taps [lo, hi) that land inside the input, and how
// many taps land inside the explicitly padded input (the count_include_pad divisor factor).
struct TapTable {
  std::vector<std::vector<int64_t>> lo, hi, padded_count;
};

TapTable MakeTapTable(const WindowGeometry& g) {
  TapTable t;
  const size_t rank = g.rank();
  t.lo.resize(rank);
  t.hi.resize(rank);
  t.padded_count.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    for (int64_t o = 0; o < g.out[d]; ++o) {
      const int64_t start = o * g.strides[d] - g.pad_begin[d];
      int64_t lo = g.kernel[d], hi = 0, padded = 0;
      for (int64_t k = 0; k < g.kernel[d]; ++k) {
        const int64_t i = start + k * g.dilations[d];
        if (i >= 0 && i < g.in[d]) {
          lo = std::min(lo, k);
          hi = k + 1;
        }
        if (i >= -g.pad_begin[d] && i < g.in[d] + g.pad_end[d]) ++padded;
      }
      t.lo[d].push_back(std::min(lo, hi));
      t.hi[d].push_back(hi);
      t.padded_count[d].push_back(padded);
    }
  }
  return t;
}

struct PoolParams {
  PoolKind kind = PoolKind::kMax;
  bool count_include_pad = false;  // AveragePool
  double p = 2;                    // LpPool
  int64_t storage_order = 0;       // MaxPool indices: 0 row-major, 1 column-major
};

// Pools one plane. `indices` (MaxPool only, may be null) gets the flat input index of each max,
// offset by `index_base` (the plane's start in the whole tensor).
template <typename T>
void PoolPlane(const T* src, T* dst, int64_t* indices, int64_t index_base, const WindowGeometry& g,
               const TapTable& taps, const PoolParams& params) {
  using Acc = PoolAcc<T>;
  const size_t rank = g.rank();
  const int64_t out_size = g.OutSize();
  std::vector<int64_t> in_strides(rank, 1), col_strides(rank, 1);
  for (size_t d = rank - 1; d-- > 0;) in_strides[d] = in_strides[d + 1] * g.in[d + 1];
  for (size_t d = 1; d < rank; ++d) col_strides[d] = col_strides[d - 1] * g.in[d - 1];
  std::vector<int64_t> o(rank, 0), k(rank, 0), start(rank, 0);
  for (int64_t pos = 0; pos < out_size; ++pos) {
    bool empty = false;
    for (size_t d = 0; d < rank; ++d) {
      start[d] = o[d] * g.strides[d] - g.pad_begin[d];
      k[d] = taps.lo[d][o[d]];
      if (k[d] >= taps.hi[d][o[d]]) empty = true;
    }
    Acc best = std::numeric_limits<Acc>::lowest();
    int64_t best_index = -1;
    Acc sum = 0;
    int64_t count = 0;
    while (!empty) {
      int64_t offset = 0;
      for (size_t d = 0; d < rank; ++d)
        offset += (start[d] + k[d] * g.dilations[d]) * in_strides[d];
      const Acc v = static_cast<Acc>(src[offset]);
      if (params.kind == PoolKind::kMax) {
        if (best_index < 0 || v > best) {
          best = v;
          best_index = offset;
        }
      } else if (params.kind == PoolKind::kAverage) {
        sum += v;
      } else {
        const Acc a = v < 0 ? -v : v;
        sum += params.p == 2 ? a * a : static_cast<Acc>(std::pow(static_cast<double>(a), params.p));
      }
      ++count;
      // Next tap (odometer over the valid taps of every dim).
      size_t d = rank;
      while (d-- > 0) {
        if (++k[d] < taps.hi[d][o[d]]) break;
        k[d] = taps.lo[d][o[d]];
      }
      if (d == static_cast<size_t>(-1)) break;
    }
    if (params.kind == PoolKind::kMax) {
      dst[pos] = static_cast<T>(best);
      if (indices) {
        int64_t index = best_index;
        if (params.storage_order == 1 && best_index >= 0) {
          index = 0;  // column-major: the first spatial dim varies fastest
          for (size_t d = 0; d < rank; ++d)
            index += ((best_index / in_strides[d]) % g.in[d]) * col_strides[d];
        }
        indices[pos] = index_base + index;
      }
    } else if (params.kind == PoolKind::kAverage) {
      int64_t divisor = count;
      if (params.count_include_pad) {
        divisor = 1;
        for (size_t d = 0; d < rank; ++d) divisor *= taps.padded_count[d][o[d]];
      }
      dst[pos] = static_cast<T>(divisor > 0 ? sum / static_cast<Acc>(divisor) : Acc(0));
    } else {
      dst[pos] = static_cast<T>(params.p == 2 ? std::sqrt(sum)
                                              : std::pow(static_cast<double>(sum), 1.0 / params.p));
    }
    for (size_t d = rank; d-- > 0;) {  // next output position
      if (++o[d] < g.out[d]) break;
      o[d] = 0;
    }
  }
}

// PoolPlane for 2-D windows (the common case), with plain nested loops instead of the N-d
// odometers: same results, several times faster.
template <typename T>
void PoolPlane2D(const T* src, T* dst, int64_t* indices, int64_t index_base,
                 const WindowGeometry& g, const TapTable& taps, const PoolParams& params) {
  using Acc = PoolAcc<T>;
  const int64_t in_h = g.in[0], in_w = g.in[1];
  const int64_t dil_h = g.dilations[0], dil_w = g.dilations[1];
  for (int64_t oh = 0; oh < g.out[0]; ++oh) {
    const int64_t start_h = oh * g.strides[0] - g.pad_begin[0];
    const int64_t kh_lo = taps.lo[0][oh], kh_hi = taps.hi[0][oh];
    for (int64_t ow = 0; ow < g.out[1]; ++ow) {
      const int64_t start_w = ow * g.strides[1] - g.pad_begin[1];
      const int64_t kw_lo = taps.lo[1][ow], kw_hi = taps.hi[1][ow];
      const int64_t pos = oh * g.out[1] + ow;
      if (params.kind == PoolKind::kMax) {
        Acc best = std::numeric_limits<Acc>::lowest();
        int64_t best_h = -1, best_w = -1;
        for (int64_t kh = kh_lo; kh < kh_hi; ++kh) {
          const int64_t h = start_h + kh * dil_h;
          const T* row = src + h * in_w;
          for (int64_t kw = kw_lo; kw < kw_hi; ++kw) {
            const int64_t w = start_w + kw * dil_w;
            const Acc v = static_cast<Acc>(row[w]);
            if (best_h < 0 || v > best) {
              best = v;
              best_h = h;
              best_w = w;
            }
          }
        }
        dst[pos] = static_cast<T>(best);
        if (indices) {
          const int64_t index =
              params.storage_order == 1 ? best_w * in_h + best_h : best_h * in_w + best_w;
          indices[pos] = best_h < 0 ? -1 : index_base + index;
        }
        continue;
      }
      Acc sum = 0;
      for (int64_t kh = kh_lo; kh < kh_hi; ++kh) {
        const T* row = src + (start_h + kh * dil_h) * in_w + start_w;
        for (int64_t kw = kw_lo; kw < kw_hi; ++kw) {
          const Acc v = static_cast<Acc>(row[kw * dil_w]);
          if (params.kind == PoolKind::kAverage) {
            sum += v;
          } else {
            const Acc a = v < 0 ? -v : v;
            sum += params.p == 2 ? a * a
                                 : static_cast<Acc>(std::pow(static_cast<double>(a), params.p));
          }
        }
      }
      const int64_t count =
          std::max<int64_t>(0, kh_hi - kh_lo) * std::max<int64_t>(0, kw_hi - kw_lo);
      if (params.kind == PoolKind::kAverage) {
        const int64_t divisor =
            params.count_include_pad ? taps.padded_count[0][oh] * taps.padded_count[1][ow] : count;
        dst[pos] = static_cast<T>(divisor > 0 ? sum / static_cast<Acc>(divisor) : Acc(0));
      } else {
        dst[pos] = static_cast<T>(
            params.p == 2 ? std::sqrt(sum) : std::pow(static_cast<double>(sum), 1.0 / params.p));
      }
    }
  }
}

// The window's kernel_shape attribute (required for the windowed pools).
StatusOr<std::vector<int64_t>> KernelShape(const NodeView& node) {
  return node.RequiredInts("kernel_shape");
}

Status CheckPoolInput(const NodeView& node, const Tensor& x) {
  if (x.rank() >= 3) return Status::Ok();
  // A node without X gets here too (constant folding runs input-less nodes): name no input then.
  if (node.node().inputs.empty() || node.node().inputs[0].empty())
    return node.Invalid("input 0 (X) is missing; expected [N, C, spatial...]");
  return node.Invalid("input 0 '", node.node().inputs[0], "' has shape ", ShapeToString(x.shape()),
                      "; expected [N, C, spatial...] (rank >= 3)");
}

Status RunWindowPool(KernelContext& ctx, const PoolParams& params, bool allow_ceil_mode) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  ONYX_RETURN_IF_ERROR(CheckPoolInput(node, x));
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, KernelShape(node));
  ONYX_ASSIGN_OR_RETURN(WindowGeometry g,
                        ResolveWindow(node, SpatialDims(x.shape()), kernel, allow_ceil_mode));
  const Shape out_shape = WithSpatial(x.shape(), g.out);
  Tensor y = ctx.Output(0, x.dtype(), out_shape);
  int64_t* indices = nullptr;
  if (params.kind == PoolKind::kMax && ctx.num_outputs() > 1 && ctx.has_output(1)) {
    indices = ctx.Output(1, DType::kInt64, out_shape).data<int64_t>();
  }
  const TapTable taps = MakeTapTable(g);
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t in_size = g.InSize();
  const int64_t out_size = g.OutSize();
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = x.data<T>();
    T* dst = y.data<T>();
    tbb::parallel_for(int64_t{0}, planes, [&](int64_t p) {
      int64_t* plane_indices = indices ? indices + p * out_size : nullptr;
      if (g.rank() == 2) {
        PoolPlane2D<T>(src + p * in_size, dst + p * out_size, plane_indices, p * in_size, g, taps,
                       params);
      } else {
        PoolPlane<T>(src + p * in_size, dst + p * out_size, plane_indices, p * in_size, g, taps,
                     params);
      }
    });
  };
  const DType t = x.dtype();
  bool ok = VisitFloat(t, run);
  if (!ok && params.kind == PoolKind::kMax && (t == DType::kInt8 || t == DType::kUInt8)) {
    ok = VisitInteger(t, run);
  }
  if (!ok) {
    return node.NotSupported("input 0 '", node.node().inputs[0], "' has type ", DTypeName(t));
  }
  return Status::Ok();
}

// LpPool/GlobalLpPool's p: an int from opset 2, a float in opset 1 (default 2).
double ReadP(const NodeView& node) {
  const ir::Attribute* a = node.node().attr("p");
  if (!a) return 2.0;
  return a->type == ir::AttrType::kFloat ? static_cast<double>(a->f) : static_cast<double>(a->i);
}

enum class GlobalKind { kAverage, kMax, kLp };

Status RunGlobalPool(KernelContext& ctx, GlobalKind kind) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) {
    return node.Invalid("input 0 '", node.node().inputs[0], "' has shape ",
                        ShapeToString(x.shape()), "; expected [N, C, spatial...]");
  }
  Shape out_shape(x.shape().begin(), x.shape().begin() + 2);
  out_shape.resize(x.shape().size(), 1);
  Tensor y = ctx.Output(0, x.dtype(), out_shape);
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t size = planes == 0 ? 0 : x.numel() / planes;
  const double p = kind == GlobalKind::kLp ? ReadP(node) : 2.0;
  const bool ok = VisitFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = PoolAcc<T>;
    const T* src = x.data<T>();
    T* dst = y.data<T>();
    tbb::parallel_for(int64_t{0}, planes, [&](int64_t pl) {
      const T* s = src + pl * size;
      if (kind == GlobalKind::kMax) {
        // A NaN anywhere gives NaN, as ReduceMax and numpy's max (the ONNX reference) have it,
        // wherever it sits in the plane.
        Acc best = size > 0 ? static_cast<Acc>(s[0]) : Acc(0);
        for (int64_t i = 1; i < size && !std::isnan(best); ++i) {
          const Acc v = static_cast<Acc>(s[i]);
          if (std::isnan(v) || v > best) best = v;
        }
        dst[pl] = static_cast<T>(best);
      } else if (kind == GlobalKind::kAverage) {
        // Independent partial sums: vectorisable without -ffast-math.
        constexpr int kLanes = 8;
        Acc part[kLanes] = {};
        int64_t i = 0;
        for (; i + kLanes <= size; i += kLanes)
          for (int l = 0; l < kLanes; ++l) part[l] += static_cast<Acc>(s[i + l]);
        Acc sum = 0;
        for (int l = 0; l < kLanes; ++l) sum += part[l];
        for (; i < size; ++i) sum += static_cast<Acc>(s[i]);
        dst[pl] = static_cast<T>(size > 0 ? sum / static_cast<Acc>(size) : Acc(0));
      } else {
        double sum = 0;
        for (int64_t i = 0; i < size; ++i) sum += std::pow(std::fabs(static_cast<double>(s[i])), p);
        dst[pl] = static_cast<T>(std::pow(sum, 1.0 / p));
      }
    });
  });
  if (!ok) {
    return node.NotSupported("input 0 '", node.node().inputs[0], "' has type ",
                             DTypeName(x.dtype()));
  }
  return Status::Ok();
}

}  // namespace

Status MaxPoolKernel(KernelContext& ctx) {
  PoolParams params;
  params.kind = PoolKind::kMax;
  params.storage_order = ctx.node().attr_int("storage_order", 0);
  if (params.storage_order != 0 && params.storage_order != 1) {
    return ctx.node().Invalid("attribute 'storage_order' is ", params.storage_order,
                              "; expected 0 or 1");
  }
  return RunWindowPool(ctx, params, /*allow_ceil_mode=*/true);
}

Status AveragePoolKernel(KernelContext& ctx) {
  PoolParams params;
  params.kind = PoolKind::kAverage;
  params.count_include_pad = ctx.node().attr_int("count_include_pad", 0) != 0;
  return RunWindowPool(ctx, params, /*allow_ceil_mode=*/true);
}

Status LpPoolKernel(KernelContext& ctx) {
  PoolParams params;
  params.kind = PoolKind::kLp;
  params.p = ReadP(ctx.node());
  if (!(params.p > 0)) return ctx.node().Invalid("attribute 'p' is ", params.p, "; expected > 0");
  return RunWindowPool(ctx, params, /*allow_ceil_mode=*/true);
}

Status GlobalAveragePoolKernel(KernelContext& ctx) {
  return RunGlobalPool(ctx, GlobalKind::kAverage);
}
Status GlobalMaxPoolKernel(KernelContext& ctx) {
  return RunGlobalPool(ctx, GlobalKind::kMax);
}
Status GlobalLpPoolKernel(KernelContext& ctx) {
  return RunGlobalPool(ctx, GlobalKind::kLp);
}

Status MaxUnpoolKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  ONYX_RETURN_IF_ERROR(CheckPoolInput(node, x));
  if (ind.dtype() != DType::kInt64 || ind.shape() != x.shape()) {
    return node.Invalid("input 1 '", node.node().inputs[1], "' is ", DTypeName(ind.dtype()),
                        ShapeToString(ind.shape()), "; expected int64 with the shape of input 0 ",
                        ShapeToString(x.shape()));
  }
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, KernelShape(node));
  const size_t rank = x.rank() - 2;
  if (kernel.size() != rank) {
    return node.Invalid("attribute 'kernel_shape' has ", kernel.size(), " values; expected ", rank);
  }
  const std::vector<int64_t> strides = node.attr_ints("strides", std::vector<int64_t>(rank, 1));
  const std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * rank, 0));
  if (strides.size() != rank || pads.size() != 2 * rank) {
    return node.Invalid("attributes 'strides'/'pads' must have ", rank, "/", 2 * rank, " values");
  }
  // The unpooled shape: the input MaxPool would have pooled, (in - 1) * stride + kernel - pads.
  // Hostile strides/pads/kernel may overflow: every step is checked.
  Shape unpooled{x.dim(0), x.dim(1)};
  for (size_t d = 0; d < rank; ++d) {
    int64_t v = 0;
    if (strides[d] < 1 || pads[d] < 0 || pads[rank + d] < 0 ||
        __builtin_mul_overflow(x.dim(d + 2) - 1, strides[d], &v) ||
        __builtin_add_overflow(v, kernel[d], &v) || __builtin_add_overflow(v, -pads[d], &v) ||
        __builtin_add_overflow(v, -pads[rank + d], &v) || v < 0) {
      return node.Invalid("spatial dim ", d, " of size ", x.dim(d + 2), " with kernel ", kernel[d],
                          ", stride ", strides[d], " and pads ", pads[d], "+", pads[rank + d],
                          " gives no valid unpooled size");
    }
    unpooled.push_back(v);
  }
  int64_t unpooled_n = 0;
  if (!CheckedElementCount(unpooled, &unpooled_n)) {
    return node.Invalid("unpooled shape ", ShapeToString(unpooled),
                        " has more elements than 64 bits can count");
  }
  Shape out_shape = unpooled;
  if (ctx.num_inputs() > 2 && ctx.has_input(2)) {
    out_shape = TensorToInts(ctx.input(2));
    if (out_shape.size() != unpooled.size() || out_shape[0] != x.dim(0) ||
        out_shape[1] != x.dim(1)) {
      return node.Invalid("input 2 '", node.node().inputs[2], "' (output_shape) is ",
                          ShapeToString(out_shape), "; expected ", x.rank(), " dims starting with ",
                          x.dim(0), ",", x.dim(1));
    }
    for (int64_t d : out_shape) {
      if (d < 0) return node.Invalid("output_shape ", ShapeToString(out_shape), " is negative");
    }
  }
  // Indices are flat positions in the unpooled tensor, as MaxPool reports them (plane offset
  // included). An explicit output_shape only pads the result at the end of each dim: the
  // unpooled tensor sits at its origin (the ONNX reference implementation's rule). Each value is
  // written straight to its place in Y: no scratch of the unpooled size, which hostile
  // attributes can make far larger than Y.
  const size_t elem = DTypeSize(x.dtype());
  ONYX_ASSIGN_OR_RETURN(Tensor y, NewOutput(ctx, 0, x.dtype(), out_shape));
  std::memset(y.raw_data(), 0, y.nbytes());
  if (x.numel() == 0) return Status::Ok();
  if (unpooled_n == 0) {
    return node.Fail("input 1 '", node.node().inputs[1], "' holds indices but the unpooled shape ",
                     ShapeToString(unpooled), " is empty");
  }
  const std::vector<int64_t> out_strides = ContiguousStrides(out_shape);
  const std::vector<int64_t> un_strides = ContiguousStrides(unpooled);  // fits: unpooled_n > 0
  const int64_t* idx = ind.data<int64_t>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (idx[i] < 0 || idx[i] >= unpooled_n) {
      return node.Fail("input 1 '", node.node().inputs[1], "' holds index ", idx[i],
                       " outside the unpooled shape ", ShapeToString(unpooled));
    }
    int64_t target = 0;
    bool inside = true;
    for (size_t d = 0; d < unpooled.size(); ++d) {
      const int64_t c = (idx[i] / un_strides[d]) % unpooled[d];
      if (c >= out_shape[d]) inside = false;
      target += c * out_strides[d];
    }
    if (inside) {
      std::memcpy(static_cast<char*>(y.raw_data()) + target * elem,
                  static_cast<const char*>(x.raw_data()) + i * elem, elem);
    }
  }
  return Status::Ok();
}

}  // namespace onyx::kernels
