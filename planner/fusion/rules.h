// The rule families of the fusion pass. Each family lives in its own file; AllRules() lists them
// all. The order of the list does not matter: fusion_pass.cc resolves overlapping matches by a
// key that ignores it (tests/planner/fusion_order_test.cc checks this).
#pragma once

#include <vector>

#include "planner/fusion/rule.h"

namespace onyx::planner::fusion {

// basic: Identity / inference Dropout / no-op Cast removal, Transpose and Reshape collapsing.
void AddCleanupRules(std::vector<Rule>& rules);
// basic: Gather of the known dims of a Shape folded, nodes on constants folded, dead nodes removed.
void AddShapeRules(std::vector<Rule>& rules);
// Conv + BatchNormalization / per-channel Mul / Add folded into the weights; a ChannelAffine
// before an unpadded Conv folded into it; Conv + activation; Conv + residual Add.
void AddConvRules(std::vector<Rule>& rules);
// MatMul/Gemm + activation, + bias, + residual, + scale, + BatchNormalization; Transpose folded
// into transA / transB.
void AddMatMulRules(std::vector<Rule>& rules);
// BatchNormalization and per-channel Mul/Add chains (+ activation) → one ChannelAffine.
void AddAffineRules(std::vector<Rule>& rules);
// Decomposed LayerNormalization, SkipLayerNormalization, both GELU forms, Where(IsNaN(x), c, x).
void AddNormalizationRules(std::vector<Rule>& rules);
// Scaled dot-product attention with its head Reshape/Transpose → Attention.
void AddAttentionRules(std::vector<Rule>& rules);

// QDQ islands: DequantizeLinear -> Conv (-> Relu) -> QuantizeLinear → QLinearConv, Gemm/MatMul
// of DQ operands with int8 weights → MatMulIntegerToFloat; the dynamic
// MatMulInteger -> Cast -> Mul (-> Add) chain → com.microsoft MatMulIntegerToFloat.
void AddQuantizationRules(std::vector<Rule>& rules);

// Every rule, in the canonical order.
std::vector<Rule> AllRules();

}  // namespace onyx::planner::fusion
