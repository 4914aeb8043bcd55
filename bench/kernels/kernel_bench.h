// Shared pieces of the kernel micro-benchmarks: one-node ONNX models, a Session::Run timing loop
// that reports the node's own kernel time (through the executor's step observer), and a table of
// results for the per-model summaries printed after the run.
//
// Each benchmark builds a real one-node model and runs it through onyx::Session, so it measures
// whichever kernel the planner picks for that node (reference, oneDNN, Highway, ...).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/kernels/cpu_peak.h"
#include "onnx/onnx-ml.pb.h"
#include "onyx/session.h"

namespace onyx::bench {

// The machine's peak, probed once by main() before any benchmark runs.
const CpuPeak& Peak();
void SetPeak(const CpuPeak& peak);

// A model with a single node `op` (opset `opset`), built with the generated ONNX classes.
class OneNodeModel {
 public:
  OneNodeModel(const std::string& op, int64_t opset = 17);
  // A float graph input, filled by Feeds() with uniform values in [-1, 1).
  OneNodeModel& Input(const std::string& name, const Shape& shape);
  // A float initializer with normal values of standard deviation `scale` (seeded by name).
  OneNodeModel& Weight(const std::string& name, const Shape& shape, float scale);
  // The node's output. It is not a graph output: a Slice of one element along the last axis
  // reads it, so it lives in the plan's arena as in a real model (a graph output would be a
  // fresh heap buffer every run, and the kernel would be timed page-faulting it in).
  OneNodeModel& Output(const std::string& name);
  OneNodeModel& IntAttr(const std::string& name, int64_t v);
  OneNodeModel& IntsAttr(const std::string& name, const std::vector<int64_t>& v);
  std::string Bytes() const { return model_.SerializeAsString(); }
  NamedValues Feeds() const;

 private:
  onnx::ModelProto model_;
  onnx::NodeProto* node_;
  std::vector<std::pair<std::string, Shape>> inputs_;
};

// What one benchmark measured, kept for the summaries.
struct KernelResult {
  std::string group;  // "resnet50_conv", "bert_matmul", ...
  std::string case_name;
  int threads = 1;
  int count = 1;        // how often this shape occurs in the model
  double flops = 0;     // per run
  double kernel_s = 0;  // mean kernel time per run
  std::string impl;
};
const std::map<std::string, KernelResult>& Results();

struct CaseInfo {
  std::string group, name;
  int count = 1;
  double flops = 0;      // 0: not a compute-bound kernel (no % of peak)
  double bytes = 0;      // bytes read + written per run (for GB/s)
  double elements = 0;   // output elements per run (for Gelem/s)
  bool winograd = true;  // SessionOptions::winograd: false measures direct convolution only
};

// Runs `model` on state.range(0) intra-op threads. The benchmark's (manual) time is the time of
// the steps whose op type is `op`; counters: GFLOP/s and peak% (when flops > 0), GB/s (when
// bytes > 0), Gelem/s (when elements > 0), run_ms (whole Session::Run), other_ms (steps of other op
// types, e.g. reorders). The label is the kernel implementation the planner picked.
void RunModel(benchmark::State& state, const OneNodeModel& model, const std::string& op,
              const CaseInfo& info);

// Registration functions, one per benchmark file; main() calls them all.
void RegisterConvBenchmarks();
void RegisterMatMulBenchmarks();
void RegisterElementwiseBenchmarks();
void RegisterSoftmaxBenchmarks();

}  // namespace onyx::bench
