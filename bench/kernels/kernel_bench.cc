// One-node models and the timing loop shared by the kernel micro-benchmarks.
#include "bench/kernels/kernel_bench.h"

#include <chrono>
#include <functional>
#include <random>

namespace onyx::bench {
namespace {

CpuPeak g_peak;
std::map<std::string, KernelResult> g_results;

void SetType(onnx::ValueInfoProto* vi, const std::string& name, const Shape& shape) {
  vi->set_name(name);
  auto* t = vi->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : shape) t->mutable_shape()->add_dim()->set_dim_value(d);
}

// The benchmarked node's own step: its op type, or a planner-made variant of it in another
// domain (com.onyx NhwcConv for Conv). Layout reorders and the like count as other steps.
bool MatchesOp(const StepEvent& e, const std::string& op) {
  if (e.op_type == op) return true;
  return !e.domain.empty() && e.op_type.size() > op.size() &&
         e.op_type.substr(e.op_type.size() - op.size()) == op;
}

}  // namespace

const CpuPeak& Peak() {
  return g_peak;
}
void SetPeak(const CpuPeak& peak) {
  g_peak = peak;
}
const std::map<std::string, KernelResult>& Results() {
  return g_results;
}

OneNodeModel::OneNodeModel(const std::string& op, int64_t opset) {
  model_.set_ir_version(8);
  auto* o = model_.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  auto* g = model_.mutable_graph();
  g->set_name(op + "_bench");
  node_ = g->add_node();
  node_->set_op_type(op);
  node_->set_name(op);
}

OneNodeModel& OneNodeModel::Input(const std::string& name, const Shape& shape) {
  SetType(model_.mutable_graph()->add_input(), name, shape);
  node_->add_input(name);
  inputs_.push_back({name, shape});
  return *this;
}

OneNodeModel& OneNodeModel::Weight(const std::string& name, const Shape& shape, float scale) {
  auto* t = model_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : shape) t->add_dims(d);
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>()(name)));
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(ShapeElementCount(shape)));
  for (float& x : v) x = dist(rng);
  t->set_raw_data(v.data(), v.size() * sizeof(float));
  node_->add_input(name);
  return *this;
}

OneNodeModel& OneNodeModel::Output(const std::string& name) {
  node_->add_output(name);
  auto* g = model_.mutable_graph();
  for (const char* c : {"starts", "ends", "axes"}) {
    auto* t = g->add_initializer();
    t->set_name(name + "_sink_" + c);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(1);
    t->add_int64_data(c[0] == 's' ? 0 : c[0] == 'e' ? 1 : -1);
  }
  auto* slice = g->add_node();
  slice->set_op_type("Slice");
  slice->set_name(name + "_sink");
  for (const char* c : {"", "_sink_starts", "_sink_ends", "_sink_axes"}) slice->add_input(name + c);
  slice->add_output(name + "_sink");
  auto* vi = g->add_output();
  vi->set_name(name + "_sink");
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return *this;
}

OneNodeModel& OneNodeModel::IntAttr(const std::string& name, int64_t v) {
  auto* a = node_->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
  return *this;
}

OneNodeModel& OneNodeModel::IntsAttr(const std::string& name, const std::vector<int64_t>& v) {
  auto* a = node_->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
  return *this;
}

NamedValues OneNodeModel::Feeds() const {
  NamedValues feeds;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const auto& [name, shape] : inputs_) {
    Tensor x = Tensor::Allocate(DType::kFloat, shape);
    float* p = x.data<float>();
    for (int64_t i = 0; i < x.numel(); ++i) p[i] = dist(rng);
    feeds.push_back({name, Value(x)});
  }
  return feeds;
}

void RunModel(benchmark::State& state, const OneNodeModel& model, const std::string& op,
              const CaseInfo& info) {
  const int threads = static_cast<int>(state.range(0));
  SessionOptions so;
  so.intra_op_threads = threads;
  so.winograd = info.winograd;
  auto session = Session::CreateFromBytes(model.Bytes(), so);
  if (!session.ok()) {
    state.SkipWithError(session.status().message().c_str());
    return;
  }
  const NamedValues feeds = model.Feeds();
  NamedValues outs;
  double kernel_s = 0, other_s = 0;
  std::string impl;
  RunOptions ro;
  ro.step_observer = [&](const StepEvent& e) {
    const double s = std::chrono::duration<double>(e.duration).count();
    if (MatchesOp(e, op)) {
      kernel_s += s;
      if (impl.empty()) impl = std::string(e.impl);
    } else {
      other_s += s;
    }
  };
  // One untimed run: first-run costs (page faults on the arena, lazy packing) stay out.
  Status s = session->Run(feeds, ro, &outs);
  if (!s.ok()) {
    state.SkipWithError(s.message().c_str());
    return;
  }
  double total_kernel = 0, total_other = 0, total_run = 0;
  for (auto _ : state) {
    kernel_s = other_s = 0;
    const auto t0 = std::chrono::steady_clock::now();
    s = session->Run(feeds, ro, &outs);
    const auto t1 = std::chrono::steady_clock::now();
    if (!s.ok()) {
      state.SkipWithError(s.message().c_str());
      return;
    }
    // A planner that renames the node's op type would leave nothing matched: time every step.
    state.SetIterationTime(impl.empty() ? other_s : kernel_s);
    if (impl.empty()) std::swap(kernel_s, other_s);
    total_kernel += kernel_s;
    total_other += other_s;
    total_run += std::chrono::duration<double>(t1 - t0).count();
  }
  const double n = static_cast<double>(state.iterations());
  const double per_run = total_kernel / n;
  if (info.flops > 0) {
    const double gflops = info.flops / per_run / 1e9;
    state.counters["GFLOP/s"] = gflops;
    state.counters["peak%"] = 100.0 * gflops / Peak().PeakGflops(threads);
    if (Peak().MeasuredGflops(threads) > 0)
      state.counters["meas%"] = 100.0 * gflops / Peak().MeasuredGflops(threads);
  }
  if (info.bytes > 0) state.counters["GB/s"] = info.bytes / per_run / 1e9;
  if (info.elements > 0) state.counters["Gelem/s"] = info.elements / per_run / 1e9;
  state.counters["run_ms"] = 1e3 * total_run / n;
  state.counters["other_ms"] = 1e3 * total_other / n;
  state.SetLabel(impl);
  KernelResult r{info.group, info.name, threads, info.count, info.flops, per_run, impl};
  g_results[info.group + "/" + info.name + "/" + std::to_string(threads)] = r;
}

}  // namespace onyx::bench
