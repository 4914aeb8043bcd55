// Window geometry (strides, dilations, pads, auto_pad, ceil_mode → output sizes) shared by the
// ConvPool kernels and their shape inference, and the im2col lowering used by the convolutions.
#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/reference/conv_pool.h"

namespace onyx::kernels {
namespace {

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

int64_t FloorDiv(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
int64_t CeilDiv(int64_t a, int64_t b) {
  return -FloorDiv(-a, b);
}

std::string IntsToString(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// Reads an ints attribute that must have `size` entries all >= `min_value` (default `def`).
Status ReadInts(const NodeView& node, const char* name, size_t size, int64_t def, int64_t min_value,
                std::vector<int64_t>* out) {
  *out = node.attr_ints(name, std::vector<int64_t>(size, def));
  if (out->size() != size) {
    return node.Invalid("attribute '", name, "' is ", IntsToString(*out), " with ", out->size(),
                        " values; expected ", size, " for the input's spatial dims");
  }
  for (int64_t v : *out) {
    if (v < min_value) {
      return node.Invalid("attribute '", name, "' is ", IntsToString(*out),
                          "; expected every value >= ", min_value);
    }
  }
  return Status::Ok();
}

// The start both geometries share: records in/kernel, checks kernel_shape against the input's
// spatial rank, reads strides and dilations.
Status InitWindow(const NodeView& node, const std::vector<int64_t>& in,
                  const std::vector<int64_t>& kernel, WindowGeometry& g) {
  const size_t rank = in.size();
  g.in = in;
  g.kernel = kernel;
  if (kernel.size() != rank) {
    return node.Invalid("kernel_shape ", IntsToString(kernel), " has ", kernel.size(),
                        " dims; expected ", rank, " to match the input's spatial dims ",
                        IntsToString(in));
  }
  for (int64_t k : kernel) {
    if (k < 1) return node.Invalid("kernel_shape ", IntsToString(kernel), " must be positive");
  }
  ONYX_RETURN_IF_ERROR(ReadInts(node, "strides", rank, 1, 1, &g.strides));
  ONYX_RETURN_IF_ERROR(ReadInts(node, "dilations", rank, 1, 1, &g.dilations));
  // Hostile attributes: the dilated extent (kernel - 1) * dilation + 1 and the product of the
  // kernel sizes (im2col rows) must fit int64 before any geometry is computed from them.
  int64_t taps = 0;
  if (!CheckedElementCount(kernel, &taps)) {
    return node.Invalid("kernel_shape ", IntsToString(kernel),
                        " has more taps than 64 bits can count");
  }
  for (size_t d = 0; d < rank; ++d) {
    int64_t span = 0;
    if (!CheckedMul(kernel[d] - 1, g.dilations[d], &span) || !CheckedAdd(span, 1, &span)) {
      return node.Invalid("window of ", kernel[d], " taps with dilation ", g.dilations[d],
                          " spans more than 64 bits can count");
    }
  }
  return Status::Ok();
}

}  // namespace

int64_t WindowGeometry::InSize() const {
  return Product(in);
}
int64_t WindowGeometry::OutSize() const {
  return Product(out);
}
int64_t WindowGeometry::KernelSize() const {
  return Product(kernel);
}

std::vector<int64_t> ChannelsFirstDims(const Shape& stored, bool channels_last) {
  std::vector<int64_t> d(stored.begin(), stored.end());
  if (!channels_last || d.size() < 2) return d;
  std::vector<int64_t> l = {d[0], d.back()};
  l.insert(l.end(), d.begin() + 1, d.end() - 1);
  return l;
}

StatusOr<WindowGeometry> ResolveWindow(const NodeView& node, const std::vector<int64_t>& in,
                                       const std::vector<int64_t>& kernel, bool allow_ceil_mode) {
  const size_t rank = in.size();
  WindowGeometry g;
  ONYX_RETURN_IF_ERROR(InitWindow(node, in, kernel, g));
  std::vector<int64_t> pads;
  ONYX_RETURN_IF_ERROR(ReadInts(node, "pads", 2 * rank, 0, 0, &pads));
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  const bool ceil_mode = allow_ceil_mode && node.attr_int("ceil_mode", 0) != 0;
  g.pad_begin.assign(rank, 0);
  g.pad_end.assign(rank, 0);
  g.out.assign(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t s = g.strides[d];
    const int64_t span = (kernel[d] - 1) * g.dilations[d] + 1;  // dilated window extent
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // ONNX: output = ceil(input / stride); the odd pad goes at the end for SAME_UPPER.
      g.out[d] = CeilDiv(in[d], s);
      // (out - 1) * s <= in, and span fits (InitWindow); their sum may not.
      int64_t reach = 0;
      if (__builtin_add_overflow((g.out[d] - 1) * s, span, &reach)) {
        return node.Invalid("window of ", kernel[d], " taps with dilation ", g.dilations[d],
                            " on spatial dim ", d, " of size ", in[d],
                            " needs more padding than 64 bits can count");
      }
      const int64_t total = std::max<int64_t>(0, reach - in[d]);
      const int64_t small = total / 2;
      g.pad_begin[d] = auto_pad == "SAME_UPPER" ? small : total - small;
      g.pad_end[d] = total - g.pad_begin[d];
      continue;
    }
    if (auto_pad == "NOTSET" || auto_pad.empty()) {
      g.pad_begin[d] = pads[d];
      g.pad_end[d] = pads[rank + d];
    } else if (auto_pad != "VALID") {
      return node.Invalid("attribute 'auto_pad' is '", auto_pad,
                          "'; expected NOTSET, SAME_UPPER, SAME_LOWER or VALID");
    }
    int64_t padded = 0;
    // padded + stride must fit too: CeilDiv(room, s) and (out - 1) * s below reach room + s - 1.
    int64_t unused = 0;
    if (!CheckedAdd(in[d], g.pad_begin[d], &padded) || !CheckedAdd(padded, g.pad_end[d], &padded) ||
        !CheckedAdd(padded, s, &unused)) {
      return node.Invalid("spatial dim ", d, " of size ", in[d], " with pads ", g.pad_begin[d], "+",
                          g.pad_end[d], " is larger than 64 bits can count");
    }
    const int64_t room = padded - span;
    if (room < 0) {
      return node.Invalid("window of ", kernel[d], " taps with dilation ", g.dilations[d],
                          " spans ", span, " but spatial dim ", d, " of the input is only ", in[d],
                          " (padded ", in[d] + g.pad_begin[d] + g.pad_end[d], ")");
    }
    g.out[d] = (ceil_mode ? CeilDiv(room, s) : room / s) + 1;
    // ceil_mode: a last window that would start in the end padding is dropped (opset 19 rule,
    // as in PyTorch and ONNX Runtime).
    if (ceil_mode && (g.out[d] - 1) * s >= in[d] + g.pad_begin[d]) --g.out[d];
  }
  return g;
}

StatusOr<WindowGeometry> ResolveConvTransposeWindow(const NodeView& node,
                                                    const std::vector<int64_t>& in,
                                                    const std::vector<int64_t>& kernel) {
  const size_t rank = in.size();
  WindowGeometry g;
  ONYX_RETURN_IF_ERROR(InitWindow(node, in, kernel, g));
  std::vector<int64_t> output_padding;
  ONYX_RETURN_IF_ERROR(ReadInts(node, "output_padding", rank, 0, 0, &output_padding));
  std::vector<int64_t> pads;
  ONYX_RETURN_IF_ERROR(ReadInts(node, "pads", 2 * rank, 0, 0, &pads));
  std::vector<int64_t> output_shape = node.attr_ints("output_shape");
  // Some exporters write the full N, C, spatial... shape; only the spatial part matters.
  if (output_shape.size() == rank + 2)
    output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
  if (!output_shape.empty() && output_shape.size() != rank) {
    return node.Invalid("attribute 'output_shape' is ", IntsToString(output_shape), "; expected ",
                        rank, " spatial sizes");
  }
  for (int64_t v : output_shape) {
    if (v < 0) {
      return node.Invalid("attribute 'output_shape' is ", IntsToString(output_shape),
                          "; expected sizes >= 0");
    }
  }
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (!same && auto_pad != "NOTSET" && auto_pad != "VALID" && !auto_pad.empty()) {
    return node.Invalid("attribute 'auto_pad' is '", auto_pad,
                        "'; expected NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  }
  g.pad_begin.assign(rank, 0);
  g.pad_end.assign(rank, 0);
  g.out.assign(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t span = (kernel[d] - 1) * g.dilations[d] + 1;  // fits: InitWindow
    // Every term may be a hostile attribute: each step is checked (signed: in may be 0, so the
    // CheckedMul/CheckedAdd of onyx/tensor.h, which refuse negatives, do not fit).
    int64_t full = 0, same_out = 0;
    if (__builtin_mul_overflow(g.strides[d], in[d] - 1, &full) ||
        __builtin_add_overflow(full, output_padding[d], &full) ||
        __builtin_add_overflow(full, span, &full) ||
        (same && __builtin_mul_overflow(in[d], g.strides[d], &same_out))) {
      return node.Invalid("output spatial dim ", d, " (input ", in[d], ", stride ", g.strides[d],
                          ", output_padding ", output_padding[d], ", window span ", span,
                          ") is larger than 64 bits can count");
    }
    if (!output_shape.empty() || same) {
      // ONNX: total_padding = stride * (in - 1) + output_padding + span - output_shape; the odd
      // pad goes at the beginning unless auto_pad is SAME_UPPER.
      g.out[d] = !output_shape.empty() ? output_shape[d] : same_out;
      int64_t total = 0;
      // out >= 0, so -out fits; FloorDiv below negates total, so keep it far from INT64_MIN.
      if (__builtin_add_overflow(full, -g.out[d], &total) || total < -(INT64_MAX / 2)) {
        return node.Invalid("output spatial dim ", d, " of ", g.out[d], " needs a padding of ",
                            full, " - ", g.out[d], ", more than 64 bits can count");
      }
      const int64_t half = FloorDiv(total, 2);
      g.pad_begin[d] = auto_pad == "SAME_UPPER" ? half : total - half;
      g.pad_end[d] = total - g.pad_begin[d];
    } else {
      if (auto_pad != "VALID") {
        g.pad_begin[d] = pads[d];
        g.pad_end[d] = pads[rank + d];
      }
      // pads >= 0 (ReadInts), so their negations fit.
      if (__builtin_add_overflow(full, -g.pad_begin[d], &g.out[d]) ||
          __builtin_add_overflow(g.out[d], -g.pad_end[d], &g.out[d])) {
        return node.Invalid("output spatial dim ", d, " with pads ", g.pad_begin[d], "+",
                            g.pad_end[d], " is smaller than 64 bits can count");
      }
    }
    if (g.out[d] < 0) {
      return node.Invalid("output spatial dim ", d, " would be ", g.out[d], " (input ", in[d],
                          ", pads ", g.pad_begin[d], "+", g.pad_end[d], ")");
    }
  }
  return g;
}

template <typename T>
void Im2Col(const T* src, int64_t channels, const WindowGeometry& g, int64_t out_begin,
            int64_t out_end, T pad_value, T* dst) {
  const size_t rank = g.rank();
  const int64_t cols = out_end - out_begin;
  const int64_t in_size = g.InSize();
  const int64_t kernel_size = g.KernelSize();
  const int64_t last = rank - 1;
  const int64_t out_w = g.out[last];
  const int64_t in_w = g.in[last];
  const int64_t stride_w = g.strides[last];
  std::vector<int64_t> kidx(rank, 0);  // kernel tap per dim
  std::vector<int64_t> in_strides(rank, 1);
  for (size_t d = rank - 1; d-- > 0;) in_strides[d] = in_strides[d + 1] * g.in[d + 1];
  for (int64_t c = 0; c < channels; ++c) {
    const T* plane = src + c * in_size;
    for (int64_t kk = 0; kk < kernel_size; ++kk) {
      // Kernel tap kk as per-dim indices (row-major over g.kernel).
      for (int64_t d = last, rest = kk; d >= 0; --d) {
        kidx[d] = rest % g.kernel[d];
        rest /= g.kernel[d];
      }
      T* row = dst + (c * kernel_size + kk) * cols;
      // Output columns ow in [lo, hi) read input column ow * stride + offset_w inside [0, in_w).
      const int64_t offset_w = kidx[last] * g.dilations[last] - g.pad_begin[last];
      const int64_t lo = std::min(out_w, std::max<int64_t>(0, CeilDiv(-offset_w, stride_w)));
      const int64_t hi = std::min(out_w, std::max(lo, CeilDiv(in_w - offset_w, stride_w)));
      // Walk whole output rows: the outer dims come from the flat position.
      for (int64_t pos = out_begin; pos < out_end; pos += out_w) {
        T* dst_row = row + (pos - out_begin);
        int64_t in_offset = 0;
        bool inside = true;
        for (int64_t d = last - 1, rest = pos / out_w; d >= 0; --d) {
          const int64_t o = rest % g.out[d];
          rest /= g.out[d];
          const int64_t i = o * g.strides[d] + kidx[d] * g.dilations[d] - g.pad_begin[d];
          if (i < 0 || i >= g.in[d]) {
            inside = false;
            break;
          }
          in_offset += i * in_strides[d];
        }
        if (!inside) {
          std::fill(dst_row, dst_row + out_w, pad_value);
          continue;
        }
        const T* src_row = plane + in_offset;
        for (int64_t ow = 0; ow < lo; ++ow) dst_row[ow] = pad_value;
        if (stride_w == 1) {
          if (hi > lo) std::memcpy(dst_row + lo, src_row + lo + offset_w, (hi - lo) * sizeof(T));
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) dst_row[ow] = src_row[ow * stride_w + offset_w];
        }
        for (int64_t ow = hi; ow < out_w; ++ow) dst_row[ow] = pad_value;
      }
    }
  }
}

template void Im2Col<float>(const float*, int64_t, const WindowGeometry&, int64_t, int64_t, float,
                            float*);
template void Im2Col<double>(const double*, int64_t, const WindowGeometry&, int64_t, int64_t,
                             double, double*);
template void Im2Col<int32_t>(const int32_t*, int64_t, const WindowGeometry&, int64_t, int64_t,
                              int32_t, int32_t*);

}  // namespace onyx::kernels
