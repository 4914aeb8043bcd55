// Reference kernels of the com.onyx fused operators the planner's fusion pass creates
// (planner/fusion/): FusedConv, FusedMatMul, ChannelAffine, SkipLayerNormalization, ReplaceNaN
// and DimsOf, plus the activation epilogue they share. Fast kernels (kernels/x86) reuse
// ParseFusedActivation and ApplyFusedActivation for activations their libraries lack.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/activation_rules.h"
#include "kernels/kernel.h"
#include "kernels/node_view.h"
#include "onyx/status.h"

namespace onyx::kernels {

// The domain and opset of the fused operators.
inline constexpr const char* kOnyxDomain = "com.onyx";
inline constexpr int64_t kOnyxOpset = 1;

// An elementwise activation folded into its producer, with the ONNX semantics of the op it
// replaces (float32). The kinds, their parameters and the parser of the `activation` /
// `activation_params` attributes (ParseFusedActivation, ActivationName, ActivationParams) are the
// activation table's (kernels/activation_rules.h).
using FusedActivation = Activation;

// y[i] = act(y[i] + z[i]) for i < n (z may be null), on up to `threads` threads. In place.
void ApplyFusedActivation(const FusedActivation& a, float* y, const float* z, int64_t n,
                          int threads);

// ---- kernels (KernelFn) ----
// FusedConv(X, W, B?, Z?) -> Y = act(Conv(X, W, B) + Z); attributes of Conv plus the activation.
Status FusedConvKernel(KernelContext& ctx);
// FusedMatMul(A, B, Bias?, Z?) -> Y = act(alpha * A' x B' + Bias + Z) with A' / B' the last two
// dims transposed when transA / transB; numpy batch broadcasting as MatMul; Bias [N]; Z Y's shape.
Status FusedMatMulKernel(KernelContext& ctx);
// ChannelAffine(X, Scale, Shift) -> Y = act(X * Scale[c] + Shift[c]) over axis 1.
Status ChannelAffineKernel(KernelContext& ctx);
// SkipLayerNormalization(X, Skip, Gamma, Beta?, Bias?) -> LayerNorm(X + Skip + Bias) over the last
// axis with `epsilon`; Gamma, Beta and Bias hold one value per element of the last axis.
Status SkipLayerNormKernel(KernelContext& ctx);

// ReplaceNaN(X) -> Y = `value` where X is NaN, else X (float32): what Where(IsNaN(X), value, X)
// computes, in one pass (the fusion pass makes it from that pattern, which transformers' SDPA
// exports write after every attention softmax).
Status ReplaceNaNKernel(KernelContext& ctx);

// QLinearLookup(X, Table) -> Y[i] = Table[bits of X[i]]: X uint8 or int8, Table 256 values of
// uint8 or int8 (Y's type) indexed by X's byte (int8 -1 reads entry 255). The fusion pass makes it
// from a QuantizeLinear whose float input is an elementwise function of one 8-bit tensor, the
// table holding that function's value for each of the 256 inputs.
Status QLinearLookupKernel(KernelContext& ctx);
// Checks QLinearLookup's X and Table, makes Y and calls apply(x bytes, y bytes, count, table)
// once over all of X: the shared frame of the reference and the fast kernels.
Status RunQLinearLookup(
    KernelContext& ctx,
    const std::function<void(const uint8_t*, uint8_t*, int64_t, const uint8_t*)>& apply);

// DimsOf(X0, X1, ...) -> int64 [n] (a 0-d scalar with `scalar` = 1): element k is values[k] when
// sources[k] < 0, else dim values[k] of input sources[k] (only the inputs' shapes are read). The
// fusion pass makes it from a chain of Shape / Gather / Unsqueeze / Concat arithmetic.
struct DimsOfSpec {
  std::vector<int64_t> sources, values;
  bool scalar = false;
};
// Reads and checks the attributes against `num_inputs` inputs; an error names the node.
StatusOr<DimsOfSpec> ParseDimsOf(const NodeView& node, int num_inputs);
StatusOr<std::unique_ptr<Kernel>> MakeDimsOfKernel(const NodeView& node,
                                                   const std::vector<TypeInfo>& input_types);

}  // namespace onyx::kernels
