// Conv+BatchNorm folding: a plan-time rewrite of steps and constants (the model graph is shared
// by all plans and never modified).
#include "planner/fusion/conv_batchnorm.h"

#include <cmath>

#include "kernels/node_view.h"

namespace onyx::planner::fusion {
namespace {

const Tensor* ConstantTensor(const ExecutionPlan& plan, int slot) {
  if (slot < 0) return nullptr;
  auto it = plan.constants.find(slot);
  if (it == plan.constants.end() || !it->second.is_tensor()) return nullptr;
  const Tensor& t = it->second.tensor();
  return t.dtype() == DType::kFloat ? &t : nullptr;
}

bool IsInferenceBatchNorm(const PlanStep& st) {
  const ir::Node& n = *st.node;
  if (n.domain != "" || n.op_type != "BatchNormalization" || n.opset < 7) return false;
  kernels::NodeView v(n);
  if (v.attr_int("spatial", 1) != 1 || v.attr_int("training_mode", 0) != 0) return false;
  if (st.inputs.size() != 5) return false;
  for (size_t k = 1; k < st.outputs.size(); ++k)
    if (st.outputs[k] >= 0) return false;  // running mean/var outputs requested
  return true;
}

int AddConstant(ExecutionPlan& plan, const std::string& name, Tensor t) {
  const int id = static_cast<int>(plan.slots.size());
  ValueSlot s;
  s.name = name;
  s.type = TypeInfo::TensorWithShape(t.dtype(), t.shape());
  s.storage = Storage::kConstant;
  plan.slots.push_back(s);
  plan.slot_of[name] = id;
  plan.constants[id] = Value(std::move(t));
  return id;
}

}  // namespace

int FuseConvBatchNorm(ExecutionPlan& plan) {
  // How many steps read each slot (subgraph reads included).
  std::vector<int> readers(plan.slots.size(), 0);
  for (const PlanStep& st : plan.steps)
    for (const auto* list : {&st.inputs, &st.implicit})
      for (int id : *list)
        if (id >= 0) ++readers[id];
  std::vector<bool> is_output(plan.slots.size(), false);
  for (int id : plan.output_slots) is_output[id] = true;
  std::map<int, size_t> producer;
  for (size_t i = 0; i < plan.steps.size(); ++i)
    for (int o : plan.steps[i].outputs)
      if (o >= 0) producer[o] = i;

  std::vector<bool> remove(plan.steps.size(), false);
  int fused = 0;
  for (size_t j = 0; j < plan.steps.size(); ++j) {
    PlanStep& bn = plan.steps[j];
    if (!IsInferenceBatchNorm(bn) || bn.inputs[0] < 0) continue;
    const int x = bn.inputs[0];
    auto p = producer.find(x);
    if (p == producer.end() || readers[x] != 1 || is_output[x]) continue;
    PlanStep& conv = plan.steps[p->second];
    if (remove[p->second] || conv.node->domain != "" || conv.node->op_type != "Conv") continue;
    if (conv.outputs.size() != 1 || conv.inputs.size() < 2) continue;
    const Tensor* w = ConstantTensor(plan, conv.inputs[1]);
    const Tensor* b = conv.inputs.size() > 2 ? ConstantTensor(plan, conv.inputs[2]) : nullptr;
    if (!w || w->rank() < 3 || (conv.inputs.size() > 2 && conv.inputs[2] >= 0 && !b)) continue;
    const int64_t m = w->dim(0);
    const Tensor* gamma = ConstantTensor(plan, bn.inputs[1]);
    const Tensor* beta = ConstantTensor(plan, bn.inputs[2]);
    const Tensor* mean = ConstantTensor(plan, bn.inputs[3]);
    const Tensor* var = ConstantTensor(plan, bn.inputs[4]);
    bool ok = gamma && beta && mean && var && (!b || b->numel() == m);
    for (const Tensor* t : {gamma, beta, mean, var}) ok = ok && t->numel() == m;
    if (!ok) continue;
    const double eps = kernels::NodeView(*bn.node).attr_float("epsilon", 1e-5f);

    Tensor nw = w->Clone();
    Tensor nb = Tensor::Allocate(DType::kFloat, {m});
    const int64_t per = w->numel() / m;
    for (int64_t c = 0; c < m; ++c) {
      const double s =
          gamma->data<float>()[c] / std::sqrt(static_cast<double>(var->data<float>()[c]) + eps);
      float* row = nw.data<float>() + c * per;
      for (int64_t k = 0; k < per; ++k) row[k] = static_cast<float>(row[k] * s);
      const double bias = b ? b->data<float>()[c] : 0.0;
      nb.data<float>()[c] =
          static_cast<float>((bias - mean->data<float>()[c]) * s + beta->data<float>()[c]);
    }
    const std::string base = plan.slots[bn.outputs[0]].name;
    const int w_id = AddConstant(plan, base + "/folded_W", std::move(nw));
    const int b_id = AddConstant(plan, base + "/folded_B", std::move(nb));
    conv.inputs.resize(3, -1);
    conv.inputs[1] = w_id;
    conv.inputs[2] = b_id;
    conv.outputs[0] = bn.outputs[0];  // the Conv now writes the BN's output directly
    conv.fused.push_back(bn.node);
    remove[j] = true;
    ++fused;
  }
  if (fused == 0) return 0;
  std::vector<PlanStep> kept;
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (!remove[i]) kept.push_back(std::move(plan.steps[i]));
  plan.steps = std::move(kept);
  return fused;
}

}  // namespace onyx::planner::fusion
