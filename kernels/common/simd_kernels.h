// Float32 loops of the portable SIMD kernels, written with Highway and dispatched at run time to
// the best target the CPU supports (AVX-512, AVX2, SSE4, NEON, SVE, ... or scalar). Every function
// is single-threaded; the op-level kernels split the work across threads.
//
// Contract shared by all: buffers are contiguous float32, no alignment is required, nothing is
// read or written outside the ranges given. Where "in-place safe" is stated, dst may equal src
// (the loops read a vector before writing the same vector).
#pragma once

#include <cstdint>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "kernels/common/unary_op.h"

namespace onyx::kernels::common {

// ---- unary (elementwise_hwy.cc; UnaryOp and UnaryParams in unary_op.h) ----
// dst[i] = op(src[i]) for i < n. In-place safe. NaN propagates (Relu(NaN) = NaN, Clip(NaN) = NaN)
// except through NanTo. Exact (bitwise equal to the reference) for Relu, LeakyRelu, Clip, Neg,
// Abs, Sqrt, Reciprocal and NanTo; about 2 ulp for the transcendental ones, 4.3e-7 absolute for
// Erf.
void UnaryF32(UnaryOp op, const UnaryParams& params, const float* src, float* dst, int64_t n);

// ---- binary (elementwise_hwy.cc) ----
enum class BinaryOp : int {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMax,  // NaN in either operand gives NaN (numpy maximum)
  kMin,
};
// How the two operands of one contiguous run are laid out.
enum class Operands : int {
  kVecVec,     // a[i], b[i]
  kVecScalar,  // a[i], b[0]
  kScalarVec,  // a[0], b[i]
};
// dst[i] = a op b for i < n. IEEE results, bitwise equal to the reference. In-place safe for dst ==
// a or dst == b where that operand is a vector.
void BinaryF32(BinaryOp op, Operands layout, const float* a, const float* b, float* dst, int64_t n);

// ---- softmax (softmax_hwy.cc) ----
enum class SoftmaxKind : int { kSoftmax, kLogSoftmax };
// Softmax or LogSoftmax of each of `rows` contiguous rows of n elements, with the row max
// subtracted first. In-place safe. A row holding NaN or +inf gives NaN, like the reference.
void SoftmaxRowsF32(SoftmaxKind kind, const float* src, float* dst, int64_t rows, int64_t n);
// The same along the middle axis of one [n, cols] slab whose rows start `stride` elements apart
// (a column block of a wider [n, stride] slab), vectorised across the columns. `scratch` holds
// 2 * cols floats. In-place safe.
void SoftmaxSlabF32(SoftmaxKind kind, const float* src, float* dst, int64_t n, int64_t cols,
                    int64_t stride, float* scratch);

// ---- reductions (reduce_hwy.cc) ----
enum class ReduceKind : int { kSum, kMean, kSumSquare, kL2, kMax, kMin };
// dst[r] = reduce(src[r * n, r * n + n)) for r < rows; n >= 1. Sums accumulate in double, as the
// reference does; Max/Min propagate NaN.
void ReduceRowsF32(ReduceKind kind, const float* src, float* dst, int64_t rows, int64_t n);
// One part of a row split across threads: the double sum of src[0, n) (of the squares for
// kSumSquare and kL2; kMean sums too) or, for kMax / kMin, its extremum (NaN once seen). n > 0. The
// parts of a row combine in order: sums add, extrema keep the first one that is better or NaN.
double ReduceRowPartF64(ReduceKind kind, const float* src, int64_t n);
// The float result of a double sum over n elements: Mean divides by n, L2 takes the square root.
float ReduceFinish(ReduceKind kind, double acc, int64_t n);
// Columns ReduceColumnsF32 accumulates at a time (its scratch size).
constexpr int64_t kReduceColumnBlock = 4096;
// dst[i] = reduce over k < n of src[k * stride + i] for i < cols; n >= 1. `scratch` holds
// min(cols, kReduceColumnBlock) doubles. dst must not overlap src.
void ReduceColumnsF32(ReduceKind kind, const float* src, float* dst, int64_t n, int64_t cols,
                      int64_t stride, double* scratch);

// ---- normalization (normalization_hwy.cc) ----
// LayerNormalization over `rows` rows of `cols` elements: y = (x - mean) * inv_std * scale + bias
// with the population mean and variance computed in double (two passes) and
// inv_std = 1 / sqrt(var + epsilon). bias, mean_out and inv_std_out may be null. In-place safe.
void LayerNormRowsF32(const float* src, float* dst, int64_t rows, int64_t cols, const float* scale,
                      const float* bias, double epsilon, float* mean_out, float* inv_std_out);
// dst[b, c, i] = src[b, c, i] * scale[c] + shift[c] over [batch, channels, inner] (inference
// BatchNormalization after folding, or any fused per-channel scale and shift). In-place safe.
void ChannelAffineF32(const float* src, float* dst, int64_t batch, int64_t channels, int64_t inner,
                      const float* scale, const float* shift);
// The same with the channels last: dst[r, c] = src[r, c] * scale[c] + shift[c] over [rows,
// channels] (channels-last activations). In-place safe.
void ChannelAffineLastF32(const float* src, float* dst, int64_t rows, int64_t channels,
                          const float* scale, const float* shift);

// ---- data movement (transpose_hwy.cc) ----
// dst[a * dst_stride + b] = src[a + b * src_stride] for a < rows, b < cols: one 2-D transpose of
// 4-byte (or 8-byte) elements, moved as bits. dst must not overlap src.
void Transpose2D32(const uint32_t* src, int64_t src_stride, uint32_t* dst, int64_t dst_stride,
                   int64_t rows, int64_t cols);
void Transpose2D64(const uint64_t* src, int64_t src_stride, uint64_t* dst, int64_t dst_stride,
                   int64_t rows, int64_t cols);

// Fused activations applied in registers by the convolution loops.
enum class VectorActivation : int { kNone, kRelu, kClip };

// ---- depthwise convolution (depthwise_conv_hwy.cc) ----
// A 2-D convolution with one filter per channel (group = C = M) on channels-last data.
struct DepthwiseGeometry {
  int64_t in_h = 0, in_w = 0, channels = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0;
};
// Channel padding of the packed weights and bias: a whole vector can be loaded at any channel
// that starts one (the widest target has 64 float lanes).
constexpr int64_t kDepthwiseChannelPad = 64;
struct DepthwiseConvArgs {
  DepthwiseGeometry geometry;
  const float* x = nullptr;        // one image, [in_h][in_w][channels]
  const float* weights = nullptr;  // [kernel_h * kernel_w][weight_stride], tap-major
  int64_t weight_stride = 0;       // channels rounded up to a multiple of kDepthwiseChannelPad
  const float* bias = nullptr;     // [weight_stride], zeros where there is no bias
  const float* z = nullptr;        // residual row [out_w][channels], or null; may equal y
  float* y = nullptr;              // output row [out_w][channels]
  int64_t oy = 0;                  // which output row
  int64_t c_begin = 0, c_end = 0;  // channels computed; c_begin a multiple of 64
  VectorActivation activation = VectorActivation::kNone;
  float clip_lo = 0, clip_hi = 0;  // kClip bounds (Clip's semantics: NaN stays NaN)
};
// y[ox][c] = act(bias[c] + z[ox][c] + sum over in-image taps of x[iy][ix][c] * w[ky][kx][c]) for
// the row's outputs and channels [c_begin, c_end), with iy = oy * stride_h - pad_top +
// ky * dilation_h (ix likewise); taps in the padding contribute nothing. Accumulates in float32,
// taps in row-major order.
void DepthwiseConvRowF32(const DepthwiseConvArgs& args);

// ---- Winograd convolution F(2x2, 3x3) (winograd_conv_hwy.cc) ----
// A 3x3 convolution with stride 1, no dilation and one group on channels-last data, computed on
// 2x2 output tiles with 16 multiplications per tile and channel pair instead of 36. Tiles are
// numbered image by image, row-major: tiles_h = ceil(out_h / 2), tiles_w = ceil(out_w / 2).
constexpr int64_t kWinogradPanel = 64;  // output channels per packed weight panel
struct WinogradConvArgs {
  int64_t in_h = 0, in_w = 0, channels = 0;        // C
  int64_t out_h = 0, out_w = 0, out_channels = 0;  // K
  int64_t pad_top = 0, pad_left = 0;
  int64_t block_tiles = 0;                // most tiles per call: the scratch's row count
  const float* x = nullptr;               // [N][in_h][in_w][C]
  const float* weights = nullptr;         // WinogradPackWeightsF32's layout, 64-byte aligned
  const float* direct_weights = nullptr;  // W [K][C][3][3], for outputs that are not finite
  const float* bias = nullptr;            // [panels * 64], zeros where there is no bias
  const float* z = nullptr;               // residual [N][out_h][out_w][K], or null; may equal y
  float* y = nullptr;                     // [N][out_h][out_w][K]
  VectorActivation activation = VectorActivation::kNone;
  float clip_lo = 0, clip_hi = 0;
};
// Floats of WinogradPackWeightsF32's output: ceil(K / 64) panels of [16][C][64].
inline int64_t WinogradPackedFloats(int64_t out_channels, int64_t channels) {
  return (out_channels + kWinogradPanel - 1) / kWinogradPanel * 16 * channels * kWinogradPanel;
}
// Floats of scratch one WinogradConvF32 call needs (64-byte aligned).
inline int64_t WinogradScratchFloats(int64_t block_tiles, int64_t channels) {
  return 16 * block_tiles * (channels + kWinogradPanel);
}
// W [K][C][3][3] transformed (G g G^T, computed in double) into panels of 64 output channels:
// packed[panel][position][c][k % 64], zeros past K.
void WinogradPackWeightsF32(const float* w, int64_t out_channels, int64_t channels, float* packed);
// y = act(conv(x, w) + bias + z) for tiles [tile_begin, tile_end) (at most block_tiles) and
// output channels of panels [panel_begin, panel_end). Writes only the outputs of those tiles and
// channels, so disjoint ranges may run concurrently with separate scratch. An output that comes
// out non-finite (before the activation) is recomputed by direct summation, so Inf and NaN
// propagate as in a direct convolution: only to the outputs whose window holds them.
void WinogradConvF32(const WinogradConvArgs& args, int64_t tile_begin, int64_t tile_end,
                     int64_t panel_begin, int64_t panel_end, float* scratch);

// ---- block-sparse products (sparse_gemm_hwy.cc) ----
// Y[rows][M] = X[rows][K] W^T with a constant W [M][K] stored as blocks of `block` (16, 32 or
// 64) consecutive output channels at one input channel, only the blocks that are not all zero:
// what a 1x1 convolution or a MatMul with a constant B computes when the weights were pruned in
// groups along the output channels (`onyx prune --block 16|32`). Each stored block costs
// block / lanes vectors of W and one broadcast of X per row, shared by those vectors, so the
// work falls with the fraction of zero blocks and wider blocks need fewer broadcasts.
constexpr int64_t kSparseBlock = 16;     // the narrowest block
constexpr int64_t kMaxSparseBlock = 64;  // the widest
struct BlockSparseWeights {
  int64_t k = 0, m = 0;              // input and output channels
  int64_t block = kSparseBlock;      // output channels per block: 16, 32 or 64
  std::vector<int32_t> block_start;  // [blocks + 1]: block b's entries are [start[b], start[b+1])
  std::vector<int32_t> channel;      // per entry: its input channel, increasing within a block
  hwy::AlignedFreeUniquePtr<float[]> values;  // per entry `block` floats, zeros past M
  int64_t blocks() const { return (m + block - 1) / block; }
  int64_t entries() const { return block_start.empty() ? 0 : block_start.back(); }
};
// Packs W(co, ci) = w[co * m_stride + ci * k_stride] (co < m, ci < k) in blocks of `block` (16,
// 32 or 64); a block is left out when its values are all zero (either sign). Null `values` when
// the allocation fails.
BlockSparseWeights PackBlockSparse(const float* w, int64_t m, int64_t k, int64_t m_stride,
                                   int64_t k_stride, int64_t block = kSparseBlock);
struct BlockSparseGemmArgs {
  const BlockSparseWeights* w = nullptr;
  const float* x = nullptr;  // rows of K floats, lda apart
  int64_t lda = 0;
  const float* bias = nullptr;  // [blocks * w->block], zeros where there is no bias
  const float* z = nullptr;     // residual rows of M floats (as y), or null; may equal y
  float* y = nullptr;           // rows of M floats, M apart
  // W as given to PackBlockSparse, for rows of X holding Inf or NaN: those are summed over every
  // channel, so that a NaN or Inf meets the zero weights as in a dense product.
  const float* dense_w = nullptr;
  int64_t dense_m_stride = 0, dense_k_stride = 0;
  VectorActivation activation = VectorActivation::kNone;
  float clip_lo = 0, clip_hi = 0;
};
// y = act(x W^T + bias + z) for rows [row_begin, row_end) and output blocks [block_begin,
// block_end): float sums in increasing input-channel order; writes only those rows and blocks,
// so disjoint ranges may run concurrently.
void BlockSparseGemmF32(const BlockSparseGemmArgs& args, int64_t row_begin, int64_t row_end,
                        int64_t block_begin, int64_t block_end);

// ---- rows times a panel-packed matrix (panel_gemv_hwy.cc) ----
// B is [K, N] stored in panels of `panel` columns: B(k, n) = b[(n / panel) * panel_stride +
// k * ldb + n % panel] (oneDNN's blocked weights, e.g. BA16a64b with K a multiple of 16 apart,
// ldb = panel; with b_padded the last panel's columns past N are read and must be finite: oneDNN
// pads them with zeros).
// Any number of rows runs (blocks of five per panel); a product with a packed constant B reads it
// here up to four rows, where one pass over B is all the time: with more, oneDNN's brgemm was
// 5-15% faster (its prefetching and K blocking), the reason to make a primitive.
constexpr int64_t kPanelGemvMaxRows = 4;
struct PanelGemvArgs {
  const float* a = nullptr;  // rows x K, rows lda apart
  int64_t lda = 0;
  int64_t rows = 0;  // >= 1
  const float* b = nullptr;
  int64_t panel = 0, panel_stride = 0;
  // Floats between B's rows inside a panel: `panel` when packed. A plain row-major [K, N]
  // matrix is panel = PanelGemvPlainPanel(), panel_stride = panel, ldb = N, b_padded = false.
  int64_t ldb = 0;
  bool b_padded = true;  // false: nothing is read at or past column N
  int64_t k = 0, n = 0;
  float alpha = 1.f;
  const float* bias = nullptr;  // [N], or one value when bias_scalar; null: none
  bool bias_scalar = false;
  const float* z = nullptr;  // rows x N laid out like y, or null
  float* y = nullptr;        // rows x N, rows ldy apart
  int64_t ldy = 0;
};
// Whether this CPU's target splits a panel of `panel` columns into whole vectors.
bool PanelGemvTakesPanel(int64_t panel);
// The panel width for reading a plain row-major B: four vectors of this CPU's target.
int64_t PanelGemvPlainPanel();
// y = alpha * a B + bias + z for the columns of panels [begin, end): float sums in k order, no
// write outside them, so disjoint panel ranges may run concurrently.
void PanelGemvF32(const PanelGemvArgs& args, int64_t begin, int64_t end);
// The [K, N] matrix whose column n is row n of `rows_nk` ([N, K] row-major, a weight as ONNX
// stores W of y = x W^T), packed for PanelGemvF32 in column panels of `panel` floats: panel p
// holds columns [p * panel, (p + 1) * panel) as K rows of `panel` floats, zero past N. Read it
// with panel, panel_stride = K * panel, ldb = panel, b_padded = true.
std::vector<float> PackColumnPanels(const float* rows_nk, int64_t n, int64_t k, int64_t panel);

// One step of ONNX's LSTM cell with the default activations (Sigmoid, Tanh, Tanh), no clip, no
// peepholes: for each of `batch` rows, `gates` holds the pre-activations i, o, f, c (hidden each);
// c becomes f * c + i * tanh(gc) and h becomes o * tanh(c), in place.
void LstmCellF32(const float* gates, int64_t batch, int64_t hidden, float* c, float* h);

// ONNX's GRU cell with the default activations (Sigmoid, Tanh), no clip. For each of `batch` rows,
// xw holds X_t W^T plus biases and hr the recurrent products, both gates z, r, h (hidden each).
// linear_before_reset = 1: xw's h gate holds Wbh, hr's h gate H_{t-1} Rh^T + Rbh; h becomes
// (1 - z) tanh(xw_h + r hr_h) + z h, in place.
void GruCellF32(const float* xw, const float* hr, int64_t batch, int64_t hidden, float* h);
// linear_before_reset = 0, before the h gate's product: hr's z gate becomes sigmoid(xw_z + hr_z)
// and rh (batch x hidden) becomes sigmoid(xw_r + hr_r) h. Reads hr's z and r gates only.
void GruResetF32(const float* xw, float* hr, int64_t batch, int64_t hidden, const float* h,
                 float* rh);
// linear_before_reset = 0, after it: hr's h gate holds (r h) Rh^T and xw's both biases; h becomes
// (1 - z) tanh(xw_h + hr_h) + z h with z from GruResetF32, in place.
void GruUpdateF32(const float* xw, const float* hr, int64_t batch, int64_t hidden, float* h);

}  // namespace onyx::kernels::common
