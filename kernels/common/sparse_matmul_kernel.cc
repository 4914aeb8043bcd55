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

  std::string variant() const override { return "block" + std::to_string(product_.block()); }
  bool packed_input(size_t i) const override { return i == 2 && product_.bias_packed(); }

  Status Run(KernelContext& ctx) const override {
    const NodeView& node = ctx.node();
    const Tensor& a = ctx.input(0);
    if (a.dtype() != DType::kFloat || a.shape() != a_shape_ || ctx.input(1).shape() != b_shape_)
      return node.Fail("input shapes changed after planning");
    return product_.Run(ctx, a.data<float>(), k_, rows_, y_shape_);
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
    // W(n, k) = B(k, n): B [K, N] row-major, or [N, K] with transB.
    return product_.Init(node, types, info, b, n_, k_, trans_b ? k_ : 1, trans_b ? 1 : n_,
                         "input 2 (Bias) must have N elements");
  }

  Shape a_shape_, b_shape_, y_shape_;
  int64_t k_ = 0, n_ = 0, rows_ = 0;
  BlockSparseProduct product_;
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

KernelImpl BlockSparseMatMulKernel(const std::string& op) {
  KernelImpl impl;
  impl.name = op + "_f32_sparse";
  impl.isa = HighwayIsa();
  impl.supports = SparseMatMulSupports;
  impl.create_with_info = SparseMatMulKernel::Create;
  return impl;
}

}  // namespace onyx::kernels::common
