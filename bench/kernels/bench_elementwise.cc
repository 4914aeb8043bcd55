// Elementwise operators at several sizes (from an L1-resident 4K floats to an 8M-float stream),
// reported as GB/s moved and elements per second.
#include <string>

#include "bench/kernels/kernel_bench.h"

namespace onyx::bench {
namespace {

struct ElementwiseOp {
  const char* op;
  int inputs;
};

const ElementwiseOp kOps[] = {
    {"Add", 2},     {"Mul", 2},  {"Div", 2}, {"Relu", 1},
    {"Sigmoid", 1}, {"Tanh", 1}, {"Erf", 1}, {"Exp", 1},
};
const int64_t kSizes[] = {4096, 65536, 1 << 20, 8 << 20};

void RegisterOne(const ElementwiseOp& e, int64_t n) {
  const std::string name = std::string(e.op) + "/" + std::to_string(n);
  CaseInfo info;
  info.group = "elementwise";
  info.name = name;
  info.bytes = 4.0 * n * (e.inputs + 1);
  info.elements = static_cast<double>(n);
  // Elementwise kernels are bound by memory, not FMA throughput: no % of peak.
  benchmark::RegisterBenchmark(("elementwise/" + name).c_str(),
                               [e, n, info](benchmark::State& state) {
                                 OneNodeModel m(e.op);
                                 m.Input("X", {n});
                                 if (e.inputs == 2) m.Input("Y", {n});
                                 m.Output("Z");
                                 RunModel(state, m, e.op, info);
                               })
      ->ArgName("threads")
      ->Arg(1)
      ->Arg(2)
      ->UseManualTime()
      ->MinTime(0.2)
      ->Unit(benchmark::kMicrosecond);
}

}  // namespace

void RegisterElementwiseBenchmarks() {
  for (const ElementwiseOp& e : kOps)
    for (int64_t n : kSizes) RegisterOne(e, n);
}

}  // namespace onyx::bench
