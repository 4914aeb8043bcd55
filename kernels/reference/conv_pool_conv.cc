// Convolutions: Conv and ConvTranspose (float, double, float16, bfloat16), ConvInteger and
// QLinearConv. Conv lowers each (image, group, block of output rows) to im2col + the shared GEMM;
// ConvTranspose is GEMM + col2im. float16/bfloat16 compute in float.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/element_types.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/conv_pool.h"
#include "kernels/reference/gemm_core.h"

namespace onyx::kernels {
namespace {

// One im2col block holds at most this many bytes (it stays in L2 while the GEMM streams it) but
// at least kMinBlockColumns output positions (narrower blocks make the GEMM inefficient).
constexpr int64_t kIm2ColBlockBytes = int64_t{1} << 20;
constexpr int64_t kMinBlockColumns = 256;

std::vector<int64_t> SpatialDims(const Shape& s) {
  return Shape(s.begin() + 2, s.end());
}

// Shapes of a (possibly grouped) convolution after validation.
struct ConvShapes {
  int64_t batch = 0;         // N
  int64_t in_channels = 0;   // C
  int64_t out_channels = 0;  // M
  int64_t group = 1;
  WindowGeometry window;
};

// Validates X [N, C, D1..Dn] and W [M, C/group, k1..kn] (Conv, ConvInteger, QLinearConv: x_index
// and w_index name the inputs) and resolves the window.
StatusOr<ConvShapes> ResolveConv(const NodeView& node, const Tensor& x, const Tensor& w,
                                 int x_index, int w_index) {
  const auto& in_names = node.node().inputs;
  if (x.rank() < 3) {
    return node.Invalid("input ", x_index, " '", in_names[x_index], "' has shape ",
                        ShapeToString(x.shape()), "; expected [N, C, spatial...] (rank >= 3)");
  }
  if (w.rank() != x.rank()) {
    return node.Invalid("input ", w_index, " '", in_names[w_index], "' has shape ",
                        ShapeToString(w.shape()), "; expected rank ", x.rank(), " to match input ",
                        x_index, " ", ShapeToString(x.shape()));
  }
  ConvShapes s;
  s.batch = x.dim(0);
  s.in_channels = x.dim(1);
  s.out_channels = w.dim(0);
  s.group = node.attr_int("group", 1);
  if (s.group < 1) return node.Invalid("attribute 'group' is ", s.group, "; expected >= 1");
  // Divide rather than multiply: a hostile group times dim 1 may overflow int64.
  if (s.in_channels % s.group != 0 || w.dim(1) != s.in_channels / s.group ||
      s.out_channels % s.group != 0) {
    return node.Invalid("input ", w_index, " '", in_names[w_index], "' has shape ",
                        ShapeToString(w.shape()), "; with group ", s.group,
                        " expected dim 1 = ", s.in_channels / s.group, " (input ", x_index, " has ",
                        s.in_channels, " channels) and dim 0 divisible by ", s.group);
  }
  const std::vector<int64_t> kernel = SpatialDims(w.shape());
  if (node.has_attr("kernel_shape") && node.attr_ints("kernel_shape") != kernel) {
    return node.Invalid("attribute 'kernel_shape' does not match input ", w_index, " '",
                        in_names[w_index], "' of shape ", ShapeToString(w.shape()));
  }
  ONYX_ASSIGN_OR_RETURN(s.window, ResolveWindow(node, SpatialDims(x.shape()), kernel, false));
  return s;
}

Shape OutputShape(int64_t batch, int64_t channels, const std::vector<int64_t>& spatial) {
  Shape out{batch, channels};
  out.insert(out.end(), spatial.begin(), spatial.end());
  return out;
}

bool IsPointwise(const WindowGeometry& g) {
  for (size_t d = 0; d < g.rank(); ++d) {
    if (g.kernel[d] != 1 || g.strides[d] != 1 || g.pad_begin[d] != 0 || g.pad_end[d] != 0)
      return false;
  }
  return true;
}

// Output positions per im2col block: whole output rows, within the byte budget.
int64_t BlockColumns(const WindowGeometry& g, int64_t k, size_t elem_size) {
  const int64_t row = g.out.back();
  const int64_t total = g.OutSize();
  if (row == 0) return std::max<int64_t>(total, 1);
  const int64_t by_bytes = kIm2ColBlockBytes / std::max<int64_t>(1, k * row * elem_size);
  const int64_t by_width = (kMinBlockColumns + row - 1) / row;
  const int64_t rows = std::max<int64_t>(1, std::max(by_bytes, by_width));
  return std::min(total, rows * row);
}

// Depthwise 2-D convolution (group == C == M: one filter per channel), computed directly: for
// each tap, an axpy of one input row into one output row. Avoids the im2col copy that would
// dominate such a cheap convolution.
template <typename T>
void DepthwiseConv2D(const T* x, const T* w, const T* b, T* y, const ConvShapes& s) {
  const WindowGeometry& g = s.window;
  const int64_t in_h = g.in[0], in_w = g.in[1], out_h = g.out[0], out_w = g.out[1];
  const int64_t k_h = g.kernel[0], k_w = g.kernel[1];
  const int64_t stride_w = g.strides[1];
  tbb::parallel_for(int64_t{0}, s.batch * s.in_channels, [&](int64_t plane) {
    const int64_t c = plane % s.in_channels;
    const T* src = x + plane * in_h * in_w;
    const T* filter = w + c * k_h * k_w;
    T* dst = y + plane * out_h * out_w;
    std::fill(dst, dst + out_h * out_w, b ? b[c] : T(0));
    for (int64_t kw = 0; kw < k_w; ++kw) {
      // Output columns [lo, hi) read input column ow * stride + offset inside [0, in_w).
      const int64_t offset = kw * g.dilations[1] - g.pad_begin[1];
      int64_t lo = 0;
      while (lo < out_w && lo * stride_w + offset < 0) ++lo;
      int64_t hi = out_w;
      while (hi > lo && (hi - 1) * stride_w + offset >= in_w) --hi;
      for (int64_t oh = 0; oh < out_h; ++oh) {
        T* out_row = dst + oh * out_w;
        for (int64_t kh = 0; kh < k_h; ++kh) {
          const int64_t ih = oh * g.strides[0] - g.pad_begin[0] + kh * g.dilations[0];
          if (ih < 0 || ih >= in_h) continue;
          const T wv = filter[kh * k_w + kw];
          const T* in_row = src + ih * in_w + offset;
          if (stride_w == 1) {
            for (int64_t ow = lo; ow < hi; ++ow) out_row[ow] += wv * in_row[ow];
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) out_row[ow] += wv * in_row[ow * stride_w];
          }
        }
      }
    }
  });
}

// Y = conv(X, W) + B for T = float or double. x: [N, C, in...], w: [M, C/group, k...], b: [M] or
// null, y: [N, M, out...]. Parallel over (image, group, block of output rows); each block runs
// im2col into a private buffer (skipped for pointwise convolutions) and one GEMM.
template <typename T>
void ConvCore(const T* x, const T* w, const T* b, T* y, const ConvShapes& s) {
  const WindowGeometry& g = s.window;
  const int64_t cg = s.in_channels / s.group;
  const int64_t mg = s.out_channels / s.group;
  const int64_t k = cg * g.KernelSize();
  const int64_t in_size = g.InSize();
  const int64_t out_size = g.OutSize();
  if (out_size == 0 || s.batch == 0 || mg == 0) return;
  if (g.rank() == 2 && s.group == s.in_channels && s.group == s.out_channels) {
    DepthwiseConv2D(x, w, b, y, s);
    return;
  }
  const bool pointwise = IsPointwise(g);
  const int64_t block = BlockColumns(g, k, sizeof(T));
  const int64_t blocks = (out_size + block - 1) / block;
  const int64_t tasks = s.batch * s.group * blocks;
  tbb::parallel_for(
      tbb::blocked_range<int64_t>(0, tasks, 1), [&](const tbb::blocked_range<int64_t>& r) {
        std::vector<T> col;
        for (int64_t t = r.begin(); t < r.end(); ++t) {
          const int64_t n = t / (s.group * blocks);
          const int64_t grp = (t / blocks) % s.group;
          const int64_t s0 = (t % blocks) * block;
          const int64_t s1 = std::min(out_size, s0 + block);
          const T* x_ng = x + (n * s.in_channels + grp * cg) * in_size;
          T* y_blk = y + (n * s.out_channels + grp * mg) * out_size + s0;
          T beta = T(0);
          if (b) {
            // The GEMM accumulates onto the bias (beta = 1) instead of a second pass over Y.
            for (int64_t m = 0; m < mg; ++m)
              std::fill(y_blk + m * out_size, y_blk + m * out_size + (s1 - s0), b[grp * mg + m]);
            beta = T(1);
          }
          const T* cols = x_ng + s0;
          int64_t ldb = in_size;
          if (!pointwise) {
            col.resize(static_cast<size_t>(k * (s1 - s0)));
            Im2Col<T>(x_ng, cg, g, s0, s1, T(0), col.data());
            cols = col.data();
            ldb = s1 - s0;
          }
          Gemm<T>(false, false, mg, s1 - s0, k, T(1), w + grp * mg * k, k, cols, ldb, beta, y_blk,
                  out_size);
        }
      });
}

// ConvTranspose for T = float or double. x: [N, C, in...], w: [C, M/group, k...], y: [N, M,
// out...]. Per (image, group): cols = W_g^T * X_g (GEMM), then col2im scatters every column
// entry into the output position its tap lands on.
template <typename T>
void ConvTransposeCore(const T* x, const T* w, const T* b, T* y, int64_t batch, int64_t in_c,
                       int64_t out_c, int64_t group, const WindowGeometry& g) {
  const int64_t cg = in_c / group;
  const int64_t mg = out_c / group;
  const int64_t ksize = g.KernelSize();
  const int64_t k = mg * ksize;  // rows of the column matrix
  const int64_t in_size = g.InSize();
  const int64_t out_size = g.OutSize();
  const size_t rank = g.rank();
  std::vector<T> col(static_cast<size_t>(k * in_size));
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t grp = 0; grp < group; ++grp) {
      const T* x_ng = x + (n * in_c + grp * cg) * in_size;
      T* y_ng = y + (n * out_c + grp * mg) * out_size;
      Gemm<T>(true, false, k, in_size, cg, T(1), w + grp * cg * k, k, x_ng, in_size, T(0),
              col.data(), in_size);
      // col2im: channels are independent, so they run in parallel.
      tbb::parallel_for(int64_t{0}, mg, [&](int64_t m) {
        T* plane = y_ng + m * out_size;
        std::fill(plane, plane + out_size, b ? b[grp * mg + m] : T(0));
        std::vector<int64_t> tap(rank), pos(rank);
        for (int64_t kk = 0; kk < ksize; ++kk) {
          for (int64_t d = rank - 1, rest = kk; d >= 0; --d) {
            tap[d] = rest % g.kernel[d];
            rest /= g.kernel[d];
          }
          const T* src = col.data() + (m * ksize + kk) * in_size;
          std::fill(pos.begin(), pos.end(), 0);
          for (int64_t i = 0; i < in_size; ++i) {
            int64_t out_index = 0;
            bool inside = true;
            for (size_t d = 0; d < rank; ++d) {
              const int64_t o = pos[d] * g.strides[d] + tap[d] * g.dilations[d] - g.pad_begin[d];
              if (o < 0 || o >= g.out[d]) {
                inside = false;
                break;
              }
              out_index = out_index * g.out[d] + o;
            }
            if (inside) plane[out_index] += src[i];
            for (size_t d = rank; d-- > 0;) {  // odometer over input positions
              if (++pos[d] < g.in[d]) break;
              pos[d] = 0;
            }
          }
        }
      });
    }
  }
}

std::vector<float> ToFloatVector(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i)
    v[i] = static_cast<float>(LoadAsDouble(t.dtype(), t.raw_data(), i));
  return v;
}

// Calls f(x, w, b, y) with typed pointers: directly for float and double, through float copies
// for float16 and bfloat16. Returns false for other types.
template <typename F>
bool WithFloatBuffers(const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y, F&& f) {
  switch (x.dtype()) {
    case DType::kFloat:
      f(x.data<float>(), w.data<float>(), b ? b->data<float>() : nullptr, y.data<float>());
      return true;
    case DType::kDouble:
      f(x.data<double>(), w.data<double>(), b ? b->data<double>() : nullptr, y.data<double>());
      return true;
    case DType::kFloat16:
    case DType::kBFloat16: {
      const std::vector<float> xf = ToFloatVector(x), wf = ToFloatVector(w);
      const std::vector<float> bf = b ? ToFloatVector(*b) : std::vector<float>();
      std::vector<float> yf(static_cast<size_t>(y.numel()));
      f(xf.data(), wf.data(), b ? bf.data() : nullptr, yf.data());
      for (int64_t i = 0; i < y.numel(); ++i) StoreFromDouble(y.dtype(), y.raw_data(), i, yf[i]);
      return true;
    }
    default:
      return false;
  }
}

Status CheckSameType(const NodeView& node, const Tensor& a, int ia, const Tensor& t, int it) {
  if (t.dtype() == a.dtype()) return Status::Ok();
  return node.Invalid("input ", it, " '", node.node().inputs[it], "' has type ",
                      DTypeName(t.dtype()), "; expected ", DTypeName(a.dtype()), " like input ", ia,
                      " '", node.node().inputs[ia], "'");
}

Status CheckBias(const NodeView& node, const Tensor& b, int index, int64_t channels) {
  if (b.rank() == 1 && b.dim(0) == channels) return Status::Ok();
  return node.Invalid("input ", index, " '", node.node().inputs[index], "' has shape ",
                      ShapeToString(b.shape()), "; expected [", channels, "]");
}

// Reads a zero point / scale that is a scalar or a 1-D tensor of `channels` values; returns one
// value per channel.
// Zero points must be integers (a float tensor of NaN or 1e30 would make the int32 conversion
// undefined); scales may be any float.
template <typename V>
StatusOr<std::vector<V>> PerChannel(const NodeView& node, const Tensor& t, int index,
                                    int64_t channels) {
  if constexpr (std::is_integral_v<V>) {
    if (t.dtype() != DType::kUInt8 && t.dtype() != DType::kInt8 && t.dtype() != DType::kInt32) {
      return node.Invalid("input ", index, " '", node.node().inputs[index], "' has type ",
                          DTypeName(t.dtype()), "; expected a uint8, int8 or int32 zero point");
    }
  }
  if (t.numel() == 1)
    return std::vector<V>(static_cast<size_t>(channels), static_cast<V>(ElementAsDouble(t, 0)));
  if (t.rank() == 1 && t.dim(0) == channels) {
    std::vector<V> v(static_cast<size_t>(channels));
    for (int64_t i = 0; i < channels; ++i) v[i] = static_cast<V>(ElementAsDouble(t, i));
    return v;
  }
  return node.Invalid("input ", index, " '", node.node().inputs[index], "' has shape ",
                      ShapeToString(t.shape()), "; expected a scalar or [", channels, "]");
}

// Integer convolution: acc[n, m, out] = sum (x - x_zero) * (w - w_zero[m]) in int32.
// xq/wq are uint8 or int8 tensors; returns the int32 accumulators (no bias).
void IntegerConv(const Tensor& xq, int32_t x_zero, const Tensor& wq,
                 const std::vector<int32_t>& w_zero, const ConvShapes& s, int32_t* acc) {
  const WindowGeometry& g = s.window;
  const int64_t cg = s.in_channels / s.group;
  const int64_t mg = s.out_channels / s.group;
  const int64_t k = cg * g.KernelSize();
  const int64_t in_size = g.InSize();
  const int64_t out_size = g.OutSize();
  std::vector<int32_t> x(static_cast<size_t>(xq.numel())), w(static_cast<size_t>(wq.numel()));
  for (int64_t i = 0; i < xq.numel(); ++i)
    x[i] = static_cast<int32_t>(ElementAsDouble(xq, i)) - x_zero;
  for (int64_t i = 0; i < wq.numel(); ++i)
    w[i] = static_cast<int32_t>(ElementAsDouble(wq, i)) - w_zero[i / k];
  std::vector<int32_t> col(static_cast<size_t>(k * out_size));
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t grp = 0; grp < s.group; ++grp) {
      // Padding is zero after the zero-point shift, as the spec's "pad with x_zero_point" means.
      Im2Col<int32_t>(x.data() + (n * s.in_channels + grp * cg) * in_size, cg, g, 0, out_size, 0,
                      col.data());
      int32_t* y = acc + (n * s.out_channels + grp * mg) * out_size;
      for (int64_t m = 0; m < mg; ++m) {
        int32_t* yrow = y + m * out_size;
        std::fill(yrow, yrow + out_size, 0);
        const int32_t* wrow = w.data() + (grp * mg + m) * k;
        for (int64_t p = 0; p < k; ++p) {
          const int32_t wv = wrow[p];
          const int32_t* crow = col.data() + p * out_size;
          for (int64_t j = 0; j < out_size; ++j) yrow[j] += wv * crow[j];
        }
      }
    }
  }
}

// DeformConv (2-D): like Conv, but tap (kh, kw) of output (i, j) samples X bilinearly at
// (i * stride_h - pad_h + kh * dilation_h + offset_h, ...) and is scaled by the mask. The sampled
// columns then go through the same GEMM as Conv. x: [N, C, H, W]; offset: [N, og * kh * kw * 2,
// oh, ow] ordered (offset group, kh, kw, {h, w}); mask: [N, og * kh * kw, oh, ow] or null.
template <typename T>
void DeformConvCore(const T* x, const T* w, const T* b, const T* offset, const T* mask, T* y,
                    const ConvShapes& s, int64_t offset_groups) {
  const WindowGeometry& g = s.window;
  const int64_t height = g.in[0], width = g.in[1];
  const int64_t oh = g.out[0], ow = g.out[1];
  const int64_t kh_n = g.kernel[0], kw_n = g.kernel[1];
  const int64_t ksize = kh_n * kw_n;
  const int64_t out_size = oh * ow;
  const int64_t cg = s.in_channels / s.group;
  const int64_t mg = s.out_channels / s.group;
  const int64_t k = cg * ksize;
  const int64_t channels_per_og = s.in_channels / offset_groups;
  std::vector<T> col(static_cast<size_t>(k * out_size));
  // Bilinear sample of a plane with zeros outside (GridSample, align_corners=1, zeros padding).
  auto sample = [&](const T* plane, double yy, double xx) -> double {
    // Outside (-1, size) every tap is padding; checking first also keeps a huge or NaN offset
    // from reaching the integer conversion below (undefined behaviour).
    if (!(yy > -1 && yy < height && xx > -1 && xx < width)) return 0;
    const double y0f = std::floor(yy), x0f = std::floor(xx);
    const int64_t y0 = static_cast<int64_t>(y0f), x0 = static_cast<int64_t>(x0f);
    const double ly = yy - y0f, lx = xx - x0f;
    double v = 0;
    for (int dy = 0; dy < 2; ++dy)
      for (int dx = 0; dx < 2; ++dx) {
        const int64_t yi = y0 + dy, xi = x0 + dx;
        if (yi < 0 || yi >= height || xi < 0 || xi >= width) continue;
        const double wgt = (dy ? ly : 1 - ly) * (dx ? lx : 1 - lx);
        v += wgt * static_cast<double>(plane[yi * width + xi]);
      }
    return v;
  };
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t grp = 0; grp < s.group; ++grp) {
      tbb::parallel_for(int64_t{0}, cg, [&](int64_t ci) {
        const int64_t c = grp * cg + ci;
        const int64_t og = c / channels_per_og;
        const T* plane = x + (n * s.in_channels + c) * height * width;
        for (int64_t kh = 0; kh < kh_n; ++kh)
          for (int64_t kw = 0; kw < kw_n; ++kw) {
            const int64_t tap = kh * kw_n + kw;
            const T* off_h = offset + ((n * offset_groups + og) * ksize * 2 + tap * 2) * out_size;
            const T* off_w = off_h + out_size;
            const T* m =
                mask ? mask + ((n * offset_groups + og) * ksize + tap) * out_size : nullptr;
            T* row = col.data() + (ci * ksize + tap) * out_size;
            for (int64_t i = 0; i < oh; ++i)
              for (int64_t j = 0; j < ow; ++j) {
                const int64_t p = i * ow + j;
                const double yy =
                    static_cast<double>(i * g.strides[0] - g.pad_begin[0] + kh * g.dilations[0]) +
                    static_cast<double>(off_h[p]);
                const double xx =
                    static_cast<double>(j * g.strides[1] - g.pad_begin[1] + kw * g.dilations[1]) +
                    static_cast<double>(off_w[p]);
                double v = sample(plane, yy, xx);
                if (m) v *= static_cast<double>(m[p]);
                row[p] = static_cast<T>(v);
              }
          }
      });
      T* y_ng = y + (n * s.out_channels + grp * mg) * out_size;
      T beta = T(0);
      if (b) {
        for (int64_t mm = 0; mm < mg; ++mm)
          std::fill(y_ng + mm * out_size, y_ng + (mm + 1) * out_size, b[grp * mg + mm]);
        beta = T(1);
      }
      Gemm<T>(false, false, mg, out_size, k, T(1), w + grp * mg * k, k, col.data(), out_size, beta,
              y_ng, out_size);
    }
  }
}

bool IsInt8Or8(DType t) {
  return t == DType::kUInt8 || t == DType::kInt8;
}

Status Expect8Bit(const NodeView& node, const Tensor& t, int index) {
  if (IsInt8Or8(t.dtype())) return Status::Ok();
  return node.NotSupported("input ", index, " '", node.node().inputs[index], "' has type ",
                           DTypeName(t.dtype()), "; expected uint8 or int8");
}

}  // namespace

Status ConvKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  ONYX_RETURN_IF_ERROR(CheckSameType(node, x, 0, w, 1));
  ONYX_ASSIGN_OR_RETURN(ConvShapes s, ResolveConv(node, x, w, 0, 1));
  const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (b) {
    ONYX_RETURN_IF_ERROR(CheckSameType(node, x, 0, *b, 2));
    ONYX_RETURN_IF_ERROR(CheckBias(node, *b, 2, s.out_channels));
  }
  Tensor y = ctx.Output(0, x.dtype(), OutputShape(s.batch, s.out_channels, s.window.out));
  const bool ok =
      WithFloatBuffers(x, w, b, y, [&](const auto* xp, const auto* wp, const auto* bp, auto* yp) {
        ConvCore(xp, wp, bp, yp, s);
      });
  if (!ok)
    return node.NotSupported("input 0 '", node.node().inputs[0], "' has type ",
                             DTypeName(x.dtype()));
  return Status::Ok();
}

Status ConvTransposeKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const auto& names = node.node().inputs;
  ONYX_RETURN_IF_ERROR(CheckSameType(node, x, 0, w, 1));
  if (x.rank() < 3 || w.rank() != x.rank()) {
    return node.Invalid("input 0 '", names[0], "' has shape ", ShapeToString(x.shape()),
                        " and input 1 '", names[1], "' has shape ", ShapeToString(w.shape()),
                        "; expected [N, C, spatial...] and [C, M/group, kernel...]");
  }
  const int64_t group = node.attr_int("group", 1);
  if (group < 1 || x.dim(1) != w.dim(0) || x.dim(1) % group != 0) {
    return node.Invalid("input 1 '", names[1], "' has shape ", ShapeToString(w.shape()),
                        "; expected dim 0 = ", x.dim(1),
                        " (the channels of input 0) divisible by group ", group);
  }
  const std::vector<int64_t> kernel = SpatialDims(w.shape());
  if (node.has_attr("kernel_shape") && node.attr_ints("kernel_shape") != kernel) {
    return node.Invalid("attribute 'kernel_shape' does not match input 1 '", names[1],
                        "' of shape ", ShapeToString(w.shape()));
  }
  ONYX_ASSIGN_OR_RETURN(WindowGeometry g,
                        ResolveConvTransposeWindow(node, SpatialDims(x.shape()), kernel));
  // group only divides C, and C may be 0: the product may not fit.
  int64_t out_c = 0;
  if (!CheckedMul(w.dim(1), group, &out_c)) {
    return node.Invalid("input 1 '", names[1], "' has shape ", ShapeToString(w.shape()),
                        " and group is ", group, ": M = dim 1 * group does not fit 64 bits");
  }
  const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (b) {
    ONYX_RETURN_IF_ERROR(CheckSameType(node, x, 0, *b, 2));
    ONYX_RETURN_IF_ERROR(CheckBias(node, *b, 2, out_c));
  }
  Tensor y = ctx.Output(0, x.dtype(), OutputShape(x.dim(0), out_c, g.out));
  const bool ok =
      WithFloatBuffers(x, w, b, y, [&](const auto* xp, const auto* wp, const auto* bp, auto* yp) {
        ConvTransposeCore(xp, wp, bp, yp, x.dim(0), x.dim(1), out_c, group, g);
      });
  if (!ok) return node.NotSupported("input 0 '", names[0], "' has type ", DTypeName(x.dtype()));
  return Status::Ok();
}

Status ConvIntegerKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  ONYX_RETURN_IF_ERROR(Expect8Bit(node, x, 0));
  ONYX_RETURN_IF_ERROR(Expect8Bit(node, w, 1));
  ONYX_ASSIGN_OR_RETURN(ConvShapes s, ResolveConv(node, x, w, 0, 1));
  int32_t x_zero = 0;
  if (ctx.has_input(2)) {
    const Tensor& z = ctx.input(2);
    if (z.numel() != 1 || z.dtype() != x.dtype()) {
      return node.Invalid("input 2 '", node.node().inputs[2],
                          "' must be a scalar of input 0's type");
    }
    x_zero = static_cast<int32_t>(ElementAsDouble(z, 0));
  }
  std::vector<int32_t> w_zero(static_cast<size_t>(s.out_channels), 0);
  if (ctx.has_input(3)) {
    ONYX_ASSIGN_OR_RETURN(w_zero, PerChannel<int32_t>(node, ctx.input(3), 3, s.out_channels));
  }
  Tensor y = ctx.Output(0, DType::kInt32, OutputShape(s.batch, s.out_channels, s.window.out));
  IntegerConv(x, x_zero, w, w_zero, s, y.data<int32_t>());
  return Status::Ok();
}

Status QLinearConvKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(3);
  ONYX_RETURN_IF_ERROR(Expect8Bit(node, x, 0));
  ONYX_RETURN_IF_ERROR(Expect8Bit(node, w, 3));
  ONYX_ASSIGN_OR_RETURN(ConvShapes s, ResolveConv(node, x, w, 0, 3));
  const int64_t m = s.out_channels;
  for (int i : {1, 2, 6, 7}) {
    if (ctx.input(i).numel() != 1) {
      return node.Invalid("input ", i, " '", node.node().inputs[i], "' has shape ",
                          ShapeToString(ctx.input(i).shape()), "; expected a scalar");
    }
  }
  // x_zero_point has X's type (a float one could hold NaN, whose int conversion is undefined).
  if (ctx.input(2).dtype() != x.dtype()) {
    return node.Invalid("input 2 '", node.node().inputs[2], "' has type ",
                        DTypeName(ctx.input(2).dtype()), "; expected ", DTypeName(x.dtype()),
                        " like input 0");
  }
  const double x_scale = ElementAsDouble(ctx.input(1), 0);
  const int32_t x_zero = static_cast<int32_t>(ElementAsDouble(ctx.input(2), 0));
  ONYX_ASSIGN_OR_RETURN(std::vector<double> w_scale, PerChannel<double>(node, ctx.input(4), 4, m));
  ONYX_ASSIGN_OR_RETURN(std::vector<int32_t> w_zero, PerChannel<int32_t>(node, ctx.input(5), 5, m));
  const double y_scale = ElementAsDouble(ctx.input(6), 0);
  const Tensor& y_zero_t = ctx.input(7);
  ONYX_RETURN_IF_ERROR(Expect8Bit(node, y_zero_t, 7));
  const double y_zero = ElementAsDouble(y_zero_t, 0);
  std::vector<int32_t> bias(static_cast<size_t>(m), 0);
  if (ctx.has_input(8)) {
    const Tensor& b = ctx.input(8);
    if (b.dtype() != DType::kInt32) {
      return node.Invalid("input 8 '", node.node().inputs[8], "' has type ", DTypeName(b.dtype()),
                          "; expected int32");
    }
    ONYX_RETURN_IF_ERROR(CheckBias(node, b, 8, m));
    std::copy(b.data<int32_t>(), b.data<int32_t>() + m, bias.begin());
  }
  const int64_t out_size = s.window.OutSize();
  std::vector<int32_t> acc(static_cast<size_t>(s.batch * m * out_size));
  IntegerConv(x, x_zero, w, w_zero, s, acc.data());
  const DType out_type = y_zero_t.dtype();
  const double lo = out_type == DType::kInt8 ? -128 : 0;
  const double hi = out_type == DType::kInt8 ? 127 : 255;
  Tensor y = ctx.Output(0, out_type, OutputShape(s.batch, m, s.window.out));
  for (int64_t i = 0; i < static_cast<int64_t>(acc.size()); ++i) {
    const int64_t ch = (i / out_size) % m;
    const double real = static_cast<double>(acc[i] + bias[ch]) * (x_scale * w_scale[ch] / y_scale);
    // Round half to even, then saturate (ONNX QuantizeLinear rounding).
    const double q = std::nearbyint(real) + y_zero;
    StoreFromDouble(out_type, y.raw_data(), i, std::min(hi, std::max(lo, q)));
  }
  return Status::Ok();
}

Status DeformConvKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const auto& names = node.node().inputs;
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor& offset = ctx.input(2);
  ONYX_RETURN_IF_ERROR(CheckSameType(node, x, 0, w, 1));
  ONYX_RETURN_IF_ERROR(CheckSameType(node, x, 0, offset, 2));
  if (x.rank() != 4) {
    return node.NotSupported("input 0 '", names[0], "' has shape ", ShapeToString(x.shape()),
                             "; only 2-D DeformConv ([N, C, H, W]) is supported");
  }
  ONYX_ASSIGN_OR_RETURN(ConvShapes s, ResolveConv(node, x, w, 0, 1));
  const int64_t offset_groups = node.attr_int("offset_group", 1);
  if (offset_groups < 1 || s.in_channels % offset_groups != 0) {
    return node.Invalid("attribute 'offset_group' is ", offset_groups, "; expected >= 1 dividing ",
                        s.in_channels, " input channels");
  }
  const int64_t ksize = s.window.KernelSize();
  const Shape want_offset{s.batch, offset_groups * ksize * 2, s.window.out[0], s.window.out[1]};
  if (offset.shape() != want_offset) {
    return node.Invalid("input 2 '", names[2], "' has shape ", ShapeToString(offset.shape()),
                        "; expected ", ShapeToString(want_offset));
  }
  const Tensor* b = ctx.num_inputs() > 3 && ctx.has_input(3) ? &ctx.input(3) : nullptr;
  if (b) {
    ONYX_RETURN_IF_ERROR(CheckSameType(node, x, 0, *b, 3));
    ONYX_RETURN_IF_ERROR(CheckBias(node, *b, 3, s.out_channels));
  }
  const Tensor* mask = ctx.num_inputs() > 4 && ctx.has_input(4) ? &ctx.input(4) : nullptr;
  if (mask) {
    ONYX_RETURN_IF_ERROR(CheckSameType(node, x, 0, *mask, 4));
    const Shape want_mask{s.batch, offset_groups * ksize, s.window.out[0], s.window.out[1]};
    if (mask->shape() != want_mask) {
      return node.Invalid("input 4 '", names[4], "' has shape ", ShapeToString(mask->shape()),
                          "; expected ", ShapeToString(want_mask));
    }
  }
  Tensor y = ctx.Output(0, x.dtype(), OutputShape(s.batch, s.out_channels, s.window.out));
  if (x.dtype() == DType::kDouble) {
    DeformConvCore<double>(x.data<double>(), w.data<double>(), b ? b->data<double>() : nullptr,
                           offset.data<double>(), mask ? mask->data<double>() : nullptr,
                           y.data<double>(), s, offset_groups);
    return Status::Ok();
  }
  if (x.dtype() != DType::kFloat && x.dtype() != DType::kFloat16 && x.dtype() != DType::kBFloat16) {
    return node.NotSupported("input 0 '", names[0], "' has type ", DTypeName(x.dtype()));
  }
  const std::vector<float> xf = ToFloatVector(x), wf = ToFloatVector(w), of = ToFloatVector(offset);
  const std::vector<float> bf = b ? ToFloatVector(*b) : std::vector<float>();
  const std::vector<float> mf = mask ? ToFloatVector(*mask) : std::vector<float>();
  std::vector<float> yf(static_cast<size_t>(y.numel()));
  DeformConvCore<float>(xf.data(), wf.data(), b ? bf.data() : nullptr, of.data(),
                        mask ? mf.data() : nullptr, yf.data(), s, offset_groups);
  for (int64_t i = 0; i < y.numel(); ++i) StoreFromDouble(y.dtype(), y.raw_data(), i, yf[i]);
  return Status::Ok();
}

}  // namespace onyx::kernels
