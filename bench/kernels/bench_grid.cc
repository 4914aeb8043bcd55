// bench_kernel_grid: every registered kernel impl (fast and reference) timed on every case of the
// kernel grid (tests/kernels/kernel_grid.h) it takes, so a new kernel gets its benchmark from its
// operator's cases with no code. Each benchmark creates the impl's kernel once (constants packed
// as the planner would) and times Kernel::Run on its inputs, outputs reused as arena slots are.
// ONYX_ISA caps the impls (those above the cap are left out) and their libraries' dispatch.
//
//   build/bench/bench_kernel_grid [--grid_scale=N] [--grid_threads=T] [--benchmark_filter=Conv/]
//
// --grid_scale multiplies one dimension of the graph inputs of the cases that mark one
// (GridCase::scale_dim): element-wise ops, reductions, normalizations, products' rows, ...;
// benchmark names are grid/<domain.op>/<case>/<impl>.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/op_registry.h"
#include "tests/kernels/kernel_grid.h"
#include "tests/kernels/kernel_harness.h"

namespace onyx::bench {
namespace {

using kernels::KernelImpl;
using kernels::OpDef;
using testing::GridCase;

struct GridBench {
  const KernelImpl* impl;
  const GridCase* c;
  int64_t opset;
  int scale;
  int threads;
};

void RunGridBench(benchmark::State& state, GridBench b) {
  testing::RunOptions o;
  o.threads = b.threads;
  o.reuse_outputs = true;
  o.constant_inputs = testing::ConstantInputsOf(*b.c);
  testing::PreparedImpl p(*b.impl, testing::SpecOf(*b.c, b.opset),
                          testing::InputsOf(*b.c, 1, b.scale), o);
  if (!p.ok()) {
    state.SkipWithError(p.status().message().c_str());
    return;
  }
  // One run before timing: oneDNN generates some kernels' code on their first execution.
  const testing::RunResult first = p.Run();
  if (!first.status.ok()) {
    state.SkipWithError(first.status.message().c_str());
    return;
  }
  int64_t elements = 0;
  for (auto _ : state) {
    const testing::RunResult r = p.Run();
    if (!r.status.ok()) {
      state.SkipWithError(r.status.message().c_str());
      return;
    }
    if (elements == 0 && !r.outputs.empty() && r.outputs[0].defined())
      elements = r.outputs[0].numel();
  }
  state.SetItemsProcessed(state.iterations() * elements);  // output 0's elements
}

// Registers one benchmark per (case, impl that takes it): the case against the latest definition
// of its operator whose opset range it overlaps.
int RegisterGrid(int scale, int threads) {
  const kernels::IsaLevel cap = kernels::ProcessIsaCap();
  std::map<std::string, const OpDef*> latest;  // "domain.op/case" → definition
  std::map<std::string, std::pair<const GridCase*, int64_t>> at;
  for (const OpDef* def : kernels::OpRegistry::Global().All()) {
    for (const GridCase& c : testing::KernelGrid()) {
      if (c.domain != def->domain || c.op != def->op_type) continue;
      const int64_t lo = std::max(c.min_opset, def->since), hi = std::min(c.max_opset, def->until);
      if (lo > hi) continue;
      const std::string key = (c.domain.empty() ? "" : c.domain + ".") + c.op + "/" + c.name;
      if (!latest.count(key) || latest[key]->since < def->since) {
        latest[key] = def;
        at[key] = {&c, hi};
      }
    }
  }
  int registered = 0;
  for (const auto& [key, def] : latest) {
    const auto [c, opset] = at[key];
    for (const KernelImpl& impl : def->impls) {
      if (!kernels::IsaAtMost(impl.isa.RunsAt(), cap)) continue;
      testing::RunOptions o;
      o.constant_inputs = testing::ConstantInputsOf(*c);
      testing::PreparedImpl probe(impl, testing::SpecOf(*c, opset), testing::InputsOf(*c, 1), o);
      if (probe.declined()) continue;
      benchmark::RegisterBenchmark(("grid/" + key + "/" + impl.name).c_str(), RunGridBench,
                                   GridBench{&impl, c, opset, scale, threads})
          ->Unit(benchmark::kMicrosecond);
      ++registered;
    }
  }
  return registered;
}

}  // namespace
}  // namespace onyx::bench

int main(int argc, char** argv) {
  int scale = 1, threads = 1;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--grid_scale=", 13) == 0) {
      scale = std::max(1, std::atoi(argv[i] + 13));
    } else if (std::strncmp(argv[i], "--grid_threads=", 15) == 0) {
      threads = std::max(1, std::atoi(argv[i] + 15));
    } else {
      args.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  const int registered = onyx::bench::RegisterGrid(scale, threads);
  std::printf("grid: %d (case, impl) benchmarks, scale %d, %d thread(s), ONYX_ISA cap %s\n",
              registered, scale, threads, onyx::kernels::IsaName(onyx::kernels::ProcessIsaCap()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
