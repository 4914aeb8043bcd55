// Reference loops of the normalization family: per-channel affine maps, row moments, LRN,
// LayerNormalization, RMSNormalization and Lp normalization. Inputs and outputs are contiguous
// row-major buffers; parameters arrive as double vectors already checked by the op layer.
// Element types: float, double, float16_t, bfloat16_t (computed in float, or double for double).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/reference/reduction.h"

namespace onyx::kernels::reference {

// dst[b, c, i] = src[b, c, i] * scale[c] + shift[c] for b < batch, c < channels, i < inner.
// In-place safe (dst == src). Used by BatchNormalization, InstanceNormalization and
// GroupNormalization after the statistics are folded into scale and shift.
template <typename T>
void ChannelAffine(const T* src, T* dst, int64_t batch, int64_t channels, int64_t inner,
                   const std::vector<double>& scale, const std::vector<double>& shift,
                   int threads = 1);

// Population mean and variance of each of `rows` rows of `cols` elements (two passes, double
// accumulation). mean and var have `rows` entries. cols == 0 gives mean 0, var 0.
template <typename T>
void RowMoments(const T* src, int64_t rows, int64_t cols, double* mean, double* var);

// Population mean and variance per channel of an [N, C, inner] tensor, over N and inner
// (BatchNormalization training mode). mean and var have C entries.
template <typename T>
void ChannelMoments(const T* src, int64_t batch, int64_t channels, int64_t inner, double* mean,
                    double* var);

// LRN across channels of an [N, C, inner] tensor (ONNX LRN):
//   y = x / (bias + alpha / size * sum_{c' in [c - floor((size-1)/2), c + ceil((size-1)/2)]}
//   x^2)^beta
template <typename T>
void Lrn(const T* src, T* dst, int64_t batch, int64_t channels, int64_t inner, int64_t size,
         double alpha, double beta, double bias);

// LayerNormalization over rows of `cols` elements: y = (x - mean) * inv_std * scale[j] + bias[j]
// where inv_std = 1 / sqrt(var + epsilon). scale/bias have `cols` entries (bias may be empty).
// mean_out / inv_std_out (nullable) receive one value per row.
template <typename T>
void LayerNorm(const T* src, T* dst, int64_t rows, int64_t cols, const std::vector<double>& scale,
               const std::vector<double>& bias, double epsilon, double* mean_out,
               double* inv_std_out);

// RMSNormalization over rows: y = x / sqrt(mean(x^2) + epsilon) * scale[j].
template <typename T>
void RmsNorm(const T* src, T* dst, int64_t rows, int64_t cols, const std::vector<double>& scale,
             double epsilon);

// LpNormalization along the middle axis of an [outer, n, inner] tensor, p in {1, 2}.
// A zero norm gives 0 (not NaN), as the ONNX tests expect.
template <typename T>
void LpNorm(const T* src, T* dst, int64_t outer, int64_t n, int64_t inner, int64_t p);

// MeanVarianceNormalization (ONNX function body): over the reduced elements of each output of `g`,
// y = (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + epsilon). The variance is clamped at 0.
template <typename T>
void MeanVarianceNorm(const T* src, T* dst, const ReduceGeometry& g, double epsilon);

}  // namespace onyx::kernels::reference
