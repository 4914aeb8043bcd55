// ThreadChoice: how many threads each run of one plan gets. A parallel region ends when its last
// worker does; when other processes hold the cores, a worker the OS has descheduled stalls every
// region of the run, and the run finishes sooner on fewer threads (docs/threading.md). So a plan
// runs at the session's count and, now and then, at a neighbouring count of the ladder
// T, T/2, ..., 1, and keeps the count whose latest runs were fastest. The first run after a
// change of count is not a sample: it makes that count's kernels the first time, and it pays for
// the OpenMP team growing or shrinking. So a probe is two runs, the second one measured. Safe to
// call from several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace onyx::engine {

class ThreadChoice {
 public:
  explicit ThreadChoice(int max_threads);

  // The thread count for the next run.
  int Next();
  // A run that Next() gave `threads` finished after `seconds`.
  void Record(int threads, double seconds);

  // Runs started at each count so far.
  std::map<int, int64_t> runs() const;

  // A probe runs every kMinInterval runs at first; each probe that finds the current count still
  // fastest doubles the interval, up to kMaxInterval (under 1% of runs on probes); a switch, or a
  // probe much faster than the current median, starts again from kMinInterval.
  static constexpr int64_t kFirstProbe = 4;
  static constexpr int64_t kMinInterval = 8;
  static constexpr int64_t kMaxInterval = 256;
  // A count must be this much faster (median of its latest runs) to be switched to, and by
  // at least kMinGainSeconds: runs of a few microseconds differ by noise alone, and each switch
  // costs a run that is not measured.
  static constexpr double kSwitchGain = 0.95;
  static constexpr double kMinGainSeconds = 2e-6;
  // Without a probe, on older runs of another count, only for a clear slowdown: a few slow runs
  // in a row happen on any machine now and then.
  static constexpr double kSlowdownGain = 0.8;

 private:
  struct Times {
    static constexpr int kKept = 5;
    double latest[kKept] = {};  // the latest runs' seconds, a ring
    int count = 0;              // of them valid, up to kKept
    int next = 0;               // ring position
    int skip = 0;               // runs handed out whose times are not samples
    int64_t runs = 0;
    double Median() const;
  };
  size_t IndexOf(int threads) const;
  void SwitchTo(size_t i);
  void ProbeSoon(size_t i);
  static bool Faster(double a, double b, double gain = kSwitchGain) {
    return a < gain * b && b - a > kMinGainSeconds;
  }

  mutable std::mutex mu_;
  std::vector<int> ladder_;  // max_threads, max_threads / 2, ..., 1
  std::vector<Times> times_;
  size_t current_ = 0;
  int64_t runs_ = 0;
  int64_t next_probe_ = kFirstProbe;
  int64_t interval_ = kMinInterval;
  bool probe_down_ = true;  // the next probe tries the next smaller count (else the larger)
  int pending_ = -1;        // the count the next probe tries, when set
  size_t burst_ = 0;        // the count of a probe under way
  int burst_left_ = 0;      // its runs still to hand out
  size_t last_ = SIZE_MAX;  // the count handed out last
};

}  // namespace onyx::engine
