// Region-of-interest pooling: RoiAlign (opsets 10 and 16) and MaxRoiPool, on [N, C, H, W] inputs.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/element_types.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/conv_pool.h"

namespace onyx::kernels {
namespace {

// Samples one box may take (bins x grid): far beyond any real detector's boxes on its feature map.
constexpr double kMaxRoiSamples = double{1 << 26};

// One bilinear sample: four input offsets (within a plane) and their weights.
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};

// The RoiAlign sampling rule (as in ONNX Runtime and the ONNX reference): points more than one
// pixel outside the map contribute zero; others clamp to the border and interpolate.
Sample BilinearSample(double y, double x, int64_t height, int64_t width) {
  Sample s;
  if (y < -1.0 || y > height || x < -1.0 || x > width) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x);
  int64_t y_high, x_high;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = static_cast<double>(y_low);
  } else {
    y_high = y_low + 1;
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    x = static_cast<double>(x_low);
  } else {
    x_high = x_low + 1;
  }
  const double ly = y - y_low, lx = x - x_low, hy = 1.0 - ly, hx = 1.0 - lx;
  s.pos[0] = y_low * width + x_low;
  s.pos[1] = y_low * width + x_high;
  s.pos[2] = y_high * width + x_low;
  s.pos[3] = y_high * width + x_high;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  return s;
}

Status CheckRois(const NodeView& node, const Tensor& x, const Tensor& rois, int64_t roi_cols) {
  if (x.rank() != 4) {
    return node.Invalid("input 0 '", node.node().inputs[0], "' has shape ",
                        ShapeToString(x.shape()), "; expected [N, C, H, W]");
  }
  if (rois.rank() != 2 || rois.dim(1) != roi_cols) {
    return node.Invalid("input 1 '", node.node().inputs[1], "' has shape ",
                        ShapeToString(rois.shape()), "; expected [num_rois, ", roi_cols, "]");
  }
  if (rois.dtype() != x.dtype()) {
    return node.Invalid("input 1 '", node.node().inputs[1], "' has type ", DTypeName(rois.dtype()),
                        "; expected ", DTypeName(x.dtype()));
  }
  return Status::Ok();
}

Status RoiAlign(KernelContext& ctx, bool half_pixel_default) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  const Tensor& batch_indices = ctx.input(2);
  ONYX_RETURN_IF_ERROR(CheckRois(node, x, rois, 4));
  const int64_t num_rois = rois.dim(0);
  if (batch_indices.rank() != 1 || batch_indices.dim(0) != num_rois ||
      batch_indices.dtype() != DType::kInt64) {
    return node.Invalid("input 2 '", node.node().inputs[2], "' is ",
                        DTypeName(batch_indices.dtype()), ShapeToString(batch_indices.shape()),
                        "; expected int64[", num_rois, "]");
  }
  const std::string mode = node.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") {
    return node.Invalid("attribute 'mode' is '", mode, "'; expected avg or max");
  }
  const std::string ctm = node.attr_string("coordinate_transformation_mode",
                                           half_pixel_default ? "half_pixel" : "output_half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel") {
    return node.Invalid("attribute 'coordinate_transformation_mode' is '", ctm,
                        "'; expected half_pixel or output_half_pixel");
  }
  const bool half_pixel = ctm == "half_pixel";
  const int64_t out_h = node.attr_int("output_height", 1);
  const int64_t out_w = node.attr_int("output_width", 1);
  const int64_t sampling_ratio = node.attr_int("sampling_ratio", 0);
  const double scale = node.attr_float("spatial_scale", 1.0f);
  if (out_h < 1 || out_w < 1 || sampling_ratio < 0) {
    return node.Invalid("output_height/output_width must be >= 1 and sampling_ratio >= 0");
  }
  const int64_t batch = x.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  const int64_t* bidx = batch_indices.data<int64_t>();
  for (int64_t r = 0; r < num_rois; ++r) {
    if (bidx[r] < 0 || bidx[r] >= batch) {
      return node.Fail("input 2 '", node.node().inputs[2], "' holds batch index ", bidx[r],
                       " outside [0, ", batch, ")");
    }
  }
  Tensor y = ctx.Output(0, x.dtype(), {num_rois, channels, out_h, out_w});
  if (height == 0 || width == 0) {
    // An empty feature map: every sample lies outside it and contributes zero. (Sampling would
    // clamp to row -1 of a map with no rows: found by fuzz_run.)
    const bool ok = VisitFloat(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::fill(y.data<T>(), y.data<T>() + y.numel(), T(0));
    });
    if (!ok)
      return node.NotSupported("input 0 '", node.node().inputs[0], "' has type ",
                               DTypeName(x.dtype()));
    return Status::Ok();
  }
  std::atomic<int64_t> bad_roi{-1};  // a box whose sampling grid is not computable
  const bool ok = VisitFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = x.data<T>();
    const T* roi = rois.data<T>();
    T* dst = y.data<T>();
    tbb::parallel_for(int64_t{0}, num_rois, [&](int64_t r) {
      // No rounding of the box: this is what makes it RoiAlign rather than RoiPool.
      const double offset = half_pixel ? 0.5 : 0.0;
      const double start_w = static_cast<double>(roi[r * 4 + 0]) * scale - offset;
      const double start_h = static_cast<double>(roi[r * 4 + 1]) * scale - offset;
      const double end_w = static_cast<double>(roi[r * 4 + 2]) * scale - offset;
      const double end_h = static_cast<double>(roi[r * 4 + 3]) * scale - offset;
      double roi_w = end_w - start_w, roi_h = end_h - start_h;
      if (!half_pixel) {  // output_half_pixel forces malformed boxes to 1x1
        roi_w = std::max(roi_w, 1.0);
        roi_h = std::max(roi_h, 1.0);
      }
      const double bin_h = roi_h / out_h, bin_w = roi_w / out_w;
      const double grid_h_d = sampling_ratio > 0 ? sampling_ratio : std::ceil(roi_h / out_h);
      const double grid_w_d = sampling_ratio > 0 ? sampling_ratio : std::ceil(roi_w / out_w);
      // The adaptive grid grows with the box: a box of 1e19 pixels (or NaN) would not convert
      // to an integer, or would sample for ever (found by fuzz_run).
      // (A malformed half_pixel box has a negative grid, which samples nothing.)
      const double bins = static_cast<double>(out_h) * static_cast<double>(out_w);
      if (!(std::isfinite(start_h) && std::isfinite(start_w) &&
            std::fabs(grid_h_d) <= kMaxRoiSamples && std::fabs(grid_w_d) <= kMaxRoiSamples &&
            std::fabs(grid_h_d * grid_w_d) * bins <= kMaxRoiSamples)) {
        bad_roi.store(r, std::memory_order_relaxed);
        return;
      }
      const int64_t grid_h = static_cast<int64_t>(grid_h_d);
      const int64_t grid_w = static_cast<int64_t>(grid_w_d);
      const double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
      // Two negative grid sizes (a malformed half_pixel box) multiply to a positive count of
      // samples that were never made (found by fuzz_run): such a box samples nothing.
      const int64_t per_bin = grid_h > 0 && grid_w > 0 ? grid_h * grid_w : 0;
      // Sample positions and weights are shared by every channel.
      std::vector<Sample> samples;
      samples.reserve(static_cast<size_t>(out_h * out_w * per_bin));
      for (int64_t ph = 0; ph < out_h; ++ph)
        for (int64_t pw = 0; pw < out_w; ++pw)
          for (int64_t iy = 0; iy < grid_h; ++iy) {
            const double yy = start_h + ph * bin_h + (iy + 0.5) * bin_h / grid_h;
            for (int64_t ix = 0; ix < grid_w; ++ix) {
              const double xx = start_w + pw * bin_w + (ix + 0.5) * bin_w / grid_w;
              samples.push_back(BilinearSample(yy, xx, height, width));
            }
          }
      for (int64_t c = 0; c < channels; ++c) {
        const T* plane = src + (bidx[r] * channels + c) * height * width;
        T* out = dst + (r * channels + c) * out_h * out_w;
        for (int64_t bin = 0; bin < out_h * out_w; ++bin) {
          const Sample* s = samples.data() + bin * per_bin;
          double acc = 0;
          for (int64_t i = 0; i < per_bin; ++i) {
            double v[4];
            for (int q = 0; q < 4; ++q) v[q] = s[i].w[q] * static_cast<double>(plane[s[i].pos[q]]);
            if (mode == "avg") {
              acc += v[0] + v[1] + v[2] + v[3];
            } else {
              // Max mode takes the largest weighted corner (ONNX Runtime's rule, which the ONNX
              // tests encode), not the max of interpolated values.
              const double m = std::max(std::max(v[0], v[1]), std::max(v[2], v[3]));
              acc = i == 0 ? m : std::max(acc, m);
            }
          }
          out[bin] = static_cast<T>(mode == "avg" ? acc / count : acc);
        }
      }
    });
  });
  if (!ok) {
    return node.NotSupported("input 0 '", node.node().inputs[0], "' has type ",
                             DTypeName(x.dtype()));
  }
  if (const int64_t r = bad_roi.load(); r >= 0)
    return node.Fail("input 1 '", node.node().inputs[1], "' box ", r,
                     " is not finite or so large that its sampling grid would take more than ",
                     static_cast<int64_t>(kMaxRoiSamples), " samples");
  return Status::Ok();
}

}  // namespace

Status RoiAlign10Kernel(KernelContext& ctx) {
  return RoiAlign(ctx, false);
}
Status RoiAlign16Kernel(KernelContext& ctx) {
  return RoiAlign(ctx, true);
}

Status MaxRoiPoolKernel(KernelContext& ctx) {
  const NodeView& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  ONYX_RETURN_IF_ERROR(CheckRois(node, x, rois, 5));
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> pooled, node.RequiredInts("pooled_shape"));
  if (pooled.size() != 2 || pooled[0] < 1 || pooled[1] < 1) {
    return node.Invalid("attribute 'pooled_shape' must be 2 positive values");
  }
  const double scale = node.attr_float("spatial_scale", 1.0f);
  const int64_t num_rois = rois.dim(0);
  const int64_t batch = x.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  const int64_t ph_n = pooled[0], pw_n = pooled[1];
  Tensor y = ctx.Output(0, x.dtype(), {num_rois, channels, ph_n, pw_n});
  Status status;
  const bool ok = VisitFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = x.data<T>();
    const T* roi = rois.data<T>();
    T* dst = y.data<T>();
    for (int64_t r = 0; r < num_rois; ++r) {
      const T* box = roi + r * 5;
      const int64_t b = static_cast<int64_t>(static_cast<double>(box[0]));
      if (b < 0 || b >= batch) {
        status = node.Fail("input 1 '", node.node().inputs[1], "' roi ", r, " has batch index ", b,
                           " outside [0, ", batch, ")");
        return;
      }
      // Caffe's RoiPool: the box is rounded to whole pixels and includes its end pixel.
      const int64_t start_w = std::llround(static_cast<double>(box[1]) * scale);
      const int64_t start_h = std::llround(static_cast<double>(box[2]) * scale);
      const int64_t end_w = std::llround(static_cast<double>(box[3]) * scale);
      const int64_t end_h = std::llround(static_cast<double>(box[4]) * scale);
      const double bin_h = static_cast<double>(std::max<int64_t>(end_h - start_h + 1, 1)) / ph_n;
      const double bin_w = static_cast<double>(std::max<int64_t>(end_w - start_w + 1, 1)) / pw_n;
      for (int64_t c = 0; c < channels; ++c) {
        const T* plane = src + (b * channels + c) * height * width;
        T* out = dst + (r * channels + c) * ph_n * pw_n;
        for (int64_t ph = 0; ph < ph_n; ++ph) {
          const int64_t h0 = std::clamp<int64_t>(
              static_cast<int64_t>(std::floor(ph * bin_h)) + start_h, 0, height);
          const int64_t h1 = std::clamp<int64_t>(
              static_cast<int64_t>(std::ceil((ph + 1) * bin_h)) + start_h, 0, height);
          for (int64_t pw = 0; pw < pw_n; ++pw) {
            const int64_t w0 = std::clamp<int64_t>(
                static_cast<int64_t>(std::floor(pw * bin_w)) + start_w, 0, width);
            const int64_t w1 = std::clamp<int64_t>(
                static_cast<int64_t>(std::ceil((pw + 1) * bin_w)) + start_w, 0, width);
            const bool empty = h1 <= h0 || w1 <= w0;
            double best_d = empty ? 0.0 : -std::numeric_limits<double>::infinity();
            for (int64_t h = h0; h < h1; ++h)
              for (int64_t w = w0; w < w1; ++w)
                best_d = std::max(best_d, static_cast<double>(plane[h * width + w]));
            out[ph * pw_n + pw] = static_cast<T>(best_d);
          }
        }
      }
    }
  });
  if (!ok) {
    return node.NotSupported("input 0 '", node.node().inputs[0], "' has type ",
                             DTypeName(x.dtype()));
  }
  return status;
}

}  // namespace onyx::kernels
