// ResNet-50's and SqueezeNet's convolutions (batch 1, 224x224 input; every distinct shape of the
// onnx package's light models with its multiplicity), each as a one-node model with constant
// weights and bias (after Conv+BatchNorm folding every conv has a bias). ResNet-50 twice: conv/
// with direct convolution only (the hardware efficiency: its FLOPs are the ones executed),
// conv_auto/ with the algorithm the session picks (Winograd for the 3x3 stride-1 ones; GFLOP/s
// there counts direct FLOPs, so it is the effective rate and may exceed the peak). SqueezeNet's
// small maps (55x55 to 13x13) show how far two threads get over one (docs/benchmarks.md).
#include <cmath>
#include <string>

#include "bench/kernels/kernel_bench.h"

namespace onyx::bench {
namespace {

struct ConvShape {
  int cin, hw, cout, k, stride, pad, count;
};

// From light_resnet50.onnx with onnx shape inference: (C_in, H=W, C_out, kernel, stride, pad),
// and how many convolutions of the model have that shape (53 in all).
constexpr ConvShape kResNet50Convs[] = {
    {3, 224, 64, 7, 2, 3, 1},    {64, 56, 64, 1, 1, 0, 1},     {64, 56, 64, 3, 1, 1, 3},
    {64, 56, 256, 1, 1, 0, 4},   {256, 56, 64, 1, 1, 0, 2},    {256, 56, 128, 1, 1, 0, 1},
    {128, 56, 128, 3, 2, 1, 1},  {256, 56, 512, 1, 2, 0, 1},   {128, 28, 512, 1, 1, 0, 4},
    {512, 28, 128, 1, 1, 0, 3},  {128, 28, 128, 3, 1, 1, 3},   {512, 28, 256, 1, 1, 0, 1},
    {256, 28, 256, 3, 2, 1, 1},  {512, 28, 1024, 1, 2, 0, 1},  {256, 14, 1024, 1, 1, 0, 6},
    {1024, 14, 256, 1, 1, 0, 5}, {256, 14, 256, 3, 1, 1, 5},   {1024, 14, 512, 1, 1, 0, 1},
    {512, 14, 512, 3, 2, 1, 1},  {1024, 14, 2048, 1, 2, 0, 1}, {512, 7, 2048, 1, 1, 0, 3},
    {2048, 7, 512, 1, 1, 0, 2},  {512, 7, 512, 3, 1, 1, 2},
};

// From light_squeezenet.onnx (SqueezeNet 1.1): the stem, the fire modules' squeeze 1x1 and
// expand 1x1 / 3x3 convolutions, and the 1000-class 1x1 classifier (26 in all).
constexpr ConvShape kSqueezeNetConvs[] = {
    {3, 224, 64, 3, 2, 0, 1},  {64, 55, 16, 1, 1, 0, 1},  {128, 55, 16, 1, 1, 0, 1},
    {128, 27, 32, 1, 1, 0, 1}, {256, 27, 32, 1, 1, 0, 1}, {256, 13, 48, 1, 1, 0, 1},
    {384, 13, 48, 1, 1, 0, 1}, {384, 13, 64, 1, 1, 0, 1}, {512, 13, 64, 1, 1, 0, 1},
    {16, 55, 64, 1, 1, 0, 2},  {32, 27, 128, 1, 1, 0, 2}, {48, 13, 192, 1, 1, 0, 2},
    {64, 13, 256, 1, 1, 0, 2}, {16, 55, 64, 3, 1, 1, 2},  {32, 27, 128, 3, 1, 1, 2},
    {48, 13, 192, 3, 1, 1, 2}, {64, 13, 256, 3, 1, 1, 2}, {512, 13, 1000, 1, 1, 0, 1},
};

void RegisterOne(const ConvShape& c, const std::string& model, bool winograd) {
  const int out = (c.hw + 2 * c.pad - c.k) / c.stride + 1;
  const std::string name = "c" + std::to_string(c.cin) + "_" + std::to_string(c.hw) + "x" +
                           std::to_string(c.hw) + "_k" + std::to_string(c.k) + "s" +
                           std::to_string(c.stride) + "_o" + std::to_string(c.cout);
  CaseInfo info;
  info.group = model + (winograd ? "_conv_auto" : "_conv");
  info.winograd = winograd;
  info.name = name;
  info.count = c.count;
  info.flops = 2.0 * c.cin * c.cout * c.k * c.k * out * out;
  info.bytes = 4.0 * (c.cin * c.hw * c.hw + c.cout * out * out + c.cout * c.cin * c.k * c.k);
  const std::string prefix = (winograd ? "conv_auto/" : "conv/") + model + "/";
  benchmark::RegisterBenchmark((prefix + name).c_str(),
                               [c, info](benchmark::State& state) {
                                 OneNodeModel m("Conv");
                                 m.Input("X", {1, c.cin, c.hw, c.hw})
                                     .Weight("W", {c.cout, c.cin, c.k, c.k},
                                             std::sqrt(2.0f / (c.cin * c.k * c.k)))
                                     .Weight("B", {c.cout}, 0.1f)
                                     .Output("Y")
                                     .IntsAttr("kernel_shape", {c.k, c.k})
                                     .IntsAttr("strides", {c.stride, c.stride})
                                     .IntsAttr("pads", {c.pad, c.pad, c.pad, c.pad});
                                 RunModel(state, m, "Conv", info);
                               })
      ->ArgName("threads")
      ->Arg(1)
      ->Arg(2)
      ->UseManualTime()
      ->MinTime(0.2)
      ->Unit(benchmark::kMillisecond);
}

}  // namespace

void RegisterConvBenchmarks() {
  for (bool winograd : {false, true})
    for (const ConvShape& c : kResNet50Convs) RegisterOne(c, "resnet50", winograd);
  for (const ConvShape& c : kSqueezeNetConvs) RegisterOne(c, "squeezenet", true);
}

}  // namespace onyx::bench
