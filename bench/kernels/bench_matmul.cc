// BERT-base's matrix products (batch 1, sequence 128, hidden 768, 12 heads, FFN 3072) as one-node
// MatMul models: the projections with a constant weight, the attention products with two inputs.
#include <cmath>
#include <string>

#include "bench/kernels/kernel_bench.h"

namespace onyx::bench {
namespace {

struct MatMulCase {
  const char* name;
  Shape a, b;
  bool b_constant;
  int count;  // per BERT-base forward pass (12 layers)
};

const MatMulCase kBertMatMuls[] = {
    {"qkvo_128x768x768", {1, 128, 768}, {768, 768}, true, 48},
    {"ffn_up_128x768x3072", {1, 128, 768}, {768, 3072}, true, 12},
    {"ffn_down_128x3072x768", {1, 128, 3072}, {3072, 768}, true, 12},
    {"scores_12x128x64x128", {1, 12, 128, 64}, {1, 12, 64, 128}, false, 12},
    {"context_12x128x128x64", {1, 12, 128, 128}, {1, 12, 128, 64}, false, 12},
};

void RegisterOne(const MatMulCase& c) {
  // [..., M, K] x [..., K, N]: batch = product of A's leading dims.
  const int64_t k = c.a.back(), n = c.b.back();
  int64_t batch_m = 1;
  for (size_t i = 0; i + 1 < c.a.size(); ++i) batch_m *= c.a[i];
  CaseInfo info;
  info.group = "bert_matmul";
  info.name = c.name;
  info.count = c.count;
  info.flops = 2.0 * batch_m * k * n;
  info.bytes = 4.0 * (ShapeElementCount(c.a) + ShapeElementCount(c.b) + batch_m * n);
  benchmark::RegisterBenchmark((std::string("matmul/bert/") + c.name).c_str(),
                               [c, info](benchmark::State& state) {
                                 OneNodeModel m("MatMul");
                                 m.Input("A", c.a);
                                 if (c.b_constant)
                                   m.Weight("B", c.b, 0.02f);
                                 else
                                   m.Input("B", c.b);
                                 m.Output("Y");
                                 RunModel(state, m, "MatMul", info);
                               })
      ->ArgName("threads")
      ->Arg(1)
      ->Arg(2)
      ->UseManualTime()
      ->MinTime(0.2)
      ->Unit(benchmark::kMillisecond);
}

}  // namespace

void RegisterMatMulBenchmarks() {
  for (const MatMulCase& c : kBertMatMuls) RegisterOne(c);
}

}  // namespace onyx::bench
