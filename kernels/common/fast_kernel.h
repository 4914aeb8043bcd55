// Plumbing shared by the kernels in kernels/common: registering a fast impl in front of the
// reference kernel of every opset range of an op, with that reference kernel kept at hand for the
// run-time cases the fast kernel does not cover (and for their error messages).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/simd_kernels.h"
#include "kernels/kernel.h"
#include "kernels/op_helpers.h"
#include "kernels/op_registry.h"
#include "kernels/reference/fused.h"

namespace onyx::kernels::common {

// A fast kernel: Run() handles what it can and hands everything else to the reference kernel
// created for the same node, so odd values (a shape that does not broadcast, an index out of
// range) get the reference kernel's error message.
class FastKernel : public Kernel {
 public:
  explicit FastKernel(std::unique_ptr<Kernel> fallback) : fallback_(std::move(fallback)) {}

 protected:
  Status Fallback(KernelContext& ctx) const { return fallback_->Run(ctx); }

 private:
  std::unique_ptr<Kernel> fallback_;
};

using SupportsFn = std::function<Status(const NodeView&, const std::vector<TypeInfo>&)>;
// Creates the fast kernel; `fallback` is the reference kernel for the same node.
using FastCreateFn = std::function<StatusOr<std::unique_ptr<Kernel>>(
    const NodeView& node, const std::vector<TypeInfo>& types, std::unique_ptr<Kernel> fallback)>;

// Same, for kernels that read plan-time information (constant weights, threads).
using FastCreateWithInfoFn = std::function<StatusOr<std::unique_ptr<Kernel>>(
    const NodeView& node, const std::vector<TypeInfo>& types, const KernelCreateInfo& info,
    std::unique_ptr<Kernel> fallback)>;

// A kernel-list entry (kernels/kernel_lists.cc) for impl `name`, needing `isa`, serving the
// definitions that overlap opsets [since, until]: each definition's reference kernel is created
// beside the fast kernel as its fallback.
KernelEntry WithFallback(const std::string& name, const KernelIsa& isa, SupportsFn supports,
                         FastCreateFn create, int64_t since = 1, int64_t until = kLatestOpset);
KernelEntry WithFallback(const std::string& name, const KernelIsa& isa, SupportsFn supports,
                         FastCreateWithInfoFn create, int64_t since = 1,
                         int64_t until = kLatestOpset);

// Shorthand for kernels whose constructor takes (node, fallback).
template <typename K>
FastCreateFn MakeCreate() {
  return [](const NodeView& node, const std::vector<TypeInfo>&,
            std::unique_ptr<Kernel> fallback) -> StatusOr<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(new K(node, std::move(fallback)));
  };
}

// ---- supports() helpers: an error Status says why the impl does not take the node ----
// Input i is present and a tensor of element type `t` (an unknown type is rejected).
Status RequireInputType(const std::vector<TypeInfo>& types, int i, DType t);
// Every input is present and a tensor of type t, and there are at least `min_inputs`.
Status RequireAllInputsType(const std::vector<TypeInfo>& types, DType t, int min_inputs);
// Input i is present and a tensor whose element size is 1, 2, 4 or 8 bytes (plain data, not
// strings), for the data-movement kernels.
Status RequirePlainInput(const std::vector<TypeInfo>& types, int i);
// The `supports` of the data-movement kernels: RequirePlainInput(types, 0).
Status SupportsPlainInput0(const NodeView& node, const std::vector<TypeInfo>& types);
// Run-time twin of RequirePlainInput: the element size of a plain (1/2/4/8-byte, not string)
// tensor, else 0.
size_t PlainSize(const Tensor& t);

// Threads worth using for `work` units (about one element touched each): a parallel split of a
// cheap memory-bound loop pays off only above MinParallelWork() elements (op_helpers.h), which
// depends on what a dispatch costs in the runtime ParallelFor uses.
inline int ThreadsFor(int64_t work, int threads) {
  return work < MinParallelWork() ? 1 : threads;
}

// The SIMD unary op computing a fused activation; false for kNone.
bool ToUnary(const FusedActivation& a, UnaryOp* op, UnaryParams* p);
// A fused activation for the kernels whose vector loop applies Relu and Clip itself (depthwise,
// Winograd, block-sparse): those go into the loop (`in_loop`, Clip's bounds); any other runs as a
// unary op over the finished output.
struct LoopActivation {
  VectorActivation in_loop = VectorActivation::kNone;
  float clip_lo = 0.f, clip_hi = 0.f;
  bool has_unary = false;
  UnaryOp unary = UnaryOp::kRelu;
  UnaryParams unary_params;
  // The loop's fields of a kernel's arguments (DepthwiseConvArgs, WinogradConvArgs,
  // BlockSparseGemmArgs).
  template <class Args>
  void SetLoop(Args* a) const {
    a->activation = in_loop;
    a->clip_lo = clip_lo;
    a->clip_hi = clip_hi;
  }
  // The unary part over a finished output of n floats, split between the threads.
  void ApplyUnary(float* y, int64_t n, int threads) const;
};
LoopActivation SplitLoopActivation(const FusedActivation& a);

// A kernel computing UnaryF32(op, params) over a float32 input 0, split between the threads at
// `work` units per element; anything else runs `fallback` (elementwise_kernels.cc).
std::unique_ptr<Kernel> NewUnaryKernel(std::unique_ptr<Kernel> fallback, UnaryOp op,
                                       UnaryParams params, int64_t work);

// A weight W as ONNX stores it for y = x W^T ([N, K] rows), packed once in column panels for
// PanelGemvF32 (PackColumnPanels).
struct PanelWeights {
  std::vector<float> data;
  int64_t n = 0, k = 0, panel = 0;
  bool empty() const { return data.empty(); }
};
PanelWeights PackPanelWeights(const float* rows_nk, int64_t n, int64_t k);
// y (rows x N, rows ldy apart) = a (rows x K, rows lda apart) W^T + bias + z, W's panels split
// among the threads; bias [N] and z (laid out like y) may be null.
void PanelWeightsProduct(const PanelWeights& w, const float* a, int64_t rows, int64_t lda,
                         const float* bias, const float* z, float* y, int64_t ldy, int threads);

// True when the tensor is float32 (run-time double check: plan-time types may be unknown).
inline bool IsF32(const Tensor& t) {
  return t.dtype() == DType::kFloat;
}

}  // namespace onyx::kernels::common
