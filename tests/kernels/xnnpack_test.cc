// The XNNPACK kernels (kernels/arm, ONYX_XNNPACK) against the reference kernels of the same
// nodes, which sum in double: convolutions (odd channel counts, groups, depthwise with and
// without a multiplier, strides, dilations, asymmetric and SAME pads, bias, residual, every kind
// of fused activation), fully connected products (MatMul of any rank, Gemm's transB and bias
// forms, FusedMatMul's epilogue), max and average pooling (ceil_mode, count_include_pad on and
// off, global). Each runs at 1, 2 and 3 threads with constant weights, and must give bitwise
// the same outputs at every thread count (the determinism audit's claim). What XNNPACK cannot
// compute exactly must be refused, so the next kernel runs it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernel.h"
#include "kernels/op_registry.h"
#include "kernels/weight_cache.h"
#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

constexpr double kAtol = 2e-4, kRtol = 1e-4;

NodeSpec OnyxSpec(const std::string& op, std::vector<ir::Attribute> attrs) {
  NodeSpec spec{op, 1, std::move(attrs)};
  spec.domain = "com.onyx";
  return spec;
}

// Runs `impl` at 1, 2 and 3 threads with inputs 1 and 2 constant; expects it to match the
// reference within tolerance and to give the same bits at every thread count.
void ExpectMatches(const NodeSpec& spec, const std::vector<Tensor>& inputs, const std::string& impl,
                   const std::string& what, double atol = kAtol, double rtol = kRtol) {
  SCOPED_TRACE(what);
  const RunResult ref = RunImpl(spec, inputs, "");
  ASSERT_TRUE(ref.status.ok()) << ref.status.message();
  Tensor first;
  for (int threads : {1, 2, 3}) {
    RunOptions o;
    o.threads = threads;
    o.constant_inputs = {1, 2};
    const RunResult fast = RunImpl(spec, inputs, impl, o);
    ASSERT_TRUE(fast.status.ok()) << fast.status.message();
    EXPECT_EQ(CompareFloats(fast.outputs[0], ref.outputs[0], atol, rtol), "")
        << "threads " << threads;
    if (threads == 1)
      first = fast.outputs[0];
    else
      EXPECT_EQ(CompareBytes(fast.outputs[0], first), "") << "threads " << threads;
  }
}

// ---- convolution ----

constexpr const char* kConv = "NhwcConv_f32_xnnpack";

struct ConvGeometry {
  int64_t kh, kw;
  std::vector<ir::Attribute> attrs;  // strides, pads, dilations, auto_pad
  std::string what;
};

NodeSpec ConvSpec(int64_t group, const ConvGeometry& g, std::vector<ir::Attribute> extra = {}) {
  std::vector<ir::Attribute> attrs = g.attrs;
  attrs.push_back(IntAttr("group", group));
  attrs.push_back(IntsAttr("kernel_shape", {g.kh, g.kw}));
  for (auto& a : extra) attrs.push_back(std::move(a));
  return OnyxSpec("NhwcConv", attrs);
}

const std::vector<ConvGeometry>& ConvGeometries() {
  static const std::vector<ConvGeometry> g = {
      {3, 3, {IntsAttr("pads", {1, 1, 1, 1})}, "3x3 pad 1"},
      {3, 3, {IntsAttr("strides", {2, 2}), IntsAttr("pads", {0, 1, 1, 0})}, "3x3 s2 asym pads"},
      {3, 3, {IntsAttr("dilations", {2, 3}), IntsAttr("pads", {2, 3, 2, 3})}, "3x3 dilated"},
      {1, 1, {}, "1x1"},
      {1, 1, {IntsAttr("strides", {2, 2})}, "1x1 s2"},
      {3, 2, {IntsAttr("strides", {1, 2}), IntsAttr("pads", {0, 1, 2, 0})}, "3x2"},
      {3, 3, {StringAttr("auto_pad", "SAME_UPPER"), IntsAttr("strides", {2, 2})}, "SAME_UPPER"},
      {5, 5, {StringAttr("auto_pad", "SAME_LOWER")}, "5x5 SAME_LOWER"},
      {7, 7, {IntsAttr("strides", {2, 2}), IntsAttr("pads", {3, 3, 3, 3})}, "7x7 s2"},
  };
  return g;
}

TEST(XnnpackConv, MatchesReferenceOverGroupsAndGeometries) {
  std::mt19937 rng(101);
  struct Channels {
    int64_t c, m, group;
    Shape x;  // N, H, W (C appended)
  };
  const std::vector<Channels> channels = {
      {3, 16, 1, {1, 13, 11}},  // a first layer
      {5, 7, 1, {2, 9, 10}},    // odd counts, two images
      {12, 18, 3, {1, 8, 9}},   // grouped
      {8, 8, 8, {1, 10, 7}},    // depthwise
      {37, 37, 37, {2, 9, 9}},  // depthwise, odd channel tail
      {6, 12, 6, {1, 7, 8}},    // depthwise with a multiplier of 2
      {20, 33, 1, {1, 6, 5}},   // more outputs than a register tile
  };
  for (const Channels& ch : channels) {
    Shape xs = ch.x;
    xs.push_back(ch.c);
    for (const ConvGeometry& g : ConvGeometries()) {
      const Tensor x = RandomFloats(xs, rng);
      const Tensor w = RandomFloats({ch.m, ch.c / ch.group, g.kh, g.kw}, rng, -1.f, 1.f);
      const Tensor b = RandomFloats({ch.m}, rng);
      const NodeSpec spec = ConvSpec(ch.group, g);
      ExpectMatches(spec, {x, w, b}, kConv,
                    ShapeToString(xs) + " M " + std::to_string(ch.m) + " group " +
                        std::to_string(ch.group) + " " + g.what);
    }
  }
}

TEST(XnnpackConv, ActivationsBiasAndResidual) {
  std::mt19937 rng(103);
  const ConvGeometry g = ConvGeometries()[1];
  const Shape xs = {1, 9, 11, 10};
  const Tensor x = RandomFloats(xs, rng);
  const Tensor w = RandomFloats({14, 10, 3, 3}, rng, -1.f, 1.f);
  const Tensor b = RandomFloats({14}, rng);
  const Tensor z = RandomFloats(ReferenceOutputShape(ConvSpec(1, g), {x, w}), rng);
  const std::vector<std::vector<ir::Attribute>> acts = {
      {},
      {StringAttr("activation", "Relu")},
      {StringAttr("activation", "Clip"), FloatsAttr("activation_params", {0.f, 6.f})},
      {StringAttr("activation", "Clip"), FloatsAttr("activation_params", {1.f, 1.f})},   // lo = hi
      {StringAttr("activation", "Clip"), FloatsAttr("activation_params", {2.f, -1.f})},  // lo > hi
      {StringAttr("activation", "LeakyRelu"), FloatsAttr("activation_params", {0.1f})},
      {StringAttr("activation", "HardSwish")},
      {StringAttr("activation", "Sigmoid")},
      {StringAttr("activation", "Gelu"), FloatsAttr("activation_params", {0.f})},
  };
  for (size_t a = 0; a < acts.size(); ++a) {
    const NodeSpec spec = ConvSpec(1, g, acts[a]);
    const std::string what = "activation #" + std::to_string(a);
    ExpectMatches(spec, {x, w, b}, kConv, what + " bias");
    ExpectMatches(spec, {x, w}, kConv, what + " no bias");
    ExpectMatches(spec, {x, w, b, z}, kConv, what + " bias residual");
    ExpectMatches(spec, {x, w, Tensor(), z}, kConv, what + " residual");
  }
}

// A context for one node with one output: a fresh buffer, or input `over`'s buffer (what the
// executor gives NhwcConv when the planner puts Y over the dying residual Z, inplace_input = 3).
class OneOutputContext : public kernels::KernelContext {
 public:
  OneOutputContext(const ir::Node& node, std::vector<Value> inputs, int over = -1)
      : view_(node), inputs_(std::move(inputs)), over_(over) {}
  const kernels::NodeView& node() const override { return view_; }
  int num_inputs() const override { return static_cast<int>(inputs_.size()); }
  bool has_input(int i) const override { return i < num_inputs() && inputs_[i].defined(); }
  const Value& input_value(int i) const override { return inputs_[i]; }
  int num_outputs() const override { return 1; }
  bool has_output(int i) const override { return i == 0; }
  Tensor Output(int, DType dtype, const Shape& shape) override {
    out_ = over_ >= 0 ? inputs_[over_].tensor().Reshaped(shape) : Tensor::Allocate(dtype, shape);
    return out_;
  }
  void SetOutput(int, Value) override {}
  StatusOr<std::vector<Value>> RunSubgraph(const std::string&, const std::vector<Value>&) override {
    return Unsupported("none");
  }
  int intra_op_threads() const override { return 2; }
  const Tensor& out() const { return out_; }

 private:
  kernels::NodeView view_;
  std::vector<Value> inputs_;
  int over_;
  Tensor out_;
};

TEST(XnnpackConv, ResidualSharingTheOutputBuffer) {
  std::mt19937 rng(107);
  const ConvGeometry g = ConvGeometries()[0];
  const Tensor x = RandomFloats({1, 7, 8, 6}, rng);
  const Tensor w = RandomFloats({9, 6, 3, 3}, rng, -1.f, 1.f);
  const Tensor b = RandomFloats({9}, rng);
  const NodeSpec spec = ConvSpec(1, g, {StringAttr("activation", "Relu")});
  const Tensor z = RandomFloats(ReferenceOutputShape(spec, {x, w}), rng);
  const RunResult ref = RunImpl(spec, {x, w, b, z}, "");
  ASSERT_TRUE(ref.status.ok()) << ref.status.message();

  const kernels::OpDef* def = kernels::OpRegistry::Global().Find("com.onyx", "NhwcConv", 1);
  ASSERT_NE(def, nullptr);
  const kernels::KernelImpl* impl = nullptr;
  for (const auto& k : def->impls)
    if (k.name == kConv) impl = &k;
  ASSERT_NE(impl, nullptr);
  ir::Node node;
  node.name = "n";
  node.op_type = spec.op;
  node.domain = spec.domain;
  node.opset = 1;
  node.attributes = spec.attrs;
  node.inputs = {"x", "w", "b", "z"};
  node.outputs = {"y"};
  const std::vector<Tensor> inputs = {x, w, b, z.Clone()};
  std::vector<TypeInfo> types;
  for (const Tensor& t : inputs) types.push_back(TypeInfo::TensorWithShape(t.dtype(), t.shape()));
  kernels::KernelCreateInfo info;
  info.threads = 2;
  info.constants = {nullptr, &inputs[1], &inputs[2], nullptr};
  auto kernel = impl->create_with_info(kernels::NodeView(node), types, info);
  ASSERT_TRUE(kernel.ok()) << kernel.status().message();
  OneOutputContext ctx(node,
                       {Value(inputs[0]), Value(inputs[1]), Value(inputs[2]), Value(inputs[3])}, 3);
  ASSERT_TRUE((*kernel)->Run(ctx).ok());
  EXPECT_EQ(ctx.out().raw_data(), inputs[3].raw_data());
  EXPECT_EQ(CompareFloats(ctx.out(), ref.outputs[0], kAtol, kRtol), "");
}

// Two shape specialisations of one node (the session's plans for two input sizes) share one
// XNNPACK operator and its packed weights through the weight cache, and each computes its own
// shape correctly; another activation is another operator.
TEST(XnnpackConv, ShapePlansShareOneOperator) {
  std::mt19937 rng(113);
  const kernels::KernelImpl* impl = nullptr;
  for (const auto& k : kernels::OpRegistry::Global().Find("com.onyx", "NhwcConv", 1)->impls)
    if (k.name == kConv) impl = &k;
  ASSERT_NE(impl, nullptr);
  const Tensor w = RandomFloats({9, 6, 3, 3}, rng, -1.f, 1.f);
  const Tensor b = RandomFloats({9}, rng);
  kernels::WeightCache cache;
  std::vector<std::unique_ptr<kernels::Kernel>> made;  // alive: the cache holds weak entries
  ir::Node node;
  const auto make = [&](const NodeSpec& spec, const Tensor& x) {
    node = ir::Node();
    node.op_type = spec.op;
    node.domain = spec.domain;
    node.opset = 1;
    node.attributes = spec.attrs;
    node.inputs = {"x", "w", "b"};
    node.outputs = {"y"};
    kernels::KernelCreateInfo info;
    info.constants = {nullptr, &w, &b};
    info.weights = &cache;
    std::vector<TypeInfo> types;
    for (const Tensor* t : {&x, &w, &b})
      types.push_back(TypeInfo::TensorWithShape(DType::kFloat, t->shape()));
    auto k = impl->create_with_info(kernels::NodeView(node), types, info);
    ASSERT_TRUE(k.ok()) << k.status().message();
    made.push_back(std::move(k).value());
  };
  const NodeSpec spec = ConvSpec(1, ConvGeometries()[0], {StringAttr("activation", "Relu")});
  for (const Shape& xs : std::vector<Shape>{{1, 7, 8, 6}, {2, 12, 5, 6}}) {
    const Tensor x = RandomFloats(xs, rng);
    make(spec, x);
    EXPECT_EQ(cache.bytes(), w.nbytes()) << ShapeToString(xs);
    // The shared operator computes this shape (setup takes the size).
    OneOutputContext ctx(node, {Value(x), Value(w), Value(b)});
    ASSERT_TRUE(made.back()->Run(ctx).ok());
    const RunResult ref = RunImpl(spec, {x, w, b}, "");
    EXPECT_EQ(CompareFloats(ctx.out(), ref.outputs[0], kAtol, kRtol), "") << ShapeToString(xs);
  }
  make(ConvSpec(1, ConvGeometries()[0]), RandomFloats({1, 7, 8, 6}, rng));
  EXPECT_EQ(cache.bytes(), 2 * w.nbytes());
}

TEST(XnnpackConv, RefusesWhatItCannotRun) {
  std::mt19937 rng(109);
  const ConvGeometry g = ConvGeometries()[0];
  const Tensor x = RandomFloats({1, 6, 6, 4}, rng);
  const Tensor w = RandomFloats({4, 4, 3, 3}, rng);
  // Weights known only at run time: nothing to pack at plan time.
  RunOptions o;
  RunResult r = RunImpl(ConvSpec(1, g), {x, w}, kConv, o);
  EXPECT_EQ(r.status.code(), ErrorCode::kUnsupported) << r.status.message();
  // A kernel_shape that disagrees with W is the reference kernel's error to report.
  NodeSpec wrong = OnyxSpec("NhwcConv", {IntsAttr("kernel_shape", {2, 2})});
  o.constant_inputs = {1};
  r = RunImpl(wrong, {x, w}, kConv, o);
  EXPECT_FALSE(r.status.ok());
  // 1-D convolutions: rank 3.
  r = RunImpl(OnyxSpec("NhwcConv", {}),
              {RandomFloats({1, 6, 4}, rng), RandomFloats({4, 4, 3}, rng)}, kConv, o);
  EXPECT_FALSE(r.status.ok());
}

// ---- fully connected ----

TEST(XnnpackFullyConnected, MatMulOfAnyRankWithConstantB) {
  std::mt19937 rng(113);
  for (const Shape& as : std::vector<Shape>{{5, 37}, {2, 3, 17}, {17}, {1, 64}, {33, 8}}) {
    for (int64_t n : {1, 13, 64}) {
      const Tensor a = RandomFloats(as, rng);
      const Tensor b = RandomFloats({as.back(), n}, rng, -1.f, 1.f);
      ExpectMatches(NodeSpec("MatMul", 13), {a, b}, "MatMul_f32_xnnpack",
                    "A " + ShapeToString(as) + " N " + std::to_string(n));
    }
  }
  // B 3-D (batched) or computed: not this kernel's.
  const Tensor a = RandomFloats({2, 4, 5}, rng);
  RunOptions o;
  o.constant_inputs = {1};
  EXPECT_FALSE(
      RunImpl(NodeSpec("MatMul", 13), {a, RandomFloats({2, 5, 3}, rng)}, "MatMul_f32_xnnpack", o)
          .status.ok());
  EXPECT_EQ(RunImpl(NodeSpec("MatMul", 13), {a, RandomFloats({5, 3}, rng)}, "MatMul_f32_xnnpack")
                .status.code(),
            ErrorCode::kUnsupported);
}

TEST(XnnpackFullyConnected, GemmForms) {
  std::mt19937 rng(127);
  const int64_t m = 7, k = 19, n = 11;
  const Tensor a = RandomFloats({m, k}, rng);
  const Tensor b = RandomFloats({k, n}, rng, -1.f, 1.f);
  const Tensor bt = RandomFloats({n, k}, rng, -1.f, 1.f);
  const std::string impl = "Gemm_f32_xnnpack";
  ExpectMatches(NodeSpec("Gemm", 13), {a, b}, impl, "plain");
  ExpectMatches(NodeSpec("Gemm", 13, {IntAttr("transB", 1)}), {a, bt}, impl, "transB");
  ExpectMatches(NodeSpec("Gemm", 13), {a, b, RandomFloats({n}, rng)}, impl, "C [N]");
  ExpectMatches(NodeSpec("Gemm", 13, {IntAttr("transB", 1)}), {a, bt, RandomFloats({1, n}, rng)},
                impl, "C [1, N]");
  ExpectMatches(NodeSpec("Gemm", 13), {a, b, RandomFloats({1}, rng)}, impl, "C [1]");
  // Refused: C varying along rows, alpha, beta, transposed A.
  RunOptions o;
  o.constant_inputs = {1, 2};
  for (const auto& [spec, inputs] : std::vector<std::pair<NodeSpec, std::vector<Tensor>>>{
           {NodeSpec("Gemm", 13), {a, b, RandomFloats({m, n}, rng)}},
           {NodeSpec("Gemm", 13), {a, b, RandomFloats({m, 1}, rng)}},
           {NodeSpec("Gemm", 13, {FloatAttr("alpha", 2.f)}), {a, b}},
           {NodeSpec("Gemm", 13, {FloatAttr("beta", 0.5f)}), {a, b, RandomFloats({n}, rng)}},
           {NodeSpec("Gemm", 13, {IntAttr("transA", 1)}), {RandomFloats({k, m}, rng), b}}}) {
    const RunResult r = RunImpl(spec, inputs, impl, o);
    EXPECT_EQ(r.status.code(), ErrorCode::kUnsupported) << r.status.message();
  }
}

TEST(XnnpackFullyConnected, FusedMatMulEpilogues) {
  std::mt19937 rng(131);
  const Tensor a = RandomFloats({3, 5, 24}, rng);
  const Tensor b = RandomFloats({24, 18}, rng, -1.f, 1.f);
  const Tensor bias = RandomFloats({18}, rng);
  const Tensor z = RandomFloats({3, 5, 18}, rng);
  const std::string impl = "FusedMatMul_f32_xnnpack";
  const std::vector<std::vector<ir::Attribute>> acts = {
      {},
      {StringAttr("activation", "Relu")},
      {StringAttr("activation", "Clip"), FloatsAttr("activation_params", {-1.f, 1.f})},
      {StringAttr("activation", "Gelu"), FloatsAttr("activation_params", {1.f})},
  };
  for (size_t i = 0; i < acts.size(); ++i) {
    const NodeSpec spec = OnyxSpec("FusedMatMul", acts[i]);
    const std::string what = "activation #" + std::to_string(i);
    ExpectMatches(spec, {a, b, bias}, impl, what + " bias");
    ExpectMatches(spec, {a, b, bias, z}, impl, what + " bias residual");
    ExpectMatches(spec, {a, b, Tensor(), z}, impl, what + " residual");
  }
  std::vector<ir::Attribute> trans = {IntAttr("transB", 1)};
  ExpectMatches(OnyxSpec("FusedMatMul", trans), {a, RandomFloats({18, 24}, rng), bias}, impl,
                "transB");
  RunOptions o;
  o.constant_inputs = {1, 2};
  const RunResult r = RunImpl(OnyxSpec("FusedMatMul", {FloatAttr("alpha", 0.5f)}), {a, b}, impl, o);
  EXPECT_EQ(r.status.code(), ErrorCode::kUnsupported) << r.status.message();
}

// ---- pooling ----

struct PoolCase {
  std::vector<ir::Attribute> attrs;
  std::string what;
};

TEST(XnnpackPool, MaxAndAverageMatchReference) {
  std::mt19937 rng(137);
  const std::vector<PoolCase> cases = {
      {{IntsAttr("kernel_shape", {2, 2}), IntsAttr("strides", {2, 2})}, "2x2 s2"},
      {{IntsAttr("kernel_shape", {3, 3}), IntsAttr("strides", {2, 2}),
        IntsAttr("pads", {1, 1, 1, 1})},
       "3x3 s2 pad 1"},
      {{IntsAttr("kernel_shape", {3, 3}), IntsAttr("pads", {1, 1, 1, 1})}, "3x3 s1 pad 1"},
      {{IntsAttr("kernel_shape", {3, 3}), IntsAttr("strides", {2, 2}), IntAttr("ceil_mode", 1)},
       "3x3 s2 ceil"},
      {{IntsAttr("kernel_shape", {3, 2}), IntsAttr("strides", {2, 1}),
        IntsAttr("pads", {0, 1, 2, 0})},
       "3x2 asym pads"},
      {{IntsAttr("kernel_shape", {2, 3}), IntsAttr("strides", {3, 2}),
        IntsAttr("pads", {1, 0, 0, 1}), IntAttr("ceil_mode", 1)},
       "2x3 pads and ceil"},
      {{IntsAttr("kernel_shape", {3, 3}), StringAttr("auto_pad", "SAME_UPPER"),
        IntsAttr("strides", {2, 2})},
       "SAME_UPPER"},
  };
  for (const Shape& xs : std::vector<Shape>{{1, 13, 11, 5}, {2, 8, 9, 16}, {1, 7, 7, 37}}) {
    const Tensor x = RandomFloats(xs, rng);
    for (const PoolCase& c : cases) {
      ExpectMatches(OnyxSpec("NhwcMaxPool", c.attrs), {x}, "NhwcMaxPool_f32_xnnpack",
                    "max " + ShapeToString(xs) + " " + c.what, 0, 0);
      for (int include_pad : {0, 1}) {
        std::vector<ir::Attribute> attrs = c.attrs;
        attrs.push_back(IntAttr("count_include_pad", include_pad));
        const std::string what = "average " + ShapeToString(xs) + " " + c.what +
                                 " count_include_pad " + std::to_string(include_pad);
        const NodeSpec spec = OnyxSpec("NhwcAveragePool", attrs);
        // ceil_mode's windows past the explicit pads: ONNX counts only up to the pads there.
        const bool past_pads = include_pad && (c.what.find("ceil") != std::string::npos);
        if (past_pads) {
          RunResult r = RunImpl(spec, {x}, "NhwcAveragePool_f32_xnnpack");
          if (!r.status.ok()) {
            EXPECT_EQ(r.status.code(), ErrorCode::kUnsupported) << what;
            continue;
          }
        }
        ExpectMatches(spec, {x}, "NhwcAveragePool_f32_xnnpack", what, 1e-5, 1e-5);
      }
    }
  }
}

TEST(XnnpackPool, DilatedMaxPoolAndGlobalAverage) {
  std::mt19937 rng(139);
  const Tensor x = RandomFloats({2, 11, 10, 9}, rng);
  ExpectMatches(
      OnyxSpec("NhwcMaxPool", {IntsAttr("kernel_shape", {3, 3}), IntsAttr("dilations", {2, 2})}),
      {x}, "NhwcMaxPool_f32_xnnpack", "dilated max", 0, 0);
  const NodeSpec global = OnyxSpec("NhwcAveragePool", {IntsAttr("kernel_shape", {11, 10})});
  ExpectMatches(global, {x}, "NhwcAveragePool_f32_xnnpack", "global average", 1e-5, 1e-5);
  EXPECT_EQ(RunImpl(global, {x}, "NhwcAveragePool_f32_xnnpack").variant, "global");
}

TEST(XnnpackPool, RefusesWhatItCannotMatch) {
  std::mt19937 rng(149);
  const Tensor x = RandomFloats({1, 9, 9, 4}, rng);
  const std::vector<std::pair<std::string, std::vector<ir::Attribute>>> refused = {
      // ceil_mode's last window reaches past the pads: ONNX's divisor stops at the pads.
      {"NhwcAveragePool",
       {IntsAttr("kernel_shape", {3, 3}), IntsAttr("strides", {2, 2}), IntAttr("ceil_mode", 1),
        IntAttr("count_include_pad", 1), IntsAttr("pads", {1, 1, 0, 0})}},
      {"NhwcAveragePool", {IntsAttr("kernel_shape", {3, 3}), IntsAttr("dilations", {2, 2})}},
      // A dilated window over padding: XNNPACK reads padding as the nearest edge pixel.
      {"NhwcMaxPool",
       {IntsAttr("kernel_shape", {3, 3}), IntsAttr("dilations", {2, 2}),
        IntsAttr("pads", {1, 1, 1, 1})}},
      {"NhwcMaxPool", {IntsAttr("kernel_shape", {1, 1}), IntsAttr("strides", {2, 2})}},
  };
  for (const auto& [op, attrs] : refused) {
    const RunResult r = RunImpl(OnyxSpec(op, attrs), {x}, op + "_f32_xnnpack");
    EXPECT_EQ(r.status.code(), ErrorCode::kUnsupported) << op << " " << r.status.message();
    // The reference kernel runs them.
    EXPECT_TRUE(RunImpl(OnyxSpec(op, attrs), {x}, "").status.ok()) << op;
  }
}

// ---- non-finite inputs ----

// NaN and infinities reach the outputs as the reference's: through the convolution's and
// product's sums, Relu and Clip, and the pools' maximum and average. AArch64 only: XNNPACK's
// x86 kernels clamp every output with SSE/AVX max and min (also when no activation asks for
// it, with -inf and +inf), which turn a NaN into a bound (-inf, Relu's 0, Clip's min), and its
// max pooling skips NaN. NEON's fmax/fmin propagate NaN.
TEST(XnnpackKernels, NonFiniteInputs) {
#if !defined(__aarch64__)
  GTEST_SKIP() << "XNNPACK's x86 kernels turn NaN into the output clamp's bound";
#endif
  std::mt19937 rng(151);
  Tensor x = RandomFloats({1, 9, 9, 12}, rng);
  InjectSpecials(x);
  const Tensor w = RandomFloats({8, 12, 3, 3}, rng, -1.f, 1.f);
  for (const std::vector<ir::Attribute>& act :
       {std::vector<ir::Attribute>{},
        {StringAttr("activation", "Relu")},
        {StringAttr("activation", "Clip"), FloatsAttr("activation_params", {-1.f, 1.f})}}) {
    ExpectMatches(ConvSpec(1, ConvGeometries()[0], act), {x, w}, kConv, "conv");
    ExpectMatches(OnyxSpec("FusedMatMul", act), {x, RandomFloats({12, 5}, rng)},
                  "FusedMatMul_f32_xnnpack", "fully connected");
  }
  const std::vector<ir::Attribute> window = {IntsAttr("kernel_shape", {3, 3}),
                                             IntsAttr("pads", {1, 1, 1, 1})};
  ExpectMatches(OnyxSpec("NhwcMaxPool", window), {x}, "NhwcMaxPool_f32_xnnpack", "max", 0, 0);
  ExpectMatches(OnyxSpec("NhwcAveragePool", window), {x}, "NhwcAveragePool_f32_xnnpack", "average",
                1e-5, 1e-5);
}

// ---- registration ----

TEST(XnnpackKernels, RegisteredFirstWithTheirIsa) {
  for (const auto& [domain, op] :
       std::vector<std::pair<std::string, std::string>>{{"com.onyx", "NhwcConv"},
                                                        {"", "MatMul"},
                                                        {"", "Gemm"},
                                                        {"com.onyx", "FusedMatMul"},
                                                        {"com.onyx", "NhwcMaxPool"},
                                                        {"com.onyx", "NhwcAveragePool"}}) {
    const kernels::OpDef* def =
        kernels::OpRegistry::Global().Find(domain, op, domain.empty() ? 13 : 1);
    ASSERT_NE(def, nullptr) << op;
    ASSERT_GE(def->impls.size(), 2u);
    EXPECT_EQ(def->impls.front().name, op + "_f32_xnnpack");
    EXPECT_STREQ(def->impls.front().isa.library, "xnnpack");
    EXPECT_NE(def->impls.front().isa.RunsAt(), kernels::IsaLevel::kScalar);
  }
}

}  // namespace
}  // namespace onyx::testing
