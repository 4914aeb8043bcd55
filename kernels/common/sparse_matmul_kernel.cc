// Block-sparse products with a constant B: MatMul, Gemm (bias C) and com.onyx FusedMatMul (bias,
// residual, activation) computing A [..., K] x B [K, N] when B's blocks of 32 or 16 consecutive
// columns at one row are mostly all zero (a fully connected layer pruned with `onyx prune --block
// 32|16`). The same decision and loop as the 1x1 convolution (sparse_kernels.h): B(k, n) is W(n,
// k) there.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hwy/aligned_allocator.h"
#include "kernels/common/fast_kernel.h"
#include "kernels/common/simd_kernels.h"
#include "kernels/common/sparse_kernels.h"
#include "kernels/op_helpers.h"
#include "kernels/reference/fused.h"

namespace onyx::kernels::common {
namespace {

using AlignedFloats = hwy::AlignedFreeUniquePtr<float[]>;

class SparseMatMulKernel : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const NodeView& node,
                                                  const std::vector<TypeInfo>& types,
                                                  const KernelCreateInfo& info) {
    if (!info.sparse) return node.NotSupported("sparse kernels disabled (sparse_kernels)");
    const Tensor* b = info.constants.size() > 1 ? info.constants[1] : nullptr;
    if (!b) return node.NotSupported("B is not constant");
    auto k = std::unique_ptr<SparseMatMulKernel>(new SparseMatMulKernel());
    ONYX_RETURN_IF_ERROR(k->Init(node, types, info, *b));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  std::string variant() const override { return "block" + std::to_string(weights_->block); }
  bool packed_input(size_t i) const override { return i == 2 && bias_packed_; }

  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    const Tensor& a = ctx.input(0);
    if (a.dtype() != DType::kFloat || a.shape() != a_shape_ || ctx.input(1).shape() != b_shape_)
      return node.Fail("input shapes changed after planning");
    BlockSparseGemmArgs args = args_;
    args.w = weights_.get();
    args.dense_w = ctx.input(1).data<float>();
    AlignedFloats run_bias;
    args.bias = bias_.get();
    if (!bias_packed_) {
      if (ctx.input(2).numel() != n_) return node.Fail("input 2 (Bias) must have N elements");
      run_bias = PaddedBias(ctx.input(2).data<float>(), n_);
      if (!run_bias) return node.Fail("out of memory for the padded bias");
      args.bias = run_bias.get();
    }
    if (ctx.num_inputs() > 3 && ctx.has_input(3)) {
      if (ctx.input(3).shape() != y_shape_)
        return node.Fail("input 3 (Z) shape changed after planning");
      args.z = ctx.input(3).data<float>();
    }
    Tensor y = ctx.Output(0, DType::kFloat, y_shape_);
    args.y = y.data<float>();
    args.x = a.data<float>();
    args.lda = k_;
    const int threads = ctx.intra_op_threads();
    RunBlockSparse(args, rows_, threads);
    if (has_unary_) {
      float* yd = y.data<float>();
      const int64_t n = y.numel();
      ParallelFor(n, 1, ThreadsFor(n, threads), [&](int64_t i0, int64_t i1) {
        UnaryF32(unary_, unary_params_, yd + i0, yd + i0, i1 - i0);
      });
    }
    return Status::Ok();
  }

 private:
  Status Init(const NodeView& node, const std::vector<TypeInfo>& types,
              const KernelCreateInfo& info, const Tensor& b) {
    a_shape_ = types[0].static_shape();
    b_shape_ = types[1].static_shape();
    const bool trans_b = node.attr_int("transB", 0) != 0;
    k_ = a_shape_.back();
    n_ = trans_b ? b_shape_[0] : b_shape_[1];
    rows_ = 1;
    for (size_t i = 0; i + 1 < a_shape_.size(); ++i) rows_ *= a_shape_[i];
    y_shape_ = a_shape_;
    y_shape_.back() = n_;
    ONYX_ASSIGN_OR_RETURN(FusedActivation act, ParseFusedActivation(node));
    if (act.kind == ActivationKind::kRelu) {
      args_.activation = VectorActivation::kRelu;
    } else if (act.kind == ActivationKind::kClip) {
      args_.activation = VectorActivation::kClip;
      args_.clip_lo = act.alpha;
      args_.clip_hi = act.beta;
    } else {
      has_unary_ = ToUnary(act, &unary_, &unary_params_);
    }
    // W(n, k) = B(k, n): B [K, N] row-major, or [N, K] with transB.
    args_.dense_m_stride = trans_b ? k_ : 1;
    args_.dense_k_stride = trans_b ? 1 : n_;
    ONYX_ASSIGN_OR_RETURN(weights_, SparseWeightsIfWorthIt(node, b, n_, k_, args_.dense_m_stride,
                                                           args_.dense_k_stride, info.weights));
    const Tensor* bc = info.constants.size() > 2 ? info.constants[2] : nullptr;
    if (!Present(types, 2)) {
      bias_ = PaddedBias(nullptr, n_);
      bias_packed_ = true;
    } else if (bc) {
      if (bc->numel() != n_) return node.Invalid("input 2 (Bias) must have N elements");
      bias_ = PaddedBias(bc->data<float>(), n_);
      bias_packed_ = true;
    }
    if (bias_packed_ && !bias_) return node.Fail("out of memory for the padded bias");
    return Status::Ok();
  }

  Shape a_shape_, b_shape_, y_shape_;
  int64_t k_ = 0, n_ = 0, rows_ = 0;
  BlockSparseGemmArgs args_;  // activation and B's strides; the pointers are set per run
  std::shared_ptr<const BlockSparseWeights> weights_;
  AlignedFloats bias_;  // padded constant (or absent) Bias
  bool bias_packed_ = false;
  bool has_unary_ = false;  // an activation applied over the finished output
  UnaryOp unary_ = UnaryOp::kRelu;
  UnaryParams unary_params_;
};

// MatMul, or FusedMatMul or Gemm without transA and with alpha (and Gemm's beta) 1: A [..., K]
// (rank >= 2; 2 for Gemm) times a 2-D B.
Status SparseMatMulSupports(const NodeView& node, const std::vector<TypeInfo>& types) {
  const bool gemm = node.op_type() == "Gemm";
  if (types.size() < 2 || !IsFloatStatic(types[0]) || !IsFloatStatic(types[1]))
    return node.NotSupported("needs float32 A and B with static shapes");
  const Shape a = types[0].static_shape(), b = types[1].static_shape();
  if (a.size() < 2 || b.size() != 2) return node.NotSupported("needs A of rank >= 2 and a 2-D B");
  if (node.attr_int("transA", 0) != 0) return node.NotSupported("transA");
  if (node.attr_float("alpha", 1.0f) != 1.0f) return node.NotSupported("alpha other than 1");
  if (gemm && (a.size() != 2 || node.attr_float("beta", 1.0f) != 1.0f))
    return node.NotSupported("Gemm needs a 2-D A and beta 1");
  const bool trans_b = node.attr_int("transB", 0) != 0;
  const int64_t k = trans_b ? b[1] : b[0], n = trans_b ? b[0] : b[1];
  if (a.back() != k) return node.NotSupported("A's last dim differs from B's K");
  for (int64_t d : a)
    if (d == 0) return node.NotSupported("empty input");
  if (n == 0) return node.NotSupported("empty output");
  if (Present(types, 2) &&
      !(IsFloatStatic(types[2]) &&
        (types[2].static_shape() == Shape{n} || (gemm && types[2].static_shape() == Shape{1, n}))))
    return node.NotSupported("bias must be float32 [N]");
  Shape y = a;
  y.back() = n;
  if (Present(types, 3) && !(IsFloatStatic(types[3]) && types[3].static_shape() == y))
    return node.NotSupported("residual must be float32 with the output's shape");
  return ParseFusedActivation(node).status();
}

}  // namespace

void RegisterSparseMatMulFast(OpRegistry& r) {
  for (const auto& [domain, op] : {std::pair<std::string, std::string>{"", "MatMul"},
                                   {"", "Gemm"},
                                   {kOnyxDomain, "FusedMatMul"}}) {
    KernelImpl impl;
    impl.name = op + "_f32_sparse";
    impl.supports = SparseMatMulSupports;
    impl.create_with_info = SparseMatMulKernel::Create;
    r.PrependImpl(domain, op, std::move(impl));
  }
}

}  // namespace onyx::kernels::common
