// Reference kernels for the image and signal family: Resize/Upsample, GridSample, AffineGrid,
// DFT, STFT, the window functions, MelWeightMatrix and NonMaxSuppression.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onyx/tensor.h"

namespace onyx::kernels::reference {

// ---- Resize (image_signal_resize.cc) ----

enum class ResizeMode { kNearest, kLinear, kCubic };
enum class ResizeCoordinateMode {
  kHalfPixel,
  kHalfPixelSymmetric,  // opset 19
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfCropAndResize,
  kTfHalfPixelForNn,  // opset 11 only
};
enum class ResizeNearestMode {
  kRoundPreferFloor,
  kRoundPreferCeil,
  kFloor,
  kCeil,
  kSimple,  // Upsample and Resize-10: floor when upsampling, ceil when downsampling
};

struct ResizeParams {
  ResizeMode mode = ResizeMode::kNearest;
  ResizeCoordinateMode coordinate_mode = ResizeCoordinateMode::kHalfPixel;
  ResizeNearestMode nearest_mode = ResizeNearestMode::kRoundPreferFloor;
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;
  double extrapolation_value = 0;  // tf_crop_and_resize only
  bool antialias = false;          // linear/cubic when downscaling (opset 18)
  std::vector<double> scales;      // per axis of X; 1 leaves an axis alone
  std::vector<double> roi_start;   // per axis (tf_crop_and_resize), normalised [0, 1]
  std::vector<double> roi_end;
  Shape output_shape;  // per axis of X
};

// Resizes x (any dtype for nearest; numeric for linear/cubic) into y, allocated with
// p.output_shape and x's dtype. Linear and cubic interpolate one axis at a time in double, then
// round (integers: half to even, saturating). Follows onnx.reference's separable formulation.
void Resize(const Tensor& x, const ResizeParams& p, Tensor& y);

// ---- GridSample / AffineGrid (image_signal_grid.cc) ----

enum class GridSampleMode { kNearest, kLinear, kCubic };
enum class GridSamplePadding { kZeros, kBorder, kReflection };

// x [N, C, D1..Dk], grid [N, O1..Ok, k] with the last dim ordered (x=Dk, y=Dk-1, ...) in
// [-1, 1]; y [N, C, O1..Ok] of x's dtype. Cubic uses a = -0.75 (PyTorch).
void GridSample(const Tensor& x, const Tensor& grid, GridSampleMode mode, GridSamplePadding padding,
                bool align_corners, Tensor& y);

// theta [N, k, k+1] (k = 2 or 3); `spatial` = [H, W] or [D, H, W]; grid [N, spatial..., k].
void AffineGrid(const Tensor& theta, const std::vector<int64_t>& spatial, bool align_corners,
                Tensor& grid);

// ---- DFT / STFT / windows / MelWeightMatrix (image_signal_spectral.cc) ----

// x [outer, axis_len, inner, c_in] (c_in 1 = real, 2 = complex) transformed along the axis.
// Forward: y [outer, onesided ? n/2+1 : n, inner, 2]. Inverse: y [outer, n, inner, 2], scaled
// by 1/n; inverse + onesided (IRFFT): x holds the one-sided half spectrum, y [outer, n, inner, 1].
// The signal is zero-padded or truncated to n = dft_length. x and y float/float16/bfloat16/double.
void Dft(const Tensor& x, int64_t outer, int64_t axis_len, int64_t inner, int64_t dft_length,
         bool inverse, bool onesided, Tensor& y);

// signal [batch, length, c_in]; window (may be null) [frame_length]; y [batch, frames, bins, 2]
// with frames = 1 + (length - frame_length) / step and bins = frame_length / 2 + 1 (onesided) or
// frame_length: the first `bins` DFT outputs of each windowed frame.
void Stft(const Tensor& signal, int64_t frame_step, const Tensor* window, int64_t frame_length,
          Tensor& y);

enum class WindowKind { kHann, kHamming, kBlackman };
// y [size] of any numeric dtype (values truncated towards zero for integer types).
void Window(WindowKind kind, bool periodic, Tensor& y);

// y [dft_length/2 + 1, num_mel_bins]: triangular filters on the mel scale.
void MelWeightMatrix(int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate,
                     double lower_edge_hertz, double upper_edge_hertz, Tensor& y);

// ---- NonMaxSuppression (image_signal_nms.cc) ----

// boxes [B, N, 4], scores [B, C, N]. Returns the selected (batch, class, box) triples in order:
// per batch, per class, by descending score (ties: lower box index first).
std::vector<int64_t> NonMaxSuppression(const Tensor& boxes, const Tensor& scores,
                                       int64_t max_output_boxes_per_class, double iou_threshold,
                                       bool has_score_threshold, double score_threshold,
                                       bool center_point_box);

// Writes v into element i of a numeric tensor: integers round half to even and saturate, floats
// convert (shared by the interpolating kernels).
void StoreSaturated(DType t, void* dst, int64_t i, double v);

}  // namespace onyx::kernels::reference
