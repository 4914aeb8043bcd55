// Executes plans step by step. Kernel exceptions (bad_alloc, ...) become errors naming the step.
#include "engine/executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "kernels/op_helpers.h"
#include "memory/aligned_alloc.h"

namespace onyx::engine {
namespace {

using planner::ExecutionPlan;
using planner::PlanStep;
using planner::Storage;

// Outputs handed to callers or placed in sequences must not point into an arena or a feed.
Value Detach(const Value& v) {
  if (v.is_tensor() && !v.tensor().owns_buffer()) return Value(v.tensor().Clone());
  return v;
}

class StepContext : public kernels::KernelContext {
 public:
  StepContext(const Executor& ex, Frame& frame, const PlanStep& step, const RunControl& control,
              int depth)
      : ex_(ex), frame_(frame), step_(step), view_(*step.node), control_(control), depth_(depth) {}

  const kernels::NodeView& node() const override { return view_; }
  int num_inputs() const override { return static_cast<int>(step_.inputs.size()); }
  bool has_input(int i) const override {
    if (i < 0 || i >= num_inputs() || step_.inputs[i] < 0) return false;
    const Value* v = frame_.Get(step_.inputs[i]);
    return v && v->defined();
  }
  const Value& input_value(int i) const override {
    static const Value kNone;
    if (i < 0 || i >= num_inputs() || step_.inputs[i] < 0) return kNone;
    const Value* v = frame_.Get(step_.inputs[i]);
    return v ? *v : kNone;
  }
  int num_outputs() const override { return static_cast<int>(step_.outputs.size()); }
  bool has_output(int i) const override {
    return i >= 0 && i < num_outputs() && step_.outputs[i] >= 0;
  }
  Tensor Output(int i, DType dtype, const Shape& shape) override {
    // A shape computed from data is checked before anything is allocated or borrowed. Output
    // returns a Tensor, so the error travels as onyx::Error to the step's catch (most kernels
    // get the same check as a Status from kernels::NewOutput first).
    uint64_t need = 0;
    if (Status s = kernels::CheckOutputSize(view_, i, dtype, shape, memory::TensorByteCeiling());
        !s.ok())
      throw Error(s);
    (void)CheckedByteSize(dtype, ShapeElementCount(shape), &need);           // fits: checked above
    if (!has_output(i)) return Tensor::AllocateUninitialized(dtype, shape);  // omitted: scratch
    const int id = step_.outputs[i];
    const planner::ValueSlot& s = frame_.plan->slots[id];
    Tensor t;
    const Tensor* caller = frame_.caller_outputs ? (*frame_.caller_outputs)[id] : nullptr;
    // Caller memory only where a buffer of ours could be: the same type and shape, and aligned as
    // kernels may assume (memory::kAlignment); else the output is made as usual.
    if (caller && s.is_graph_output && caller->dtype() == dtype && caller->shape() == shape &&
        dtype != DType::kString &&
        reinterpret_cast<uintptr_t>(caller->raw_data()) % memory::kAlignment == 0)
      t = Tensor::Borrow(dtype, shape, const_cast<void*>(caller->raw_data()));
    else if (s.storage == Storage::kArena && frame_.arena && dtype != DType::kString &&
             need <= s.bytes)
      t = Tensor::Borrow(dtype, shape, frame_.arena + s.offset);
    else  // graph outputs, dynamic shapes: unspecified contents, as in the arena
      t = Tensor::AllocateUninitialized(dtype, shape);
    frame_.values[id] = Value(t);
    return t;
  }
  void SetOutput(int i, Value value) override {
    if (has_output(i)) frame_.values[step_.outputs[i]] = std::move(value);
  }
  bool OutputView(int i, const Tensor& x, const Shape& shape) override {
    if (!has_output(i) || !x.owns_buffer() || x.dtype() == DType::kString) return false;
    const int id = step_.outputs[i];
    const planner::ValueSlot& s = frame_.plan->slots[id];
    if (s.storage != Storage::kHeap || s.is_graph_output) return false;
    frame_.values[id] = Value(x.Reshaped(shape));
    return true;
  }
  StatusOr<std::vector<Value>> RunSubgraph(const std::string& attr,
                                           const std::vector<Value>& inputs) override {
    const ir::Graph* g = view_.attr_graph(attr);
    if (!g) return view_.Invalid("graph attribute '", attr, "' is missing");
    return ex_.RunSubgraph(*g, inputs, &frame_, control_, depth_ + 1);
  }
  int intra_op_threads() const override { return ex_.threads(); }
  Status CheckCancelled() const override { return control_.Check(); }

 private:
  const Executor& ex_;
  Frame& frame_;
  const PlanStep& step_;
  kernels::NodeView view_;
  const RunControl& control_;
  int depth_;
};

// Reports a finished step to the profiler hook.
void ReportStep(const StepObserver& observer, const PlanStep& step, const Frame& frame,
                std::chrono::steady_clock::time_point start,
                std::chrono::steady_clock::time_point end, int depth) {
  StepEvent e;
  e.node_name = step.node->name;
  e.op_type = step.node->op_type;
  e.domain = step.node->domain;
  e.impl = step.impl_name;
  e.start = start;
  e.duration = std::chrono::duration_cast<std::chrono::nanoseconds>(end - start);
  e.thread = std::this_thread::get_id();
  e.depth = depth;
  e.fused_nodes = static_cast<int>(step.fused.size());
  for (int id : step.outputs) {
    const Value* v = id >= 0 ? &frame.values[id] : nullptr;
    e.output_shapes.push_back(v && v->is_tensor() ? v->tensor().shape() : Shape{});
  }
  observer(e);
}

}  // namespace

RunControl::RunControl(const RunOptions& options) : options_(options) {
  if (options.timeout_ms > 0) {
    has_deadline_ = true;
    // Saturates instead of overflowing for absurd timeouts (a year is "never" here).
    const int64_t ms = std::min<int64_t>(options.timeout_ms, int64_t{365} * 24 * 3600 * 1000);
    deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  }
}

Status RunControl::Check() const {
  if (options_.terminate && options_.terminate->load(std::memory_order_relaxed))
    return Cancelled("run cancelled: RunOptions::terminate was set");
  if (has_deadline_ && std::chrono::steady_clock::now() >= deadline_)
    return Cancelled("run cancelled: timeout of ", options_.timeout_ms, " ms exceeded");
  return Status::Ok();
}

const Value* Frame::Get(int slot) const {
  const planner::ValueSlot& s = plan->slots[slot];
  switch (s.storage) {
    case Storage::kConstant: {
      if (values[slot].defined()) return &values[slot];  // an IR < 4 default overridden by a feed
      return static_cast<size_t>(slot) < plan->constant_at.size() ? plan->constant_at[slot]
                                                                  : nullptr;
    }
    case Storage::kOuter:
      return parent ? parent->Lookup(s.name) : nullptr;
    default:
      return &values[slot];
  }
}

const Value* Frame::Lookup(const std::string& name) const {
  auto it = plan->slot_of.find(name);
  if (it != plan->slot_of.end()) {
    const Value* v = Get(it->second);
    if (v && v->defined()) return v;
    if (plan->slots[it->second].storage != Storage::kOuter) return v;
  }
  return parent ? parent->Lookup(name) : nullptr;
}

Status Executor::Run(const ExecutionPlan& plan, memory::ArenaPool* arenas,
                     const std::vector<Value>& inputs, const Frame* parent,
                     std::vector<Value>* outputs, const RunOptions& options, int depth) const {
  const RunControl control(options);
  return Run(plan, arenas, inputs, parent, outputs, control, depth);
}

Status Executor::Run(const ExecutionPlan& plan, memory::ArenaPool* arenas,
                     const std::vector<Value>& inputs, const Frame* parent,
                     std::vector<Value>* outputs, const RunControl& control, int depth) const {
  const RunOptions& options = control.options();
  Frame frame;
  frame.plan = &plan;
  frame.parent = parent;
  frame.values.resize(plan.slots.size());
  std::unique_ptr<memory::Arena> arena;
  if (arenas && plan.arena_bytes > 0) {
    arena = arenas->Acquire(plan.arena_bytes);
    frame.arena = arena->base();
  }
  for (size_t i = 0; i < plan.input_slots.size() && i < inputs.size(); ++i)
    if (inputs[i].defined()) frame.values[plan.input_slots[i]] = inputs[i];
  // Caller memory for graph outputs: the main graph's output slots only.
  std::vector<const Tensor*> caller_outputs;
  if (options.output_buffers && !options.output_buffers->empty() && depth == 0 && !parent) {
    caller_outputs.assign(plan.slots.size(), nullptr);
    for (int id : plan.output_slots) {
      auto it = options.output_buffers->find(plan.slots[id].name);
      if (it != options.output_buffers->end()) caller_outputs[id] = &it->second;
    }
    frame.caller_outputs = &caller_outputs;
  }

  Status status;
  // Clocks are read only when a profiler listens: an unobserved run pays one branch per step.
  const bool timed = static_cast<bool>(options.step_observer);
  for (size_t si = 0; si < plan.steps.size() && status.ok(); ++si) {
    // Between operators: a set flag stops the run before its next step (and before the first,
    // so a run started with the flag set fails at once).
    status = control.Check();
    if (!status.ok()) break;
    const PlanStep& step = plan.steps[si];
    StepContext ctx(*this, frame, step, control, depth);
    std::chrono::steady_clock::time_point start;
    if (timed) start = std::chrono::steady_clock::now();
    try {
      status = step.kernel->Run(ctx);
    } catch (const Error& e) {
      // A size over the limits from Output() or from an allocation deep in a kernel: keep its
      // code (kLimit), adding the node where the message does not name it yet.
      status = e.status();
      const std::string where = step.node->Describe();
      if (status.message().find(where) == std::string::npos)
        status = status.WithContext(where + ": ");
    } catch (const std::bad_alloc&) {
      status = ctx.node().Fail("out of memory");
    } catch (const std::exception& e) {
      status = ctx.node().Fail("kernel threw: ", e.what());
    }
    if (!status.ok()) break;
    if (timed)
      ReportStep(options.step_observer, step, frame, start, std::chrono::steady_clock::now(),
                 depth);
    for (size_t k = 0; k < step.outputs.size(); ++k) {
      const int id = step.outputs[k];
      if (id < 0) continue;
      if (!frame.values[id].defined()) {
        status = ctx.node().Fail("kernel '", step.impl_name, "' produced no value for output ", k,
                                 " '", plan.slots[id].name, "'");
        break;
      }
      if (options.observer) options.observer(plan.slots[id].name, frame.values[id]);
    }
    for (int id : step.release) frame.values[id] = Value();
  }
  if (status.ok()) {
    outputs->clear();
    for (int id : plan.output_slots) {
      const Value* v = frame.Get(id);
      if (!v || !v->defined()) {
        status = RuntimeError("graph output '", plan.slots[id].name, "' was not computed");
        break;
      }
      // An output written into caller memory stays there; other borrowed ones are copied out.
      const Tensor* caller = caller_outputs.empty() ? nullptr : caller_outputs[id];
      if (caller && v->is_tensor() && v->tensor().raw_data() == caller->raw_data())
        outputs->push_back(*v);
      else
        outputs->push_back(Detach(*v));
    }
  }
  frame.values.clear();
  if (arena) arenas->Release(std::move(arena));
  return status;
}

StatusOr<std::vector<Value>> Executor::RunSubgraph(const ir::Graph& graph,
                                                   const std::vector<Value>& inputs,
                                                   const Frame* parent, const RunControl& control,
                                                   int depth) const {
  // The plan made for the running plan's shapes where there is one, else the session's.
  const SubgraphPlans::value_type* entry = nullptr;
  if (shaped_) {
    auto s = shaped_->find(&graph);
    if (s != shaped_->end() && s->second.ok()) entry = &*s;
  }
  if (!entry) {
    auto g = subplans_->find(&graph);
    if (g == subplans_->end()) return RuntimeError("no plan for subgraph '", graph.name, "'");
    entry = &*g;
  }
  if (inputs.size() > graph.inputs.size())
    return InvalidModel("subgraph '", graph.name, "' takes ", graph.inputs.size(),
                        " inputs, given ", inputs.size());
  if (!entry->second.ok()) return entry->second.status();
  std::vector<Value> outs;
  Status s = Run(*entry->second.value(), nullptr, inputs, parent, &outs, control, depth);
  if (!s.ok()) return s.WithContext("in subgraph '" + graph.name + "': ");
  return outs;
}

}  // namespace onyx::engine
