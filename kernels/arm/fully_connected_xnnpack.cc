// MatMul, Gemm and com.onyx FusedMatMul with a constant 2-D B on XNNPACK's fully connected
// operator (fully_connected_nc_f32): A's rows are its batch, B (or B transposed) its weights,
// packed once at plan time. Gemm's C and FusedMatMul's Bias become the operator's bias when
// they hold one value per output column (or one value); Relu and Clip its output clamp. A
// residual Z and the other activations run in one pass afterwards (ApplyFusedActivation).
// Rejected, so the next kernel runs them: transposed A, alpha != 1, Gemm's beta != 1, a C
// that varies along the rows, a B that is not constant.
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>

#include "kernels/arm/xnnpack_context.h"
#include "kernels/arm/xnnpack_kernels.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/fused.h"

namespace onyx::kernels::arm {
namespace {

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

struct FcGeometry {
  Shape out;
  int64_t rows = 0, k = 0, n = 0;
  bool trans_b = false;
  int bias_input = -1;      // Gemm's C or FusedMatMul's Bias: input 2 when present
  int residual_input = -1;  // FusedMatMul's Z: input 3 when present
};

StatusOr<FcGeometry> Resolve(const NodeView& node, const std::vector<TypeInfo>& types) {
  const std::string& op = node.op_type();
  const bool gemm = op == "Gemm", fused = op == "FusedMatMul";
  if (types.size() < 2 || !IsFloatStatic(types[0]) || !IsFloatStatic(types[1]))
    return node.NotSupported("needs float32 A and B with static shapes");
  const Shape a = types[0].static_shape(), b = types[1].static_shape();
  if (b.size() != 2) return node.NotSupported("B must be 2-D");
  if (a.empty() || (gemm && a.size() != 2)) return node.NotSupported("A's rank");
  if ((gemm || fused) && node.attr_int("transA", 0) != 0) return node.NotSupported("transposed A");
  if ((gemm || fused) && node.attr_float("alpha", 1.f) != 1.f)
    return node.NotSupported("alpha != 1 (scaling the packed weights would round differently)");
  if (gemm && node.has_attr("broadcast")) return node.NotSupported("Gemm's legacy broadcast");
  FcGeometry g;
  g.trans_b = (gemm || fused) && node.attr_int("transB", 0) != 0;
  g.k = a.back();
  g.n = g.trans_b ? b[0] : b[1];
  if ((g.trans_b ? b[1] : b[0]) != g.k) return node.NotSupported("K of A and B differ");
  g.out = Shape(a.begin(), a.end() - 1);
  g.rows = ShapeElementCount(g.out);
  g.out.push_back(g.n);
  if (g.rows == 0 || g.k == 0 || g.n == 0) return node.NotSupported("empty product");
  if ((gemm || fused) && Present(types, 2)) {
    if (gemm && node.attr_float("beta", 1.f) != 1.f) return node.NotSupported("beta != 1");
    if (!IsFloatStatic(types[2])) return node.NotSupported("bias must be float32, static shape");
    const Shape c = types[2].static_shape();
    const int64_t count = ShapeElementCount(c);
    // One value per column ([N], [1, N]) or one in all: a bias the operator adds to each row.
    const bool per_column = !c.empty() && c.back() == g.n && count == g.n;
    if (!(per_column || count == 1) || (fused && !(c.size() == 1 && c[0] == g.n)))
      return node.NotSupported("bias must hold one value per output column");
    g.bias_input = 2;
  }
  if (fused && Present(types, 3)) {
    if (!(IsFloatStatic(types[3]) && types[3].static_shape() == g.out))
      return node.NotSupported("residual must be float32 with the output's shape");
    g.residual_input = 3;
  }
  if (fused) ONYX_RETURN_IF_ERROR(ParseFusedActivation(node).status());
  return g;
}

class FullyConnectedXnnpack : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>& types,
                                                  const KernelCreateInfo& info) {
    auto k = std::unique_ptr<FullyConnectedXnnpack>(new FullyConnectedXnnpack());
    ONYX_RETURN_IF_ERROR(k->Init(node, types, info));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  bool packed_input(size_t i) const override {
    return i == 1 || (g_.bias_input >= 0 && i == static_cast<size_t>(g_.bias_input));
  }

  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    const Tensor& a = ctx.input(0);
    if (a.dtype() != DType::kFloat || a.shape() != a_shape_ || ctx.input(1).shape() != b_shape_)
      return node.Fail("input shapes changed after planning");
    const float* z = nullptr;
    if (g_.residual_input >= 0) {
      if (ctx.input(g_.residual_input).shape() != g_.out)
        return node.Fail("input 3 (Z) shape changed after planning");
      z = ctx.input(g_.residual_input).data<float>();
    }
    Tensor y = ctx.Output(0, DType::kFloat, g_.out);
    return RunWithEpilogue(
        ctx, *op_, y, z, act_, epilogue_,
        [&](float* out, pthreadpool_t pool) {
          return xnn_setup_fully_connected_nc_f32(op_->op.get(), g_.rows, a.data<float>(), out,
                                                  pool);
        },
        "fully connected");
  }

 private:
  Status Init(const NodeView& node, const std::vector<TypeInfo>& types,
              const KernelCreateInfo& info) {
    ONYX_RETURN_IF_ERROR(XnnpackReady(node));
    ONYX_ASSIGN_OR_RETURN(g_, Resolve(node, types));
    a_shape_ = types[0].static_shape();
    b_shape_ = types[1].static_shape();
    const auto constant = [&](int i) {
      return i >= 0 && static_cast<size_t>(i) < info.constants.size() ? info.constants[i] : nullptr;
    };
    const Tensor* b = constant(1);
    if (!b) return node.NotSupported("XNNPACK needs a constant B (input 1)");
    std::vector<float> bias;
    const Tensor* bias_tensor = nullptr;
    if (g_.bias_input >= 0) {
      const Tensor* c = constant(g_.bias_input);
      if (!c) return node.NotSupported("XNNPACK needs a constant bias (input 2)");
      bias_tensor = c;
      bias.assign(static_cast<size_t>(g_.n), c->data<float>()[0]);
      if (c->numel() == g_.n) bias.assign(c->data<float>(), c->data<float>() + g_.n);
    }
    if (node.op_type() == "FusedMatMul") {
      ONYX_ASSIGN_OR_RETURN(act_, ParseFusedActivation(node));
    }
    constexpr float kInf = std::numeric_limits<float>::infinity();
    float lo = -kInf, hi = kInf;
    const bool no_residual = g_.residual_input < 0;
    if (no_residual && act_.kind == ActivationKind::kRelu) {
      lo = 0.f;
    } else if (no_residual && act_.kind == ActivationKind::kClip && act_.alpha < act_.beta) {
      lo = act_.alpha, hi = act_.beta;
    } else {
      epilogue_ = act_.kind != ActivationKind::kNone;
    }
    // XNNPACK's weights are [N, K] (B transposed); TRANSPOSE_WEIGHTS takes B as it is, [K, N].
    const uint32_t flags = XNN_FLAG_YIELD_WORKERS | (g_.trans_b ? 0u : XNN_FLAG_TRANSPOSE_WEIGHTS);
    const std::string key = StrCat("fc:", g_.k, ":", g_.n, ":", flags, ":", FloatBits(lo), ",",
                                   FloatBits(hi), ":", ContentKey(bias_tensor));
    ONYX_ASSIGN_OR_RETURN(op_, ShareOperator(
                                   node, info, *b, key,
                                   [&](xnn_operator_t* op) {
                                     return xnn_create_fully_connected_nc_f32(
                                         g_.k, g_.n, g_.k, g_.n, b->data<float>(),
                                         bias.empty() ? nullptr : bias.data(), lo, hi, flags, op);
                                   },
                                   "fully connected creation"));
    return Status::Ok();
  }

  FcGeometry g_;
  Shape a_shape_, b_shape_;
  FusedActivation act_;
  bool epilogue_ = false;
  std::shared_ptr<const SharedOperator> op_;  // shared with the other shape plans
};

Status FullyConnectedXnnpackSupports(const NodeView& node, const std::vector<TypeInfo>& types) {
  ONYX_RETURN_IF_ERROR(XnnpackReady(node));
  return Resolve(node, types).status();
}

}  // namespace

KernelImpl FullyConnectedXnnpackImpl(const std::string& name) {
  return XnnpackImpl(name, FullyConnectedXnnpackSupports, FullyConnectedXnnpack::Create);
}

}  // namespace onyx::kernels::arm
