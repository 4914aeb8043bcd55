// Direct kernel runner for the kernel tests (see kernel_harness.h).
#include "tests/kernels/kernel_harness.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "hwy/targets.h"
#include "kernels/cpu_features.h"
#include "kernels/kernel.h"
#include "kernels/node_view.h"
#include "kernels/op_registry.h"

namespace onyx::testing {
namespace {

using kernels::KernelContext;
using kernels::NodeView;

// The KernelContext the executor would give one node: inputs as values, outputs in fresh buffers
// filled with a garbage pattern (the arena is not zeroed either), or over input 0.
class DirectContext : public KernelContext {
 public:
  DirectContext(const ir::Node& node, std::vector<Value> inputs, int num_outputs,
                const RunOptions& options)
      : node_(node), inputs_(std::move(inputs)), outputs_(num_outputs), options_(options) {}

  const NodeView& node() const override { return node_; }
  int num_inputs() const override { return static_cast<int>(inputs_.size()); }
  bool has_input(int i) const override {
    return i >= 0 && i < num_inputs() && inputs_[i].defined();
  }
  const Value& input_value(int i) const override { return inputs_[i]; }
  int num_outputs() const override { return static_cast<int>(outputs_.size()); }
  bool has_output(int i) const override { return i >= 0 && i < num_outputs(); }
  Tensor Output(int i, DType dtype, const Shape& shape) override {
    Tensor t;
    const int over = options_.output_over_input;
    if (i == 0 && over >= 0 && has_input(over) && inputs_[over].is_tensor() &&
        inputs_[over].tensor().dtype() == dtype &&
        inputs_[over].tensor().numel() == ShapeElementCount(shape)) {
      t = inputs_[over].tensor().Reshaped(shape);
    } else if (options_.reuse_outputs && outputs_[i].defined() && outputs_[i].dtype() == dtype &&
               outputs_[i].shape() == shape) {
      t = outputs_[i];  // the benchmarks: the last run's buffer, as an arena slot would be
    } else {
      t = Tensor::Allocate(dtype, shape);
      if (dtype != DType::kString) std::memset(t.raw_data(), 0xA5, t.nbytes());
    }
    outputs_[i] = t;
    return t;
  }
  void SetOutput(int i, Value value) override {
    if (value.is_tensor()) outputs_[i] = value.tensor();
  }
  StatusOr<std::vector<Value>> RunSubgraph(const std::string&, const std::vector<Value>&) override {
    return Unsupported("no subgraphs in kernel tests");
  }
  int intra_op_threads() const override { return options_.threads; }

  const std::vector<Tensor>& outputs() const { return outputs_; }

 private:
  NodeView node_;
  std::vector<Value> inputs_;
  std::vector<Tensor> outputs_;
  RunOptions options_;
};

}  // namespace

void ExpectPlanPicks(const std::string& plan, const std::string& impl, const std::string& what) {
  const bool found = plan.find("[" + impl + "]") != std::string::npos;
  if (kernels::ProcessIsaCap() == kernels::IsaLevel::kScalar)
    EXPECT_FALSE(found) << what << " " << impl << " under ONYX_ISA=scalar\n" << plan;
  else
    EXPECT_TRUE(found) << what << " " << impl << "\n" << plan;
}

std::vector<std::string> ImplNames(const std::string& op, int64_t opset) {
  std::vector<std::string> names;
  const kernels::OpDef* def = kernels::OpRegistry::Global().Find("", op, opset);
  if (def)
    for (const auto& impl : def->impls) names.push_back(impl.name);
  return names;
}

RunResult RunImpl(const NodeSpec& spec, const std::vector<Tensor>& inputs, const std::string& impl,
                  const RunOptions& options) {
  RunResult result;
  const kernels::OpDef* def = kernels::OpRegistry::Global().Find(spec.domain, spec.op, spec.opset);
  if (def == nullptr || def->impls.empty()) {
    result.status = NotFound(spec.op, " opset ", spec.opset, " is not registered");
    return result;
  }
  const kernels::KernelImpl* chosen = impl.empty() ? &def->impls.back() : nullptr;
  for (const auto& k : def->impls)
    if (!impl.empty() && k.name == impl) chosen = &k;
  if (chosen == nullptr) {
    result.status = NotFound("no impl '", impl, "' for ", spec.op, " opset ", spec.opset);
    return result;
  }
  return RunImpl(*chosen, spec, inputs, options);
}

struct PreparedImpl::State {
  ir::Node node;
  std::unique_ptr<NodeView> view;
  std::vector<Tensor> inputs;
  RunOptions options;
  std::unique_ptr<kernels::Kernel> kernel;
  std::unique_ptr<DirectContext> context;  // kept across runs when options.reuse_outputs
};

PreparedImpl::PreparedImpl(const kernels::KernelImpl& chosen, const NodeSpec& spec,
                           std::vector<Tensor> inputs, const RunOptions& options)
    : state_(std::make_unique<State>()) {
  State& st = *state_;
  impl_ = chosen.name;
  st.inputs = std::move(inputs);
  st.options = options;
  st.options.output_over_input = options.output_over_input0 ? 0 : options.output_over_input;
  ir::Node& node = st.node;
  node.name = "n";
  node.op_type = spec.op;
  node.domain = spec.domain;
  node.opset = spec.opset;
  node.attributes = spec.attrs;
  std::vector<TypeInfo> types;
  for (size_t i = 0; i < st.inputs.size(); ++i) {
    const Tensor& t = st.inputs[i];
    node.inputs.push_back(t.defined() ? "in" + std::to_string(i) : "");
    types.push_back(t.defined() ? TypeInfo::TensorWithShape(t.dtype(), t.shape()) : TypeInfo());
  }
  for (int i = 0; i < spec.num_outputs; ++i) node.outputs.push_back("out" + std::to_string(i));
  st.view = std::make_unique<NodeView>(node);
  if (chosen.supports) {
    Status s = chosen.supports(*st.view, types);
    if (!s.ok()) {
      status_ = s.WithContext(chosen.name + " rejects the node: ");
      declined_ = true;
      return;
    }
  }
  StatusOr<std::unique_ptr<kernels::Kernel>> kernel = std::unique_ptr<kernels::Kernel>();
  if (chosen.create_with_info) {  // plan-time kernels (oneDNN, packed weights)
    kernels::KernelCreateInfo info;
    info.threads = options.threads;
    info.constants.assign(st.inputs.size(), nullptr);
    info.sparse_constants.assign(st.inputs.size(), nullptr);
    for (int i : options.constant_inputs)
      if (i >= 0 && i < static_cast<int>(st.inputs.size()) && st.inputs[i].defined())
        info.constants[i] = &st.inputs[i];
    kernel = chosen.create_with_info(*st.view, types, info);
  } else {
    kernel = chosen.create(*st.view, types);
  }
  if (!kernel.ok()) {
    status_ = kernel.status();
    declined_ = kernel.status().code() == ErrorCode::kUnsupported;
    return;
  }
  st.kernel = std::move(kernel).value();
  variant_ = st.kernel->variant();
}

PreparedImpl::~PreparedImpl() = default;

RunResult PreparedImpl::Run() {
  RunResult result;
  result.impl = impl_;
  result.variant = variant_;
  result.status = status_;
  result.declined = declined_;
  if (!status_.ok()) return result;
  State& st = *state_;
  if (!st.context || !st.options.reuse_outputs) {
    const int over = st.options.output_over_input;
    std::vector<Value> values;
    for (size_t i = 0; i < st.inputs.size(); ++i) {
      const Tensor& t = st.inputs[i];
      // The output over an input gets a copy, so the caller's tensor is left alone.
      values.push_back(!t.defined() ? Value() : Value(static_cast<int>(i) == over ? t.Clone() : t));
    }
    st.context = std::make_unique<DirectContext>(
        st.node, std::move(values), static_cast<int>(st.node.outputs.size()), st.options);
  }
  result.status = st.kernel->Run(*st.context);
  result.outputs = st.context->outputs();
  return result;
}

RunResult RunImpl(const kernels::KernelImpl& chosen, const NodeSpec& spec,
                  const std::vector<Tensor>& inputs, const RunOptions& options) {
  PreparedImpl prepared(chosen, spec, inputs, options);
  return prepared.Run();
}

void ForEachSimdTarget(const std::function<void(const std::string&)>& f) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    f(hwy::TargetName(target));
  }
  hwy::SetSupportedTargetsForTest(0);
}

Shape ReferenceOutputShape(const NodeSpec& spec, const std::vector<Tensor>& inputs) {
  const RunResult r = RunImpl(spec, inputs, "");
  EXPECT_TRUE(r.status.ok()) << r.status.message();
  return r.status.ok() ? r.outputs[0].shape() : Shape{};
}

void ExpectImplMatches(const NodeSpec& spec, const std::vector<Tensor>& inputs,
                       const std::string& impl, const Tensor& expected, double atol, double rtol,
                       const std::string& what) {
  ForEachSimdTarget([&](const std::string& target) {
    for (int threads : {1, 2}) {
      for (bool constant : {false, true}) {
        SCOPED_TRACE(what + " " + target + " threads " + std::to_string(threads) +
                     (constant ? " constant W, B" : " W, B"));
        RunOptions o;
        o.threads = threads;
        if (constant) o.constant_inputs = {1, 2};
        const RunResult fast = RunImpl(spec, inputs, impl, o);
        ASSERT_TRUE(fast.status.ok()) << fast.status.message();
        EXPECT_EQ(fast.impl, impl);
        EXPECT_EQ(CompareFloats(fast.outputs[0], expected, atol, rtol), "");
      }
    }
  });
}

Tensor RandomFloats(const Shape& shape, std::mt19937& rng, float lo, float hi) {
  Tensor t = Tensor::Allocate(DType::kFloat, shape);
  std::uniform_real_distribution<float> dist(lo, hi);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t;
}

void InjectSpecials(Tensor& t) {
  const float kSpecials[] = {std::numeric_limits<float>::quiet_NaN(),
                             std::numeric_limits<float>::infinity(),
                             -std::numeric_limits<float>::infinity(),
                             -0.0f,
                             0.0f,
                             100.0f,
                             -100.0f,
                             1e-30f,
                             -1e-30f,
                             88.5f,
                             -88.5f,
                             1e-40f};
  constexpr int64_t kCount = sizeof(kSpecials) / sizeof(kSpecials[0]);
  float* p = t.data<float>();
  // Spread over the tensor (every 5th element from 1), so tails and vector bodies both get some.
  for (int64_t i = 1, k = 0; i < t.numel(); i += 5, ++k) p[i] = kSpecials[k % kCount];
}

Tensor FloatTensor(const Shape& shape, const std::vector<float>& values) {
  Tensor t = Tensor::Allocate(DType::kFloat, shape);
  std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(float));
  return t;
}

Tensor Int64Tensor(const Shape& shape, const std::vector<int64_t>& values) {
  Tensor t = Tensor::Allocate(DType::kInt64, shape);
  std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

std::string CompareFloats(const Tensor& actual, const Tensor& expected, double atol, double rtol) {
  std::ostringstream os;
  if (!actual.defined() || !expected.defined()) return "missing output";
  if (actual.dtype() != DType::kFloat || expected.dtype() != DType::kFloat)
    return "not float32 tensors";
  if (actual.shape() != expected.shape())
    return "shape " + ShapeToString(actual.shape()) + " != " + ShapeToString(expected.shape());
  const float* a = actual.data<float>();
  const float* e = expected.data<float>();
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const bool ok = std::isnan(e[i])   ? std::isnan(a[i])
                    : std::isinf(e[i]) ? a[i] == e[i]
                                       : std::fabs(static_cast<double>(a[i]) - e[i]) <=
                                             atol + rtol * std::fabs(static_cast<double>(e[i]));
    if (!ok) {
      os.precision(9);
      os << "element " << i << ": got " << a[i] << ", expected " << e[i];
      return os.str();
    }
  }
  return "";
}

std::string CompareBytes(const Tensor& actual, const Tensor& expected) {
  if (!actual.defined() || !expected.defined()) return "missing output";
  if (actual.dtype() != expected.dtype()) return "dtype differs";
  if (actual.shape() != expected.shape())
    return "shape " + ShapeToString(actual.shape()) + " != " + ShapeToString(expected.shape());
  const auto* a = static_cast<const unsigned char*>(actual.raw_data());
  const auto* e = static_cast<const unsigned char*>(expected.raw_data());
  for (size_t i = 0; i < actual.nbytes(); ++i)
    if (a[i] != e[i]) return "byte " + std::to_string(i) + " differs";
  return "";
}

}  // namespace onyx::testing
