// Softmax over the last axis at the shapes models use: BERT-base attention probabilities
// (12 heads x 128 x 128), an ImageNet classifier (1 x 1000), and a wide and a vocabulary-sized
// row. Reported as GB/s (one read, one write per element).
#include <string>

#include "bench/kernels/kernel_bench.h"

namespace onyx::bench {
namespace {

struct SoftmaxCase {
  const char* name;
  Shape shape;
};

const SoftmaxCase kCases[] = {
    {"classifier_1x1000", {1, 1000}},
    {"bert_attention_12x128x128", {1, 12, 128, 128}},
    {"rows_256x4096", {256, 4096}},
    {"vocab_128x30522", {128, 30522}},
};

void RegisterOne(const SoftmaxCase& c) {
  CaseInfo info;
  info.group = "softmax";
  info.name = c.name;
  info.bytes = 8.0 * ShapeElementCount(c.shape);
  info.elements = static_cast<double>(ShapeElementCount(c.shape));
  benchmark::RegisterBenchmark((std::string("softmax/") + c.name).c_str(),
                               [c, info](benchmark::State& state) {
                                 OneNodeModel m("Softmax", 13);
                                 m.Input("X", c.shape).Output("Y").IntAttr("axis", -1);
                                 RunModel(state, m, "Softmax", info);
                               })
      ->ArgName("threads")
      ->Arg(1)
      ->Arg(2)
      ->UseManualTime()
      ->MinTime(0.2)
      ->Unit(benchmark::kMicrosecond);
}

}  // namespace

void RegisterSoftmaxBenchmarks() {
  for (const SoftmaxCase& c : kCases) RegisterOne(c);
}

}  // namespace onyx::bench
