// The determinism audit (docs/determinism.md): which kernel implementations compute every output
// element the same way at every thread count. A kernel passes when its threads split only
// independent outputs (each element summed by one thread in a fixed order), or when the partial
// results it combines are split by the shape alone, or are exact whatever the order (integer sums,
// min and max). Impls not listed here are refused in deterministic mode.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kernels/op_registry.h"

namespace onyx::kernels {

const std::vector<std::pair<std::string, std::string>>& ThreadInvariantKernels() {
  // Reasons, shared by the entries of one family.
  static const char* kElementwise = "elementwise: threads split the elements";
  static const char* kRows = "threads split rows; each row reduced by one thread in order";
  static const char* kMovement = "data movement: no arithmetic";
  static const char* kOutputs =
      "threads split output pixels and channels; each output summed in one fixed order";
  static const char* kReduce =
      "threads split rows; a long row splits into parts fixed by its length (not by the thread "
      "count), combined in order in double; min and max are exact in any order";
  static const char* kRecurrent =
      "threads split the gate columns of each step's products (PanelWeightsProduct)";
  static const char* kOnednnF32 =
      "oneDNN 2.6 forward primitive (brgconv, brgconv_1x1, brdgmm_dw, jit conv, brg matmul f32 "
      "on avx512_core): threads split outputs, not the reduction dimension for f32 (as read: the "
      "matmul's K split is in its AMX blocking, bf16 and int8; checked bitwise at 1-4 threads); "
      "Winograd is not used in deterministic mode";
  static const char* kOnednnInt8 =
      "oneDNN int8 primitive: int32 accumulation is exact in any order, scales are applied per "
      "output after it";
  static const char* kOnednnOther =
      "oneDNN pooling/LRN/softmax/binary: threads split outputs; windows and rows reduced by one "
      "thread";
  static const std::vector<std::pair<std::string, std::string>> table = [] {
    std::vector<std::pair<std::string, std::string>> t;
    auto add = [&t](std::initializer_list<const char*> names, const char* why) {
      for (const char* n : names) t.emplace_back(n, why);
    };
    add({"Abs_f32_hwy",
         "Add_f32_hwy",
         "BiasGelu_f32_hwy",
         "Clip_f32_hwy",
         "Div_f32_hwy",
         "Elu_f32_hwy",
         "Erf_f32_hwy",
         "Exp_f32_hwy",
         "FastGelu_f32_hwy",
         "Gelu_f32_hwy",
         "HardSigmoid_f32_hwy",
         "HardSwish_f32_hwy",
         "LeakyRelu_f32_hwy",
         "Log_f32_hwy",
         "Max_f32_hwy",
         "Min_f32_hwy",
         "Mish_f32_hwy",
         "Mul_f32_hwy",
         "Neg_f32_hwy",
         "Pow_f32_hwy",
         "PRelu_f32_hwy",
         "QuickGelu_f32_hwy",
         "Reciprocal_f32_hwy",
         "Relu_f32_hwy",
         "ReplaceNaN_f32_hwy",
         "Sigmoid_f32_hwy",
         "Softplus_f32_hwy",
         "Sqrt_f32_hwy",
         "Sub_f32_hwy",
         "Sum_f32_hwy",
         "Tanh_f32_hwy",
         "Cast_any_convert",
         "ChannelAffine_f32_hwy",
         "NhwcChannelAffine_f32_hwy",
         "BatchNormalization_f32_hwy",
         "QuantizeLinear_f32_hwy",
         "DequantizeLinear_f32_hwy",
         "QLinearLookup_8bit_vbmi"},
        kElementwise);
    add({"DynamicQuantizeLinear_f32_hwy"},
        "elementwise, after a min and max over parts merged in any order (exact)");
    add({"Softmax_f32_hwy", "LogSoftmax_f32_hwy", "LayerNormalization_f32_hwy",
         "SkipLayerNormalization_f32_hwy", "SkipSimplifiedLayerNormalization_f32_simd",
         "EmbedLayerNormalization_f32_hwy"},
        kRows);
    add({"ReduceSum_f32_hwy", "ReduceMean_f32_hwy", "ReduceMax_f32_hwy", "ReduceMin_f32_hwy",
         "ReduceSumSquare_f32_hwy", "ReduceL2_f32_hwy", "GlobalAveragePool_f32_hwy",
         "GlobalMaxPool_f32_hwy"},
        kReduce);
    add({"Concat_any_memcpy", "Gather_any_memcpy", "Slice_any_memcpy", "Split_any_memcpy",
         "Transpose_any_tiled", "Flatten_any_view", "Reshape_any_view", "Squeeze_any_view",
         "Unsqueeze_any_view"},
        kMovement);
    add({"Conv_f32_small_hwy", "FusedConv_f32_small_hwy", "NhwcConv_f32_small_hwy",
         "NhwcConv_f32_dw_hwy"},
        kOutputs);
    add({"NhwcConv_f32_hwy"},
        "onyx's Winograd F(2x2,3x3): blocks of tiles follow the thread count, but each tile's "
        "products run one multiply-add chain over the channels in order, whatever its block");
    add({"LSTM_f32_hwy", "GRU_f32_hwy", "RNN_f32_hwy"}, kRecurrent);
    add({"NhwcConv_f32_sparse", "MatMul_f32_sparse", "Gemm_f32_sparse", "FusedMatMul_f32_sparse"},
        "block-sparse product (RunBlockSparse): rows split into chunks fixed by the row count, "
        "blocks of 16 or 32 output channels split into groups by the thread count; each output "
        "summed "
        "over its block's input channels in increasing order by one thread");
    add({"MatMulNBits_f32_hwy"}, "threads split output columns; each dot product in order");
    add({"Attention_f32_hwy", "MultiHeadAttention_f32_hwy", "GroupQueryAttention_f32_hwy"},
        "threads split (batch, head) pairs");
    add({"TreeEnsemble_forest"}, "threads split rows; each row sums its trees in order");
    add({"Conv_f32_onednn", "FusedConv_f32_onednn", "NhwcConv_f32_onednn",
         "ConvTranspose_f32_onednn", "MatMul_f32_onednn", "Gemm_f32_onednn",
         "FusedMatMul_f32_onednn"},
        kOnednnF32);
    add({"Attention_f32_onednn"},
        "oneDNN f32 matmul (as MatMul_f32_onednn) and softmax (rows) per (batch, head)");
    add({"ConvInteger_8bit_onednn", "QLinearConv_8bit_onednn", "NhwcQLinearConv_8bit_onednn",
         "MatMulInteger_8bit_onednn", "MatMulIntegerToFloat_8bit_onednn", "QGemm_8bit_onednn"},
        kOnednnInt8);
    add({"MaxPool_f32_onednn", "AveragePool_f32_onednn", "GlobalAveragePool_f32_onednn",
         "GlobalMaxPool_f32_onednn", "NhwcMaxPool_f32_onednn", "NhwcAveragePool_f32_onednn",
         "LRN_f32_onednn", "NhwcLRN_f32_onednn"},
        kOnednnOther);
#ifdef ONYX_XNNPACK
    add({"NhwcConv_f32_xnnpack", "MatMul_f32_xnnpack", "Gemm_f32_xnnpack",
         "FusedMatMul_f32_xnnpack"},
        "XNNPACK (Debian's 2022-02 snapshot) GEMM, IGEMM and depthwise micro-kernels: threads "
        "split tiles of output rows and columns (the column tile follows the thread count), and "
        "one micro-kernel call sums each output's whole reduction (every tap and input channel) "
        "in a fixed order; the epilogue is elementwise. Checked bitwise at 1-3 threads "
        "(tests/kernels/xnnpack_test.cc)");
    add({"NhwcMaxPool_f32_xnnpack", "NhwcAveragePool_f32_xnnpack"},
        "XNNPACK pooling: threads split output rows (global average: images); each window is "
        "reduced by one micro-kernel call in a fixed order");
#endif
    return t;
  }();
  return table;
}

std::vector<std::string> MarkThreadInvariantKernels(OpRegistry& r) {
  std::set<std::string> audited, seen;
  for (const auto& [name, why] : ThreadInvariantKernels()) audited.insert(name);
  // Reference kernels (each definition's last impl) parallelise only over independent outputs
  // (kernels/reference: rows, channels, output elements, (batch, head) tasks, tree-ensemble row
  // blocks) and draw random numbers on one thread.
  r.MarkImpls([&](const std::string& name, bool last) {
    if (audited.count(name)) seen.insert(name);
    return last || audited.count(name) > 0;
  });
  std::vector<std::string> stale;
  for (const std::string& name : audited)
    if (!seen.count(name)) stale.push_back(name);
  return stale;
}

}  // namespace onyx::kernels
