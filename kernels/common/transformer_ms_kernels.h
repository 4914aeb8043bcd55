// Fast kernels of the com.microsoft transformer operators (kernels/ops/transformer_ms.cc):
// MatMulNBits with 4-bit weights, which dequantises the weights block by block as it streams
// them (nbits_hwy.cc: the weights stay in ORT's packed layout, half a byte each, so a decoder step
// reads an eighth of what a float copy would), and the attention core of Attention,
// MultiHeadAttention and GroupQueryAttention (ms_attention_kernel.cc).
#pragma once

#include <cstdint>

#include "kernels/reference/transformer_ms.h"

namespace onyx::kernels::common {

// reference::MsAttention's contract, with the products on the panel GEMM's SIMD loops and the
// softmax's exponentials on onyx's SIMD exp (about 2 ulp): heads split between up to `threads`
// threads.
void MsAttentionF32(const reference::MsAttentionArgs& args, int threads);

// y[m * ldy + n] = sum over blocks of (q[n, k] - zero[n, blk]) * scale[n, blk] * a[m, k] (+
// bias[n]) for m < rows, n in [n0, n1), with q the 4-bit values of B [N, k_blocks, block/2] (low
// nibble first). `a_perm` holds A reordered per block to match the nibbles: for each row, for each
// block, its even elements then its odd ones, zero past K (NBits4PermuteA). Float sums in block
// order; they may differ from the reference's double sums by float rounding. Nothing outside [n0,
// n1) is written, so disjoint ranges may run concurrently.
struct NBits4Args {
  const uint8_t* b = nullptr;       // [N, k_blocks, block / 2]
  const float* scales = nullptr;    // [N * k_blocks]
  const float* zeros = nullptr;     // [N * k_blocks], zero points as floats (8 when B has none)
  int64_t k_blocks = 0, block = 0;  // block: even, >= 16
  const float* a_perm = nullptr;    // rows x (k_blocks * block)
  int64_t rows = 0;
  const float* bias = nullptr;  // [N] or null
  float* y = nullptr;
  int64_t ldy = 0;
};
void MatMulNBits4F32(const NBits4Args& args, int64_t n0, int64_t n1);

// a_perm (rows x k_blocks * block) from a (rows x k, rows lda apart), laid out for
// MatMulNBits4F32.
void NBits4PermuteA(const float* a, int64_t rows, int64_t lda, int64_t k, int64_t k_blocks,
                    int64_t block, float* a_perm);

// Rows [n0, n1) of W dequantised from the same operands, in a_perm's order: row n at
// w + (n - n0) * k_blocks * block, each block's even elements then its odd ones (so that
// a_perm . w^T = A . W^T).
void NBits4Dequantize(const NBits4Args& args, int64_t n0, int64_t n1, float* w);

}  // namespace onyx::kernels::common
