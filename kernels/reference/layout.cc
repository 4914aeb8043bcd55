// Reference kernels of the channels-last ops: direct loops over NHWC storage.
#include "kernels/reference/layout.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/op_helpers.h"
#include "kernels/reference/conv_pool.h"
#include "kernels/reference/fused.h"
#include "kernels/reference/normalization.h"
#include "kernels/substitute_context.h"

namespace onyx::kernels {
namespace {

// Logical (N, C, spatial...) dims of a channels-last stored shape.
std::vector<int64_t> Logical(const Shape& s) {
  std::vector<int64_t> l = {s[0], s.back()};
  l.insert(l.end(), s.begin() + 1, s.end() - 1);
  return l;
}

Shape Stored(int64_t n, int64_t c, const std::vector<int64_t>& spatial) {
  Shape s = {n};
  s.insert(s.end(), spatial.begin(), spatial.end());
  s.push_back(c);
  return s;
}

// Visits every output position (flattened over the spatial dims) with its multi-index.
template <typename Fn>
void ForEachPosition(const std::vector<int64_t>& dims, Fn fn) {
  std::vector<int64_t> idx(dims.size(), 0);
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  for (int64_t p = 0; p < total; ++p) {
    fn(p, idx);
    for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
}

// Offset of spatial position `pos` in a channels-last plane of `dims`, or -1 when outside.
int64_t SpatialOffset(const std::vector<int64_t>& pos, const std::vector<int64_t>& dims) {
  int64_t off = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (pos[i] < 0 || pos[i] >= dims[i]) return -1;
    off = off * dims[i] + pos[i];
  }
  return off;
}

Status CheckChannelsLast(const NodeView& node, const Tensor& x) {
  if (x.dtype() != DType::kFloat || x.rank() < 3)
    return node.Invalid("input 0 must be a float32 channels-last tensor of rank >= 3");
  return Status::Ok();
}

// `x` with its dims reordered by `perm` (stored dim i of the result is dim perm[i] of x).
Tensor PermuteDims(const Tensor& x, const std::vector<int64_t>& perm) {
  const Shape& s = x.shape();
  const size_t r = s.size(), es = DTypeSize(x.dtype());
  Shape os(r);
  for (size_t i = 0; i < r; ++i) os[i] = s[perm[i]];
  std::vector<int64_t> in_strides(r, 1);
  for (size_t i = r - 1; i > 0; --i) in_strides[i - 1] = in_strides[i] * s[i];
  Tensor o = Tensor::Allocate(x.dtype(), os);
  const auto* src = static_cast<const uint8_t*>(x.raw_data());
  auto* dst = static_cast<uint8_t*>(o.raw_data());
  ForEachPosition(std::vector<int64_t>(os.begin(), os.end()),
                  [&](int64_t k, const std::vector<int64_t>& idx) {
                    int64_t from = 0;
                    for (size_t i = 0; i < r; ++i) from += idx[i] * in_strides[perm[i]];
                    std::copy(src + from * es, src + (from + 1) * es, dst + k * es);
                  });
  return o;
}

// The permutations between [N, C, spatial...] and [N, spatial..., C] of rank r.
std::vector<int64_t> ToChannelsFirst(size_t r) {
  std::vector<int64_t> p = {0, static_cast<int64_t>(r) - 1};
  for (size_t i = 1; i + 1 < r; ++i) p.push_back(static_cast<int64_t>(i));
  return p;
}
std::vector<int64_t> ToChannelsLast(size_t r) {
  std::vector<int64_t> p = {0};
  for (size_t i = 2; i < r; ++i) p.push_back(static_cast<int64_t>(i));
  p.push_back(1);
  return p;
}

}  // namespace

Status NhwcQLinearConvKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 3)
    return ctx.node().Invalid("input 0 must be a channels-last tensor of rank >= 3");
  SubstituteContext inner(ctx.node(), Value(PermuteDims(x, ToChannelsFirst(x.rank()))), &ctx);
  ONYX_RETURN_IF_ERROR(QLinearConvKernel(inner));
  const Tensor y = PermuteDims(inner.output(), ToChannelsLast(x.rank()));
  Tensor out = ctx.Output(0, y.dtype(), y.shape());
  std::copy(static_cast<const uint8_t*>(y.raw_data()),
            static_cast<const uint8_t*>(y.raw_data()) + y.nbytes(),
            static_cast<uint8_t*>(out.raw_data()));
  return Status::Ok();
}

Status NhwcConvKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  ONYX_RETURN_IF_ERROR(CheckChannelsLast(node, x));
  const std::vector<int64_t> xl = Logical(x.shape());
  const int64_t n = xl[0], c = xl[1], group = node.attr_int("group", 1);
  if (w.dtype() != DType::kFloat || w.rank() != x.rank() || group < 1 || w.dim(0) % group != 0 ||
      w.dim(1) * group != c)
    return node.Invalid("input 1 (W) shape does not match input 0 (X) and group");
  const int64_t m = w.dim(0), cg = c / group, mg = m / group;
  std::vector<int64_t> in(xl.begin() + 2, xl.end());
  std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  ONYX_ASSIGN_OR_RETURN(WindowGeometry g, ResolveWindow(node, in, kernel, false));
  const float* b = ctx.has_input(2) ? ctx.input(2).data<float>() : nullptr;
  if (b && ctx.input(2).numel() != m) return node.Invalid("input 2 (B) must have M elements");
  const Shape ys = Stored(n, m, g.out);
  const float* z = ctx.has_input(3) ? ctx.input(3).data<float>() : nullptr;
  if (z && ctx.input(3).shape() != ys) return node.Invalid("input 3 (Z) must have Y's shape");
  // The activation of every com.onyx fused op: one parser (an unknown name is an error) and one
  // definition of each function (Softplus without overflow).
  ONYX_ASSIGN_OR_RETURN(const FusedActivation act, ParseFusedActivation(node));
  Tensor y = ctx.Output(0, DType::kFloat, ys);
  const float* xd = x.data<float>();
  const float* wd = w.data<float>();
  float* yd = y.data<float>();
  const int64_t in_plane = g.InSize(), out_plane = g.OutSize(), taps = g.KernelSize();
  std::vector<int64_t> pos(g.rank());
  for (int64_t b_i = 0; b_i < n; ++b_i) {
    ForEachPosition(g.out, [&](int64_t p, const std::vector<int64_t>& o) {
      for (int64_t oc = 0; oc < m; ++oc) {
        const int64_t grp = oc / mg;
        double acc = b ? b[oc] : 0.0;
        ForEachPosition(g.kernel, [&](int64_t t, const std::vector<int64_t>& k) {
          for (size_t i = 0; i < g.rank(); ++i)
            pos[i] = o[i] * g.strides[i] - g.pad_begin[i] + k[i] * g.dilations[i];
          const int64_t off = SpatialOffset(pos, g.in);
          if (off < 0) return;
          const float* xp = xd + (b_i * in_plane + off) * c + grp * cg;
          for (int64_t ic = 0; ic < cg; ++ic) acc += xp[ic] * wd[(oc * cg + ic) * taps + t];
        });
        const int64_t yi = (b_i * out_plane + p) * m + oc;
        float v = static_cast<float>(acc);
        if (z) v += z[yi];
        yd[yi] = v;
      }
    });
  }
  ApplyFusedActivation(act, yd, nullptr, y.numel(), 1);
  return Status::Ok();
}

namespace {

// NhwcMaxPool of 8-bit values (quantized models): the maximum over the window, as MaxPool's
// reference computes it on integers (padding never wins).
template <typename T>
void MaxPool8Bit(const T* xd, T* yd, int64_t n, int64_t c, const WindowGeometry& g) {
  std::vector<int64_t> pos(g.rank());
  for (int64_t b = 0; b < n; ++b)
    ForEachPosition(g.out, [&](int64_t p, const std::vector<int64_t>& o) {
      for (int64_t ch = 0; ch < c; ++ch) {
        int best = std::numeric_limits<int>::min();
        ForEachPosition(g.kernel, [&](int64_t, const std::vector<int64_t>& k) {
          for (size_t i = 0; i < g.rank(); ++i)
            pos[i] = o[i] * g.strides[i] - g.pad_begin[i] + k[i] * g.dilations[i];
          const int64_t off = SpatialOffset(pos, g.in);
          if (off >= 0) best = std::max<int>(best, xd[(b * g.InSize() + off) * c + ch]);
        });
        yd[(b * g.OutSize() + p) * c + ch] = static_cast<T>(
            best == std::numeric_limits<int>::min() ? std::numeric_limits<T>::lowest() : best);
      }
    });
}

Status NhwcMaxPool8Bit(KernelContext& ctx, const Tensor& x) {
  const std::vector<int64_t> xl = Logical(x.shape());
  std::vector<int64_t> in(xl.begin() + 2, xl.end());
  ONYX_ASSIGN_OR_RETURN(WindowGeometry g,
                        ResolveWindow(ctx.node(), in, ctx.node().attr_ints("kernel_shape"), true));
  Tensor y = ctx.Output(0, x.dtype(), Stored(xl[0], xl[1], g.out));
  if (x.dtype() == DType::kUInt8)
    MaxPool8Bit(x.data<uint8_t>(), y.data<uint8_t>(), xl[0], xl[1], g);
  else
    MaxPool8Bit(x.data<int8_t>(), y.data<int8_t>(), xl[0], xl[1], g);
  return Status::Ok();
}

Status NhwcPool(KernelContext& ctx, bool max) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const bool int8 = Is8BitInt(x.dtype());
  if (max && int8 && x.rank() >= 3) return NhwcMaxPool8Bit(ctx, x);
  ONYX_RETURN_IF_ERROR(CheckChannelsLast(node, x));
  const std::vector<int64_t> xl = Logical(x.shape());
  const int64_t n = xl[0], c = xl[1];
  std::vector<int64_t> in(xl.begin() + 2, xl.end());
  ONYX_ASSIGN_OR_RETURN(WindowGeometry g,
                        ResolveWindow(node, in, node.attr_ints("kernel_shape"), true));
  const bool include_pad = node.attr_int("count_include_pad", 0) != 0;
  Tensor y = ctx.Output(0, DType::kFloat, Stored(n, c, g.out));
  const float* xd = x.data<float>();
  float* yd = y.data<float>();
  std::vector<int64_t> pos(g.rank());
  for (int64_t b = 0; b < n; ++b) {
    ForEachPosition(g.out, [&](int64_t p, const std::vector<int64_t>& o) {
      for (int64_t ch = 0; ch < c; ++ch) {
        double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
        int64_t count = 0;
        ForEachPosition(g.kernel, [&](int64_t, const std::vector<int64_t>& k) {
          bool in_padded = true;  // inside input + explicit pads (what count_include_pad counts)
          for (size_t i = 0; i < g.rank(); ++i) {
            pos[i] = o[i] * g.strides[i] - g.pad_begin[i] + k[i] * g.dilations[i];
            in_padded = in_padded && pos[i] < g.in[i] + g.pad_end[i];
          }
          const int64_t off = SpatialOffset(pos, g.in);
          if (off < 0) {
            if (include_pad && in_padded) ++count;
            return;
          }
          const float v = xd[(b * g.InSize() + off) * c + ch];
          if (max) {
            if (v > acc || std::isnan(v)) acc = v;
          } else {
            acc += v;
          }
          ++count;
        });
        yd[(b * g.OutSize() + p) * c + ch] =
            static_cast<float>(max ? acc : (count ? acc / count : 0.0));
      }
    });
  }
  return Status::Ok();
}

}  // namespace

Status NhwcMaxPoolKernel(KernelContext& ctx) {
  return NhwcPool(ctx, true);
}
Status NhwcAveragePoolKernel(KernelContext& ctx) {
  return NhwcPool(ctx, false);
}

Status NhwcChannelAffineKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  ONYX_ASSIGN_OR_RETURN(const FusedActivation act, ParseFusedActivation(node));
  if (ctx.num_inputs() < 3 || !ctx.has_input(1) || !ctx.has_input(2))
    return node.Invalid("needs inputs X, Scale and Shift");
  const Tensor& x = ctx.input(0);
  ONYX_RETURN_IF_ERROR(CheckChannelsLast(node, x));
  const int64_t c = x.dim(x.rank() - 1);
  for (int i = 1; i <= 2; ++i)
    if (ctx.input(i).dtype() != DType::kFloat || ctx.input(i).numel() != c)
      return node.Invalid("input ", i, " must be float32 with ", c, " elements (the channels)");
  const float* s = ctx.input(1).data<float>();
  const float* t = ctx.input(2).data<float>();
  Tensor y = ctx.Output(0, DType::kFloat, x.shape());
  const float* xd = x.data<float>();
  float* yd = y.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) yd[i] = xd[i] * s[i % c] + t[i % c];
  ApplyFusedActivation(act, yd, nullptr, y.numel(), 1);
  return Status::Ok();
}

Status NhwcLrnKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  ONYX_RETURN_IF_ERROR(CheckChannelsLast(node, x));
  ONYX_ASSIGN_OR_RETURN(const int64_t size, node.RequiredInt("size"));
  if (size <= 0) return node.Invalid("attribute 'size' must be > 0, got ", size);
  const int64_t c = x.dim(x.rank() - 1);
  Tensor y = ctx.Output(0, DType::kFloat, x.shape());
  // Stored channels-last, every pixel is a batch entry of C channels with nothing inside.
  reference::Lrn(x.data<float>(), y.data<float>(), c == 0 ? 0 : x.numel() / c, c, 1, size,
                 node.attr_float("alpha", 1e-4f), node.attr_float("beta", 0.75f),
                 node.attr_float("bias", 1.0f));
  return Status::Ok();
}

}  // namespace onyx::kernels
