// Small helpers the fusion rules share: reading constants, shapes, permutations and activations
// off the plan, and building the attributes of synthesized nodes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kernels/reference/fused.h"
#include "planner/fusion/rule.h"

namespace onyx::planner::fusion {

// ---- reading ----
const FusionNode& Captured(const FusionGraph& g, const Match& m, const std::string& node_capture);
bool IsFloat32(const FusionGraph& g, int slot);
// The slot's shape when every dim is known.
std::optional<Shape> StaticShape(const FusionGraph& g, int slot);
// A constant float tensor with exactly one element.
std::optional<float> ScalarConstant(const FusionGraph& g, int slot);
// |a - b| <= rel * |b|.
bool Near(double a, double b, double rel = 1e-4);
// The values of float constant `c` when, broadcast against a value of static type `out`, it
// varies only along `axis` and does not grow the result: one value per index of that axis (a
// single value repeated). nullopt otherwise.
std::optional<std::vector<float>> AxisValues(const FusionGraph& g, int c, const TypeInfo& out,
                                             int64_t axis);
// A Transpose node's permutation (the reversal when `perm` is absent and the rank is known).
std::optional<std::vector<int64_t>> TransposePerm(const FusionGraph& g, const FusionNode& n);
// The attribute `name` is absent or equals `value`.
bool IntAttrIs(const ir::Node& n, const std::string& name, int64_t value);
// An inference-mode BatchNormalization (no training outputs, spatial, training_mode 0) whose
// four parameters are float constants of `channels` values each: scale and shift per channel.
bool BatchNormAffine(const FusionGraph& g, const FusionNode& bn, int64_t channels,
                     std::vector<double>* scale, std::vector<double>* shift);
// The activation an ai.onnx elementwise op applies (float32 input; Clip bounds constant).
std::optional<kernels::FusedActivation> ActivationOf(const FusionGraph& g, const FusionNode& n);
// The activation of a fused node (FusedConv, FusedMatMul, ChannelAffine); none when absent.
kernels::FusedActivation FusedActivationOf(const ir::Node& n);
// A FusedConv/FusedMatMul/ChannelAffine with no activation, or any other op.
bool HasNoActivation(const ir::Node& n);

// ---- building ----
// Attribute builders live with the IR (kernels/ir/graph.h).
using ir::EraseAttr;
using ir::FloatAttr;
using ir::FloatsAttr;
using ir::IntAttr;
using ir::IntsAttr;
using ir::SetAttr;
using ir::StringAttr;
// A node of the given op named (and numbered) after `anchor`, the model node it grows from.
ir::Node MakeNode(const std::string& domain, const std::string& op_type, int64_t opset,
                  const ir::Node& anchor);
// A com.onyx node of opset 1.
ir::Node MakeOnyxNode(const std::string& op_type, const ir::Node& anchor);
// Sets `activation` / `activation_params`.
void SetActivation(ir::Node& n, const kernels::FusedActivation& a);
// A float tensor of the given shape and values.
Tensor FloatTensor(const Shape& shape, const std::vector<float>& values);
Tensor Int64Tensor(const std::vector<int64_t>& values);
// Rewrite with one node.
Rewrite Single(ir::Node def, std::vector<int> inputs, std::vector<int> outputs);

}  // namespace onyx::planner::fusion
