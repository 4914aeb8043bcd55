// Registers the x86-64 kernels (oneDNN primitives, AVX-512 intrinsics) in front of the portable and
// reference ones.
#include "kernels/op_registry.h"
#include "kernels/x86/attention_onednn.h"
#include "kernels/x86/conv_integer_onednn.h"
#include "kernels/x86/conv_onednn.h"
#include "kernels/x86/conv_transpose_onednn.h"
#include "kernels/x86/lrn_onednn.h"
#include "kernels/x86/matmul_onednn.h"
#include "kernels/x86/onednn_context.h"
#include "kernels/x86/pool_onednn.h"
#include "kernels/x86/qconv_onednn.h"
#include "kernels/x86/qlookup_vbmi.h"
#include "kernels/x86/qmatmul_onednn.h"

namespace onyx::kernels {

namespace common {
void RegisterWinogradConvFast(OpRegistry& r);  // kernels/common/winograd_conv_kernel.cc
void RegisterSparseConvFast(OpRegistry& r);    // kernels/common/sparse_conv_kernel.cc
void RegisterSparseMatMulFast(OpRegistry& r);  // kernels/common/sparse_matmul_kernel.cc
}  // namespace common

void RegisterX86Kernels(OpRegistry& r) {
  x86::CapOnednn();  // before any kernel asks oneDNN anything
  r.PrependImpl("", "Conv", x86::ConvOnednnImpl("Conv_f32_onednn"));
  r.PrependImpl("com.onyx", "FusedConv", x86::ConvOnednnImpl("FusedConv_f32_onednn"));
  r.PrependImpl("com.onyx", "NhwcConv", x86::ConvOnednnImpl("NhwcConv_f32_onednn"));
  r.PrependImpl("", "ConvTranspose", x86::ConvTransposeOnednnImpl("ConvTranspose_f32_onednn"));
  r.PrependImpl("", "MatMul", x86::MatMulOnednnImpl("MatMul_f32_onednn"));
  r.PrependImpl("", "Gemm", x86::MatMulOnednnImpl("Gemm_f32_onednn"));
  r.PrependImpl("com.onyx", "FusedMatMul", x86::MatMulOnednnImpl("FusedMatMul_f32_onednn"));
  r.PrependImpl("", "Attention", x86::AttentionOnednnImpl("Attention_f32_onednn"));
  for (const char* op : {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"})
    r.PrependImpl("", op, x86::PoolOnednnImpl(std::string(op) + "_f32_onednn"));
  for (const char* op : {"NhwcMaxPool", "NhwcAveragePool"})
    r.PrependImpl("com.onyx", op, x86::PoolOnednnImpl(std::string(op) + "_f32_onednn"));
  r.PrependImpl("", "ConvInteger", x86::ConvIntegerOnednnImpl("ConvInteger_8bit_onednn"));
  r.PrependImpl("", "QLinearConv", x86::QLinearConvOnednnImpl("QLinearConv_8bit_onednn"));
  r.PrependImpl("com.onyx", "NhwcQLinearConv",
                x86::QLinearConvOnednnImpl("NhwcQLinearConv_8bit_onednn"));
  r.PrependImpl("", "MatMulInteger", x86::QuantizedMatMulOnednnImpl("MatMulInteger_8bit_onednn"));
  r.PrependImpl("com.microsoft", "MatMulIntegerToFloat",
                x86::QuantizedMatMulOnednnImpl("MatMulIntegerToFloat_8bit_onednn"));
  r.PrependImpl("com.microsoft", "QGemm", x86::QuantizedMatMulOnednnImpl("QGemm_8bit_onednn"));
  r.PrependImpl("com.onyx", "QLinearLookup", x86::QLinearLookupVbmiImpl("QLinearLookup_8bit_vbmi"));
  r.PrependImpl("", "LRN", x86::LrnOnednnImpl("LRN_f32_onednn"));
  r.PrependImpl("com.onyx", "NhwcLRN", x86::LrnOnednnImpl("NhwcLRN_f32_onednn"));
  // In front of oneDNN's convolution for the 3x3 shapes where it measured faster.
  IsaScope highway(r, HighwayIsa());
  common::RegisterWinogradConvFast(r);
  // In front of oneDNN's 1x1 convolution and products when the constant weights are sparse
  // enough.
  common::RegisterSparseConvFast(r);
  common::RegisterSparseMatMulFast(r);
}

}  // namespace onyx::kernels
