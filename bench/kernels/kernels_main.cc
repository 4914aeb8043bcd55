// bench_kernels: Google Benchmark micro-benchmarks of the hot kernels (ResNet-50 and SqueezeNet
// convolutions, BERT-base matrix products, elementwise operators, softmax), run through
// onyx::Session so they measure the kernels the planner picks. Prints this machine's fp32 peak
// (derived and measured) first and, after the benchmarks, each model's kernels weighted by how
// often they occur.
//
//   build/bench/bench_kernels [--no-peak-measure] [--benchmark_filter=conv/] [...]
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "bench/kernels/kernel_bench.h"

namespace onyx::bench {
namespace {

// Σ count × flops / Σ count × time per (group, threads): the model's kernels as a whole.
void PrintWeightedSummary(const std::string& group, const char* title) {
  std::map<int, std::pair<double, double>> by_threads;  // threads → (flops, seconds)
  std::map<int, int> shapes;
  for (const auto& [key, r] : Results()) {
    if (r.group != group || r.kernel_s <= 0) continue;
    by_threads[r.threads].first += r.count * r.flops;
    by_threads[r.threads].second += r.count * r.kernel_s;
    ++shapes[r.threads];
  }
  for (const auto& [threads, fs] : by_threads) {
    const double gflops = fs.first / fs.second / 1e9;
    const double measured = Peak().MeasuredGflops(threads);
    std::printf("%-24s %d thread%s: %2d shapes, %7.2f ms per pass, %6.1f GFLOP/s = %5.1f%% of peak",
                title, threads, threads == 1 ? " " : "s", shapes[threads], fs.second * 1e3, gflops,
                100.0 * gflops / Peak().PeakGflops(threads));
    if (measured > 0) std::printf(", %5.1f%% of measured", 100.0 * gflops / measured);
    std::printf("\n");
  }
}

}  // namespace
}  // namespace onyx::bench

int main(int argc, char** argv) {
  using namespace onyx::bench;
  bool measure = true;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no-peak-measure") == 0) {
      measure = false;
      continue;
    }
    args.push_back(argv[i]);
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;

  SetPeak(ProbeCpuPeak(measure));
  std::printf("%s\n", Peak().Describe().c_str());
  std::fflush(stdout);

  RegisterConvBenchmarks();
  RegisterMatMulBenchmarks();
  RegisterElementwiseBenchmarks();
  RegisterSoftmaxBenchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();

  std::printf("\nWeighted by occurrences in the model (kernel time only):\n");
  PrintWeightedSummary("resnet50_conv", "ResNet-50 convolutions");
  PrintWeightedSummary("resnet50_conv_auto", "ResNet-50 convs (auto)");
  PrintWeightedSummary("squeezenet_conv_auto", "SqueezeNet convs (auto)");
  PrintWeightedSummary("bert_matmul", "BERT-base MatMuls");
  return 0;
}
