// The kernel-family models of kernel_family_cases.h.
#include "tests/engine/kernel_family_cases.h"

#include <cstring>
#include <tuple>

#include "tests/engine/model_builder.h"

namespace onyx::testing {
namespace {

constexpr auto kF = onnx::TensorProto::FLOAT;

// Deterministic values in [-1, 1) from (seed, index): every thread's inputs differ.
std::vector<float> Values(size_t n, uint64_t seed) {
  std::vector<float> v(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& x : v) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    x = static_cast<float>(s >> 40) / static_cast<float>(1 << 23) - 1.f;
  }
  return v;
}

onnx::TensorProto& Weights(ModelBuilder& b, const std::string& name,
                           const std::vector<int64_t>& dims, uint64_t seed, float scale = 0.3f) {
  size_t n = 1;
  for (int64_t d : dims) n *= static_cast<size_t>(d);
  std::vector<float> v = Values(n, seed);
  for (float& x : v) x *= scale;
  return b.FloatInit(name, dims, v);
}

void SetFloatAttr(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

// Conv + Relu, LRN, MaxPool, depthwise Conv, ConvTranspose, AveragePool, GlobalAveragePool.
Case CnnCase() {
  ModelBuilder b;
  b.Input("x", kF, {1, 8, 14, 14});
  b.Output("a", kF, {1, 8, 14, 14});
  b.Output("g", kF, {1, 8, 1, 1});
  Weights(b, "w1", {16, 8, 3, 3}, 1);
  Weights(b, "b1", {16}, 2);
  Weights(b, "wd", {16, 1, 3, 3}, 3);
  Weights(b, "wt", {16, 8, 2, 2}, 4);
  SetIntsAttr(b.Node("Conv", {"x", "w1", "b1"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c"}, {"r"}, "relu");
  SetIntAttr(b.Node("LRN", {"r"}, {"l"}, "lrn"), "size", 3);
  auto& mp = b.Node("MaxPool", {"l"}, {"p"}, "maxpool");
  SetIntsAttr(mp, "kernel_shape", {2, 2});
  SetIntsAttr(mp, "strides", {2, 2});
  auto& dw = b.Node("Conv", {"p", "wd"}, {"d"}, "depthwise");
  SetIntAttr(dw, "group", 16);
  SetIntsAttr(dw, "pads", {1, 1, 1, 1});
  SetIntsAttr(b.Node("ConvTranspose", {"d", "wt"}, {"u"}, "deconv"), "strides", {2, 2});
  auto& ap = b.Node("AveragePool", {"u"}, {"a"}, "avgpool");
  SetIntsAttr(ap, "kernel_shape", {3, 3});
  SetIntsAttr(ap, "pads", {1, 1, 1, 1});
  b.Node("GlobalAveragePool", {"a"}, {"g"}, "gap");
  return {"cnn",
          b.Bytes(),
          {{"x", {1, 8, 14, 14}}},
          // The layout pass puts the convolutions, LRN and MaxPool on channels-last.
          {"NhwcConv_f32_onednn", "NhwcLRN_f32_onednn", "NhwcMaxPool_f32_onednn",
           "ConvTranspose_f32_onednn", "AveragePool_f32_onednn", "GlobalAveragePool_f32_onednn",
           "Transpose_any_tiled"}};
}

// 3x3 convolutions with 32 channels on a 16x16 map: oneDNN's Winograd (AVX-512) on NCHW with
// optimization "basic" (no layout pass), onyx's own F(2x2, 3x3) on channels-last with "all".
Case WinogradCase(OptimizationLevel level) {
  ModelBuilder b;
  b.Input("x", kF, {1, 32, 16, 16});
  b.Output("y", kF, {1, 64, 16, 16});
  Weights(b, "w", {64, 32, 3, 3}, 5, 0.1f);
  Weights(b, "bias", {64}, 6);
  SetIntsAttr(b.Node("Conv", {"x", "w", "bias"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c"}, {"y"}, "relu");
  Case c{level == OptimizationLevel::kAll ? "winograd_f2" : "winograd_onednn",
         b.Bytes(),
         {{"x", {1, 32, 16, 16}}},
         {level == OptimizationLevel::kAll ? "NhwcConv_f32_hwy/winograd"
                                           : "Conv_f32_onednn/winograd"}};
  c.optimization = level;
  return c;
}

// Gemm + Relu (post-op), MatMul + bias + residual (binary post-ops).
Case MatMulCase() {
  ModelBuilder b;
  b.Input("x", kF, {2, 8, 32});
  b.Output("y", kF, {2, 8, 24});
  b.Output("z", kF, {16, 24});
  Weights(b, "w1", {32, 24}, 7);
  Weights(b, "b1", {24}, 8);
  Weights(b, "w2", {24, 24}, 9);
  Weights(b, "c", {24}, 10);
  b.Node("MatMul", {"x", "w1"}, {"m"}, "matmul");
  b.Node("Add", {"m", "b1"}, {"mb"}, "bias");
  b.Node("Relu", {"mb"}, {"h"}, "relu");
  b.Node("MatMul", {"h", "w2"}, {"m2"}, "matmul2");
  b.Node("Add", {"m2", "h"}, {"y"}, "residual");
  Weights(b, "shape", {2}, 0);
  auto& shape = *b.graph().mutable_initializer(b.graph().initializer_size() - 1);
  shape.set_data_type(onnx::TensorProto::INT64);
  const int64_t dims[2] = {16, 24};
  shape.set_raw_data(std::string(reinterpret_cast<const char*>(dims), sizeof(dims)));
  b.Node("Reshape", {"y", "shape"}, {"y2"}, "flatten");
  auto& gemm = b.Node("Gemm", {"y2", "w2", "c"}, {"gm"}, "gemm");
  SetFloatAttr(gemm, "alpha", 0.5f);
  b.Node("Sigmoid", {"gm"}, {"z"}, "sigmoid");
  return {"matmul", b.Bytes(), {{"x", {2, 8, 32}}}, {"FusedMatMul_f32_onednn"}};
}

// ai.onnx Attention (the target of the attention fusion) with an additive mask.
Case AttentionCase() {
  ModelBuilder b(23, 10);
  b.Input("q", kF, {2, 16, 64});
  b.Input("k", kF, {2, 24, 64});
  b.Input("v", kF, {2, 24, 64});
  b.Input("mask", kF, {16, 24});
  b.Output("y", kF, {2, 16, 64});
  auto& n = b.Node("Attention", {"q", "k", "v", "mask"}, {"y"}, "attention");
  SetIntAttr(n, "q_num_heads", 4);
  SetIntAttr(n, "kv_num_heads", 4);
  Case c{"attention",
         b.Bytes(),
         {{"q", {2, 16, 64}}, {"k", {2, 24, 64}}, {"v", {2, 24, 64}}, {"mask", {16, 24}}},
         {"Attention_f32_onednn"}};
  // One step per run: more rounds, so that the race of issue 19 (P x V sharing oneDNN's
  // scratchpad) fails this test reliably.
  c.wanted_overlaps = 300;
  return c;
}

// Highway kernels: LayerNormalization, binary and unary elementwise, Softmax, Transpose,
// reductions.
Case HighwayCase() {
  ModelBuilder b;
  b.Input("x", kF, {4, 16, 40});
  b.Output("sm", kF, {4, 16, 40});
  b.Output("r", kF, {4, 40, 1});
  Weights(b, "scale", {40}, 11);
  Weights(b, "shift", {40}, 12);
  Weights(b, "g", {16, 40}, 13);
  SetIntAttr(b.Node("LayerNormalization", {"x", "scale", "shift"}, {"ln"}, "ln"), "axis", -1);
  b.Node("Mul", {"ln", "g"}, {"m"}, "mul");
  b.Node("Tanh", {"m"}, {"s"}, "tanh");
  b.Node("Add", {"s", "x"}, {"a"}, "add");
  SetIntAttr(b.Node("Softmax", {"a"}, {"sm"}, "softmax"), "axis", -1);
  SetIntsAttr(b.Node("Transpose", {"a"}, {"t"}, "transpose"), "perm", {0, 2, 1});
  SetIntsAttr(b.Node("ReduceMean", {"t"}, {"r"}, "reduce"), "axes", {2});
  return {"highway",
          b.Bytes(),
          {{"x", {4, 16, 40}}},
          {"LayerNormalization_f32_hwy", "Softmax_f32_hwy", "Transpose_any_tiled",
           "ReduceMean_f32_hwy"}};
}

// QDQ: QuantizeLinear and DequantizeLinear per tensor (uint8) and per channel (int8), and
// DynamicQuantizeLinear, on a tensor large enough to be split between threads.
Case QuantizeCase() {
  const std::vector<int64_t> shape = {1, 64, 64, 64};
  ModelBuilder b(21);
  b.Input("x", kF, shape);
  for (const char* y : {"y1", "y2", "y3"}) b.Output(y, kF, shape);
  b.FloatInit("s", {}, {0.006f});  // x in [-1, 1): x / 0.006 + 128 saturates at both ends
  std::vector<float> cs(64);
  std::string zp_u8(1, static_cast<char>(128)), zp_i8(64, 0);
  for (int c = 0; c < 64; ++c) {
    cs[c] = 0.002f + 0.0005f * static_cast<float>(c);
    zp_i8[c] = static_cast<char>(c - 32);
  }
  b.FloatInit("cs", {64}, cs);
  for (auto [name, type, bytes] : {std::tuple{"z", onnx::TensorProto::UINT8, &zp_u8},
                                   std::tuple{"cz", onnx::TensorProto::INT8, &zp_i8}}) {
    onnx::TensorProto& t = *b.graph().add_initializer();
    t.set_name(name);
    t.set_data_type(type);
    if (bytes->size() > 1) t.add_dims(static_cast<int64_t>(bytes->size()));
    t.set_raw_data(*bytes);
  }
  b.Node("QuantizeLinear", {"x", "s", "z"}, {"q1"}, "q1");
  b.Node("DequantizeLinear", {"q1", "s", "z"}, {"y1"}, "dq1");
  b.Node("QuantizeLinear", {"x", "cs", "cz"}, {"q2"}, "q2");
  b.Node("DequantizeLinear", {"q2", "cs", "cz"}, {"y2"}, "dq2");
  b.Node("DynamicQuantizeLinear", {"x"}, {"q3", "s3", "z3"}, "dynamic");
  b.Node("DequantizeLinear", {"q3", "s3", "z3"}, {"y3"}, "dq3");
  return {"quantize",
          b.Bytes(),
          {{"x", shape}},
          {"QuantizeLinear_f32_hwy", "DequantizeLinear_f32_hwy", "DynamicQuantizeLinear_f32_hwy"}};
}

// An 8-bit initializer (raw bytes; scalar when `dims` is empty).
void ByteInit(ModelBuilder& b, const std::string& name, int32_t type,
              const std::vector<int64_t>& dims, const std::string& bytes) {
  onnx::TensorProto& t = *b.graph().add_initializer();
  t.set_name(name);
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(bytes);
}

// Integer paths: DynamicQuantizeLinear -> ConvInteger (uint8 weights, zero point 119, padded:
// the oneDNN kernel's border corrections) -> Cast -> Mul, and a Q -> Tanh -> Q region that the
// planner turns into a QLinearLookup table. The kernels are the x86 ones where the CPU has VNNI
// and VBMI, the reference ones elsewhere.
Case Int8Case() {
  const std::vector<int64_t> shape = {1, 16, 24, 24};
  ModelBuilder b(21);
  b.Input("x", kF, shape);
  b.Output("conv", kF, {1, 32, 24, 24});
  b.Output("table", kF, shape);
  std::string w(32 * 16 * 9, '\0');
  const std::vector<float> v = Values(w.size(), 77);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<char>(static_cast<int>((v[i] + 1.f) * 127.5f));
  ByteInit(b, "w", onnx::TensorProto::UINT8, {32, 16, 3, 3}, w);
  ByteInit(b, "wz", onnx::TensorProto::UINT8, {}, std::string(1, static_cast<char>(119)));
  ByteInit(b, "z", onnx::TensorProto::UINT8, {}, std::string(1, static_cast<char>(128)));
  b.FloatInit("s", {}, {0.01f});
  b.FloatInit("ts", {}, {1.f / 128.f});
  b.Node("DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xz"}, "dynamic");
  SetIntsAttr(b.Node("ConvInteger", {"xq", "w", "xz", "wz"}, {"acc"}, "conv_integer"), "pads",
              {1, 1, 1, 1});
  SetIntAttr(b.Node("Cast", {"acc"}, {"accf"}, "cast"), "to", kF);
  b.Node("Mul", {"accf", "xs"}, {"conv"}, "scale");
  b.Node("QuantizeLinear", {"x", "s", "z"}, {"q"}, "q");
  b.Node("DequantizeLinear", {"q", "s", "z"}, {"d"}, "dq");
  b.Node("Tanh", {"d"}, {"t"}, "tanh");
  b.Node("QuantizeLinear", {"t", "ts", "z"}, {"tq"}, "tq");
  b.Node("DequantizeLinear", {"tq", "ts", "z"}, {"table"}, "tdq");
#if defined(__x86_64__) || defined(_M_X64)
  const bool vnni = __builtin_cpu_supports("avx512vnni");
  const bool vbmi = __builtin_cpu_supports("avx512vbmi");
#else
  const bool vnni = false, vbmi = false;
#endif
  return {"int8",
          b.Bytes(),
          {{"x", shape}},
          {vnni ? "ConvInteger_8bit_onednn" : "ConvInteger",
           vbmi ? "QLinearLookup_8bit_vbmi" : "qlinearlookup_8bit_ref"}};
}

// Block-sparse kernels: a 1x1 convolution (+ bias, Relu) and a MatMul (+ bias) whose constant
// weights have 60% of their blocks of 16 output channels at one input channel all zero.
Case SparseCase() {
  ModelBuilder b;
  b.Input("x", kF, {1, 32, 14, 14});
  b.Input("a", kF, {20, 48});
  b.Output("y", kF, {1, 64, 14, 14});
  b.Output("p", kF, {20, 40});
  // Block (blk, ci) is zero for 6 of every 10 (blk, ci) pairs.
  auto sparse = [](std::vector<float> v, int64_t m, int64_t k, bool k_major) {
    for (int64_t co = 0; co < m; ++co)
      for (int64_t ci = 0; ci < k; ++ci)
        if ((co / 16 * 7 + ci * 3) % 10 < 6) v[k_major ? ci * m + co : co * k + ci] = 0.f;
    return v;
  };
  b.FloatInit("w", {64, 32, 1, 1}, sparse(Values(64 * 32, 31), 64, 32, false));
  Weights(b, "wb", {64}, 32);
  b.FloatInit("bm", {48, 40}, sparse(Values(48 * 40, 33), 40, 48, true));
  Weights(b, "mb", {40}, 34);
  b.Node("Conv", {"x", "w", "wb"}, {"c"}, "conv1x1");
  b.Node("Relu", {"c"}, {"y"}, "relu");
  b.Node("MatMul", {"a", "bm"}, {"m"}, "matmul");
  b.Node("Add", {"m", "mb"}, {"p"}, "bias");
  return {"sparse",
          b.Bytes(),
          {{"x", {1, 32, 14, 14}}, {"a", {20, 48}}},
          {"NhwcConv_f32_sparse/block16", "FusedMatMul_f32_sparse/block16"}};
}

}  // namespace

std::vector<std::string> KernelFamilyNames() {
  return {"cnn",     "winograd_onednn", "winograd_f2", "matmul", "attention",
          "highway", "quantize",        "int8",        "sparse"};
}

Case KernelFamilyCase(const std::string& name) {
  if (name == "cnn") return CnnCase();
  if (name == "winograd_onednn") return WinogradCase(OptimizationLevel::kBasic);
  if (name == "winograd_f2") return WinogradCase(OptimizationLevel::kAll);
  if (name == "matmul") return MatMulCase();
  if (name == "attention") return AttentionCase();
  if (name == "quantize") return QuantizeCase();
  if (name == "int8") return Int8Case();
  if (name == "sparse") return SparseCase();
  return HighwayCase();
}

NamedValues Feeds(const Case& c, uint64_t seed) {
  NamedValues feeds;
  uint64_t k = 0;
  for (const auto& [name, shape] : c.inputs) {
    Tensor t = Tensor::Allocate(DType::kFloat, shape);
    const std::vector<float> v = Values(static_cast<size_t>(t.numel()), seed * 16 + k++);
    std::memcpy(t.raw_data(), v.data(), v.size() * sizeof(float));
    feeds.push_back({name, Value(t)});
  }
  return feeds;
}

// Elements of `got` whose bits differ from `want` (every output, in order).
int64_t BitDifferences(const NamedValues& want, const NamedValues& got) {
  if (want.size() != got.size()) return -1;
  int64_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const Tensor& w = want[i].second.tensor();
    const Tensor& g = got[i].second.tensor();
    if (w.shape() != g.shape() || w.dtype() != g.dtype()) return -1;
    const auto* wb = static_cast<const uint32_t*>(w.raw_data());
    const auto* gb = static_cast<const uint32_t*>(g.raw_data());
    for (int64_t j = 0; j < w.numel(); ++j) bad += wb[j] != gb[j];
  }
  return bad;
}

}  // namespace onyx::testing
