// Per-step profiling for `onyx bench --profile FILE`: collects the executor's StepEvents over the
// timed runs, writes them as Chrome trace-event JSON (opens in Perfetto or chrome://tracing) and
// sums kernel time per operator type. Header-only: the CLI is its only user.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "onyx/session.h"
#include "planner/execution_plan.h"

namespace onyx::cli {

class StepProfile {
 public:
  using Clock = std::chrono::steady_clock;

  struct OpStat {
    std::string op;  // "Conv", or "domain:Op" outside ai.onnx
    double total_ms = 0;
    int64_t calls = 0;
  };

  // Marks the start and end of timed run `run`; steps reported in between belong to it.
  void BeginRun(int run) {
    std::lock_guard<std::mutex> lock(mu_);
    run_ = run;
    runs_.push_back({Clock::now(), Clock::now()});
    if (runs_.size() == 1) origin_ = runs_.back().first;
  }
  void EndRun() {
    std::lock_guard<std::mutex> lock(mu_);
    runs_.back().second = Clock::now();
  }

  // The hook for RunOptions::step_observer. Locks, so a kernel that runs subgraphs from
  // several threads cannot corrupt the event list.
  StepObserver Observer() {
    return [this](const StepEvent& e) {
      Event ev;
      ev.name = std::string(e.node_name);
      ev.op_type = std::string(e.op_type);
      ev.domain = std::string(e.domain);
      ev.op = ev.domain.empty() ? ev.op_type : ev.domain + ":" + ev.op_type;
      ev.impl = std::string(e.impl);
      ev.start = e.start;
      ev.duration = e.duration;
      ev.depth = e.depth;
      ev.fused = e.fused_nodes;
      ev.shapes = e.output_shapes;
      std::lock_guard<std::mutex> lock(mu_);
      ev.run = run_;
      auto [it, fresh] = tids_.emplace(e.thread, static_cast<int>(tids_.size()) + 1);
      ev.tid = it->second;
      events_.push_back(std::move(ev));
    };
  }

  // Top-level steps (subgraph steps are inside their parent's time) by op type, slowest first.
  std::vector<OpStat> Summary() const {
    std::map<std::string, OpStat> by_op;
    for (const Event& e : events_) {
      if (e.depth != 0) continue;
      OpStat& s = by_op[e.op];
      s.op = e.op;
      s.total_ms += Ms(e.duration);
      ++s.calls;
    }
    std::vector<OpStat> out;
    for (auto& [op, s] : by_op) out.push_back(s);
    std::stable_sort(out.begin(), out.end(),
                     [](const OpStat& a, const OpStat& b) { return a.total_ms > b.total_ms; });
    return out;
  }
  // Sum of top-level kernel time, and of whole Session::Run time, over all runs.
  double KernelMs() const {
    double t = 0;
    for (const Event& e : events_)
      if (e.depth == 0) t += Ms(e.duration);
    return t;
  }
  double RunMs() const {
    double t = 0;
    for (const auto& [b, e] : runs_) t += Ms(e - b);
    return t;
  }
  int64_t TopLevelSteps() const {
    return std::count_if(events_.begin(), events_.end(),
                         [](const Event& e) { return e.depth == 0; });
  }
  bool HasSubgraphSteps() const {
    return std::any_of(events_.begin(), events_.end(), [](const Event& e) { return e.depth > 0; });
  }

  // Chrome trace-event JSON: one complete ("X") event per step with ts/dur in microseconds from
  // the first timed run, one per run (cat "run"), and thread names.
  bool WriteChromeTrace(const std::string& path, const std::string& model, int threads) const {
    std::ofstream f(path);
    if (!f) return false;
    const std::string esc_model = planner::JsonEscape(model);
    f << "{\"displayTimeUnit\": \"ms\",\n \"otherData\": {\"model\": \"" << esc_model
      << "\", \"threads\": " << threads << ", \"runs\": " << runs_.size()
      << "},\n \"traceEvents\": [\n";
    f << "  {\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 0, \"args\": "
         "{\"name\": \"onyx "
      << esc_model << "\"}}";
    for (const auto& [id, tid] : tids_)
      f << ",\n  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": " << tid
        << ", \"args\": {\"name\": \"thread " << tid << "\"}}";
    for (size_t r = 0; r < runs_.size(); ++r) {
      f << ",\n  {\"name\": \"run " << r << "\", \"cat\": \"run\", \"ph\": \"X\", \"pid\": 1, "
        << "\"tid\": 1, \"ts\": " << Us(runs_[r].first - origin_)
        << ", \"dur\": " << Us(runs_[r].second - runs_[r].first) << "}";
    }
    for (const Event& e : events_) {
      f << ",\n  {\"name\": \"" << planner::JsonEscape(e.name.empty() ? e.op : e.name)
        << "\", \"cat\": \"" << planner::JsonEscape(e.op) << "\", \"ph\": \"X\", \"pid\": 1, "
        << "\"tid\": " << e.tid << ", \"ts\": " << Us(e.start - origin_)
        << ", \"dur\": " << Us(e.duration) << ", \"args\": {\"op_type\": \""
        << planner::JsonEscape(e.op_type) << "\", \"domain\": \"" << planner::JsonEscape(e.domain)
        << "\", \"impl\": \"" << planner::JsonEscape(e.impl) << "\", \"run\": " << e.run
        << ", \"depth\": " << e.depth << ", \"fused_nodes\": " << e.fused << ", \"outputs\": [";
      for (size_t k = 0; k < e.shapes.size(); ++k)
        f << (k ? ", " : "") << "\"" << ShapeToString(e.shapes[k]) << "\"";
      f << "]}}";
    }
    f << "\n]}\n";
    return static_cast<bool>(f);
  }

  // The per-op-type table: total ms over all runs, share of kernel time, calls, average ms.
  void PrintSummary(std::FILE* out) const {
    const double kernel = KernelMs(), total = RunMs();
    const size_t runs = std::max<size_t>(1, runs_.size());
    std::fprintf(out,
                 "profile: %zu runs, %lld steps per run; kernels %.1f%% of Session::Run time\n",
                 runs_.size(), static_cast<long long>(TopLevelSteps() / runs),
                 total > 0 ? 100.0 * kernel / total : 0.0);
    std::fprintf(out, "%-28s %10s %7s %8s %9s %9s\n", "op type", "total ms", "share", "calls",
                 "avg ms", "ms/run");
    for (const OpStat& s : Summary())
      std::fprintf(out, "%-28s %10.3f %6.1f%% %8lld %9.4f %9.3f\n", s.op.c_str(), s.total_ms,
                   kernel > 0 ? 100.0 * s.total_ms / kernel : 0.0, static_cast<long long>(s.calls),
                   s.total_ms / s.calls, s.total_ms / runs);
    if (HasSubgraphSteps())
      std::fprintf(out,
                   "(steps inside subgraphs are counted in their parent; the trace has them)\n");
  }

 private:
  struct Event {
    std::string name, op_type, domain, impl;
    std::string op;  // op_type, or "domain:op_type" outside ai.onnx
    Clock::time_point start;
    std::chrono::nanoseconds duration{0};
    int tid = 0, run = -1, depth = 0, fused = 0;
    std::vector<Shape> shapes;
  };
  template <typename D>
  static double Ms(D d) {
    return std::chrono::duration<double, std::milli>(d).count();
  }
  template <typename D>
  static std::string Us(D d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", std::chrono::duration<double, std::micro>(d).count());
    return buf;
  }

  mutable std::mutex mu_;
  std::vector<Event> events_;
  std::vector<std::pair<Clock::time_point, Clock::time_point>> runs_;
  std::map<std::thread::id, int> tids_;
  Clock::time_point origin_;
  int run_ = -1;
};

}  // namespace onyx::cli
