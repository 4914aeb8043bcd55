// Google Benchmark over the light models: session creation and one run at 1 and 2 threads.
#include <benchmark/benchmark.h>

#include <algorithm>

#include "onyx/session.h"

namespace {

onyx::NamedValues RampInputs(const onyx::Session& s) {
  onyx::NamedValues feeds;
  const auto required = s.required_inputs();
  for (const auto& in : s.inputs()) {
    if (std::find(required.begin(), required.end(), in.name) == required.end()) continue;
    onyx::Shape shape;
    for (const auto& d : in.type.dims) shape.push_back(d.known() ? d.value : 1);
    onyx::Tensor x = onyx::Tensor::Allocate(onyx::DType::kFloat, shape);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i) / x.numel();
    feeds.push_back({in.name, onyx::Value(x)});
  }
  return feeds;
}

void BM_Run(benchmark::State& state, const std::string& model) {
  onyx::SessionOptions o;
  o.intra_op_threads = static_cast<int>(state.range(0));
  onyx::Session s(std::string(ONYX_TEST_DATA) + "/light/light_" + model + ".onnx", o);
  auto feeds = RampInputs(s);
  for (auto _ : state) benchmark::DoNotOptimize(s.Run(feeds));
}

BENCHMARK_CAPTURE(BM_Run, squeezenet, std::string("squeezenet"))
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Run, resnet50, std::string("resnet50"))
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
