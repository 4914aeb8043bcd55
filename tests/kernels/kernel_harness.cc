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
    if (i == 0 && options_.output_over_input0 && has_input(0) && inputs_[0].is_tensor() &&
        inputs_[0].tensor().dtype() == dtype &&
        inputs_[0].tensor().numel() == ShapeElementCount(shape)) {
      t = inputs_[0].tensor().Reshaped(shape);
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
  result.impl = chosen->name;
  ir::Node node;
  node.name = "n";
  node.op_type = spec.op;
  node.domain = spec.domain;
  node.opset = spec.opset;
  node.attributes = spec.attrs;
  std::vector<Value> values;
  std::vector<TypeInfo> types;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    node.inputs.push_back(t.defined() ? "in" + std::to_string(i) : "");
    Tensor v = t;
    if (i == 0 && options.output_over_input0 && t.defined()) v = t.Clone();
    values.push_back(t.defined() ? Value(v) : Value());
    types.push_back(t.defined() ? TypeInfo::TensorWithShape(t.dtype(), t.shape()) : TypeInfo());
  }
  for (int i = 0; i < spec.num_outputs; ++i) node.outputs.push_back("out" + std::to_string(i));
  NodeView view(node);
  if (chosen->supports) {
    Status s = chosen->supports(view, types);
    if (!s.ok()) {
      result.status = s.WithContext(chosen->name + " rejects the node: ");
      return result;
    }
  }
  StatusOr<std::unique_ptr<kernels::Kernel>> kernel = std::unique_ptr<kernels::Kernel>();
  if (chosen->create_with_info) {  // plan-time kernels (oneDNN, packed weights)
    kernels::KernelCreateInfo info;
    info.threads = options.threads;
    info.constants.assign(inputs.size(), nullptr);
    for (int i : options.constant_inputs)
      if (i >= 0 && i < static_cast<int>(inputs.size()) && inputs[i].defined())
        info.constants[i] = &inputs[i];
    kernel = chosen->create_with_info(view, types, info);
  } else {
    kernel = chosen->create(view, types);
  }
  if (!kernel.ok()) {
    result.status = kernel.status();
    return result;
  }
  result.variant = (*kernel)->variant();
  DirectContext ctx(node, std::move(values), spec.num_outputs, options);
  result.status = (*kernel)->Run(ctx);
  result.outputs = ctx.outputs();
  return result;
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
