// Every operator's fast kernels, in the order the planner tries them: one list per operator,
// the reference kernel of each definition stays last. A kernel is tried only when the session's
// ISA cap allows the level it needs and its `supports` accepts the node (`onyx plan --why` shows
// each rejection). Adding a kernel for one ISA is its file plus one entry here; the enumerated
// kernel tests and benchmarks (tests/kernels/kernel_grid*) pick it up from the registry.

#include "kernels/activation_rules.h"
#include "kernels/common/common_kernels.h"
#include "kernels/common/highway_dispatch.h"
#include "kernels/op_registry.h"
#include "kernels/ops/transformer_ms_kernels.h"
#include "kernels/reference/fused.h"

#if defined(__x86_64__) || defined(_M_X64)
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
// An entry that exists on x86-64 only (oneDNN, AVX-512 intrinsics).
#define ONYX_X86(...) __VA_ARGS__,
#else
#define ONYX_X86(...)
#endif

#ifdef ONYX_XNNPACK
#include <cstdlib>
#include <cstring>

#include "kernels/arm/xnnpack_kernels.h"
// An entry that exists where XNNPACK is built in (-DONYX_XNNPACK=ON, the AArch64 default).
#define ONYX_XNN(...) __VA_ARGS__,
#else
#define ONYX_XNN(...)
#endif

namespace onyx::kernels {

namespace {
constexpr const char* kMs = "com.microsoft";
}  // namespace

void SetKernelLists(OpRegistry& r) {
  using namespace common;  // NOLINT(build/namespaces): the list reads as a table
  (void)HighwayLevel();    // ONYX_ISA's cap on Highway's targets, before any kernel runs
#if defined(__x86_64__) || defined(_M_X64)
  x86::CapOnednn();  // before any kernel asks oneDNN anything
#endif
  const std::string onyx = kOnyxDomain;

  // ---- data movement ----
  r.SetKernels("", "Reshape", {ReshapeViewKernel()});
  r.SetKernels("", "Flatten", {FlattenViewKernel()});
  r.SetKernels("", "Squeeze", {SqueezeViewKernel("Squeeze")});
  r.SetKernels("", "Unsqueeze", {SqueezeViewKernel("Unsqueeze")});
  r.SetKernels("", "Gather", {GatherMemcpyKernel()});
  r.SetKernels("", "Cast", {CastConvertKernel()});
  r.SetKernels("", "Concat", {ConcatMemcpyKernel()});
  r.SetKernels("", "Split", {SplitMemcpyKernel()});
  r.SetKernels("", "Slice", {SliceMemcpyKernel()});
  r.SetKernels("", "Transpose", {TransposeTiledKernel()});

  // ---- elementwise ----
  for (const auto& [op, kind] : {std::pair{"Add", BinaryOp::kAdd},
                                 {"Sub", BinaryOp::kSub},
                                 {"Mul", BinaryOp::kMul},
                                 {"Div", BinaryOp::kDiv}})
    r.SetKernels("", op, {BinaryHwyKernel(op, kind)});
  for (const auto& [op, kind] :
       {std::pair{"Sum", BinaryOp::kAdd}, {"Max", BinaryOp::kMax}, {"Min", BinaryOp::kMin}})
    r.SetKernels("", op, {VariadicHwyKernel(op, kind)});
  r.SetKernels("", "Pow", {PowHwyKernel()});
  r.SetKernels("", "PRelu", {PReluHwyKernel()});
  // The activations with a Highway loop: the table's rows (kernels/activation_rules.cc).
  for (const ActivationRule& rule : ActivationRules())
    if (rule.has_unary_op && rule.kind != ActivationKind::kGeluTanh)  // Gelu's row picks its form
      r.SetKernels("", rule.op_type, {UnaryHwyKernel(rule.op_type, rule.unary_op)});
  for (const auto& [op, kind] : {std::pair{"Erf", UnaryOp::kErf},
                                 {"Exp", UnaryOp::kExp},
                                 {"Log", UnaryOp::kLog},
                                 {"Sqrt", UnaryOp::kSqrt},
                                 {"Neg", UnaryOp::kNeg},
                                 {"Abs", UnaryOp::kAbs},
                                 {"Reciprocal", UnaryOp::kReciprocal}})
    r.SetKernels("", op, {UnaryHwyKernel(op, kind)});
  r.SetKernels(onyx, "ReplaceNaN", {ReplaceNaNHwyKernel()});

  // ---- softmax, reductions, normalization ----
  r.SetKernels("", "Softmax", {SoftmaxHwyKernel("Softmax", SoftmaxKind::kSoftmax)});
  r.SetKernels("", "LogSoftmax", {SoftmaxHwyKernel("LogSoftmax", SoftmaxKind::kLogSoftmax)});
  // ReduceSum takes its axes as an input from opset 13, the others from 18.
  for (const auto& [op, kind, since] : {std::tuple{"ReduceSum", ReduceKind::kSum, 13},
                                        {"ReduceMean", ReduceKind::kMean, 18},
                                        {"ReduceMax", ReduceKind::kMax, 18},
                                        {"ReduceMin", ReduceKind::kMin, 18},
                                        {"ReduceSumSquare", ReduceKind::kSumSquare, 18},
                                        {"ReduceL2", ReduceKind::kL2, 18}})
    r.SetKernels("", op, {ReduceHwyKernel(op, kind, since)});
  r.SetKernels("", "LayerNormalization", {LayerNormHwyKernel()});
  r.SetKernels("", "BatchNormalization", {BatchNormHwyKernel()});
  r.SetKernels(onyx, "ChannelAffine", {ChannelAffineHwyKernel(false)});
  r.SetKernels(onyx, "NhwcChannelAffine", {ChannelAffineHwyKernel(true)});
  r.SetKernels(onyx, "SkipLayerNormalization", {SkipLayerNormHwyKernel()});
  r.SetKernels(kMs, "SkipLayerNormalization", {MsSkipLayerNormHwyKernel()});
  r.SetKernels(kMs, "SkipSimplifiedLayerNormalization", {MsSkipSimplifiedLayerNormHwyKernel()});
  r.SetKernels(kMs, "EmbedLayerNormalization", {MsEmbedLayerNormHwyKernel()});
  r.SetKernels("", "LRN", {ONYX_X86(x86::LrnOnednnImpl("LRN_f32_onednn"))});
  r.SetKernels(onyx, "NhwcLRN", {ONYX_X86(x86::LrnOnednnImpl("NhwcLRN_f32_onednn"))});

  // ---- convolutions: few output positions, block-sparse 1x1, Winograd 3x3 where it measured
  // faster than oneDNN, oneDNN, depthwise ----
  r.SetKernels("", "Conv",
               {SmallConvHwyKernel("Conv"), ONYX_X86(x86::ConvOnednnImpl("Conv_f32_onednn"))});
  r.SetKernels(
      onyx, "FusedConv",
      {SmallConvHwyKernel("FusedConv"), ONYX_X86(x86::ConvOnednnImpl("FusedConv_f32_onednn"))});
  r.SetKernels(
      onyx, "NhwcConv",
      {ONYX_XNN(arm::ConvXnnpackImpl("NhwcConv_f32_xnnpack")) SmallConvHwyKernel("NhwcConv"),
       BlockSparseConvKernel(), WinogradConvHwyKernel(),
       ONYX_X86(x86::ConvOnednnImpl("NhwcConv_f32_onednn")) DepthwiseConvHwyKernel()});
  r.SetKernels("", "ConvTranspose",
               {ONYX_X86(x86::ConvTransposeOnednnImpl("ConvTranspose_f32_onednn"))});

  // ---- pooling ----
  for (const char* op : {"MaxPool", "AveragePool"})
    r.SetKernels("", op, {ONYX_X86(x86::PoolOnednnImpl(std::string(op) + "_f32_onednn"))});
  for (const auto& [op, kind] :
       {std::pair{"GlobalAveragePool", ReduceKind::kMean}, {"GlobalMaxPool", ReduceKind::kMax}})
    r.SetKernels("", op,
                 {ONYX_X86(x86::PoolOnednnImpl(std::string(op) + "_f32_onednn"))
                      GlobalPoolHwyKernel(op, kind)});
  r.SetKernels(onyx, "NhwcMaxPool",
               {ONYX_XNN(arm::MaxPoolXnnpackImpl("NhwcMaxPool_f32_xnnpack"))
                    ONYX_X86(x86::PoolOnednnImpl("NhwcMaxPool_f32_onednn"))});
  r.SetKernels(onyx, "NhwcAveragePool",
               {ONYX_XNN(arm::AveragePoolXnnpackImpl("NhwcAveragePool_f32_xnnpack"))
                    ONYX_X86(x86::PoolOnednnImpl("NhwcAveragePool_f32_onednn"))});

  // ---- matrix products: block-sparse constant weights, then oneDNN ----
  for (const auto& [domain, op] :
       {std::pair<std::string, std::string>{"", "MatMul"}, {"", "Gemm"}, {onyx, "FusedMatMul"}})
    r.SetKernels(
        domain, op,
        {ONYX_XNN(arm::FullyConnectedXnnpackImpl(op + "_f32_xnnpack")) BlockSparseMatMulKernel(op),
         ONYX_X86(x86::MatMulOnednnImpl(op + "_f32_onednn"))});
  r.SetKernels(kMs, "MatMulNBits", {MsMatMulNBitsHwyKernel()});

  // ---- attention and the GELU family ----
  r.SetKernels("", "Attention", {ONYX_X86(x86::AttentionOnednnImpl("Attention_f32_onednn"))});
  r.SetKernels(kMs, "Attention", {MsAttentionHwyKernel()});
  r.SetKernels(kMs, "MultiHeadAttention", {MsMultiHeadAttentionHwyKernel()});
  r.SetKernels(kMs, "GroupQueryAttention", {MsGroupQueryAttentionHwyKernel()});
  r.SetKernels(kMs, "Gelu", {MsGeluHwyKernel()});
  r.SetKernels(kMs, "BiasGelu", {MsBiasGeluHwyKernel()});
  r.SetKernels(kMs, "FastGelu", {MsFastGeluHwyKernel()});
  r.SetKernels(kMs, "QuickGelu", {MsQuickGeluHwyKernel()});

  // ---- recurrent ----
  r.SetKernels("", "LSTM", {LstmHwyKernel()});
  r.SetKernels("", "GRU", {GruHwyKernel()});
  r.SetKernels("", "RNN", {RnnHwyKernel()});

  // ---- quantization: 8-bit convolutions and products on oneDNN's int8 kernels ----
  r.SetKernels("", "QuantizeLinear", {QuantizeLinearHwyKernel()});
  r.SetKernels("", "DequantizeLinear", {DequantizeLinearHwyKernel()});
  r.SetKernels("", "DynamicQuantizeLinear", {DynamicQuantizeLinearHwyKernel()});
  r.SetKernels("", "ConvInteger",
               {ONYX_X86(x86::ConvIntegerOnednnImpl("ConvInteger_8bit_onednn"))});
  r.SetKernels("", "QLinearConv",
               {ONYX_X86(x86::QLinearConvOnednnImpl("QLinearConv_8bit_onednn"))});
  r.SetKernels(onyx, "NhwcQLinearConv",
               {ONYX_X86(x86::QLinearConvOnednnImpl("NhwcQLinearConv_8bit_onednn"))});
  r.SetKernels("", "MatMulInteger",
               {ONYX_X86(x86::QuantizedMatMulOnednnImpl("MatMulInteger_8bit_onednn"))});
  r.SetKernels(kMs, "MatMulIntegerToFloat",
               {ONYX_X86(x86::QuantizedMatMulOnednnImpl("MatMulIntegerToFloat_8bit_onednn"))});
  r.SetKernels(kMs, "QGemm", {ONYX_X86(x86::QuantizedMatMulOnednnImpl("QGemm_8bit_onednn"))});
  r.SetKernels(onyx, "QLinearLookup",
               {ONYX_X86(x86::QLinearLookupVbmiImpl("QLinearLookup_8bit_vbmi"))});

#ifdef ONYX_XNNPACK
  // Test-only: ONYX_XNNPACK_WITHOUT_ONEDNN=1 drops oneDNN's kernels, so that an x86-64 build
  // plans (layout pass included) with the kernel set of an AArch64 build, which has no oneDNN.
  const char* without_onednn = std::getenv("ONYX_XNNPACK_WITHOUT_ONEDNN");
  if (without_onednn && std::strcmp(without_onednn, "1") == 0)
    r.RemoveImpls([](const KernelImpl& k) { return std::strcmp(k.isa.library, "onednn") == 0; });
#endif
}

}  // namespace onyx::kernels
