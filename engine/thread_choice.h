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
#include <memory>
#include <mutex>
#include <vector>

namespace onyx::engine {

class ThreadChoice {
 public:
  // Probes toward fewer threads (a larger ladder index) or more.
  struct Direction;
  // When to probe next, shared by the plans of one session: a session that runs many shapes has
  // many plans that each see a few runs. Probing on a schedule of their own, each plan made a
  // quiet host pay for its probes (BERT at 32 lengths, 2 threads: 200 ms a pass instead of 150).
  struct Probes;
  // Runs start at start_threads (0: max_threads), rounded down to the ladder: a plan made while
  // the session's other plans run on fewer threads starts where they are. `probes`: the
  // session's schedule (null: one of its own).
  explicit ThreadChoice(int max_threads, int start_threads = 0,
                        std::shared_ptr<Probes> probes = nullptr);

  // The thread count for the next run.
  int Next();
  // A run that Next() gave `threads` finished after `seconds`. True when this switched the
  // current count (to current()).
  bool Record(int threads, double seconds);
  // The count runs get between probes.
  int current() const;

  // Runs started at each count so far.
  std::map<int, int64_t> runs() const;

  // Probes toward fewer threads and toward more are scheduled apart. Each direction probes
  // kMinInterval runs after the last switch at first; a probe that finds the current count still
  // fastest doubles its direction's interval (quadruples it when the probe took over 1.5 times as
  // long), up to kMaxDownInterval toward fewer threads and kMaxUpInterval toward more (or
  // kEarlyUpInterval during a plan's first kEarlyRuns runs, so that load that passes early does
  // not hold a new plan below its count for long); a switch, or a probe much faster than the
  // current time, starts again from kMinInterval. Probes toward fewer threads can be rare: a
  // load that arrives slows the current count past the older runs of fewer threads, which
  // switches without a probe (kSlowdownGain); and on a quiet host each such probe costs, besides
  // its own slower runs, the wake of the workers that slept meanwhile (20 ms on a 2-core VM).
  static constexpr int64_t kFirstProbe = 4;
  static constexpr int64_t kMinInterval = 8;
  static constexpr int64_t kMaxDownInterval = 4096;
  static constexpr int64_t kMaxUpInterval = 64;
  static constexpr int64_t kEarlyUpInterval = 16;
  static constexpr int64_t kEarlyRuns = 128;
  // A probe that finds a count faster is confirmed by another probe kConfirmAfter runs later
  // (fresh runs of the current count in between) before the switch: the runs just after another
  // engine's threads spun in the same process measured two threads slow for a moment, and a
  // single probe moved SqueezeNet to one thread for dozens of runs.
  static constexpr int64_t kConfirmAfter = 5;
  // A probe this much faster switches at once (a loaded host: two threads took 1.9 times as long
  // as one on SqueezeNet, 1.5 times on VGG-19, where at 0.6 the confirming probe kept 8 of a
  // plan's first 12 runs at two threads; the passing slowdowns measured 1.2-1.3 times). A switch
  // made on fewer than a full set of the current count's runs is hasty: in compare.py a new plan's
  // first runs, just after OpenVINO's and ORT's, took 3-5 times their time at two threads, and the
  // probe at run 4 moved ShuffleNet to one thread. The count a hasty switch left is probed again
  // kConfirmAfter runs later, and one faster run there switches back.
  static constexpr double kSureGain = 0.7;
  // A count must be this much faster (Times::Typical of its latest runs) to be switched to, and by
  // at least kMinGainSeconds: runs of a few microseconds differ by noise alone, and each switch
  // costs a run that is not measured.
  static constexpr double kSwitchGain = 0.95;
  static constexpr double kMinGainSeconds = 2e-6;
  // Without a probe, on older runs of another count, only for a clear slowdown: a few slow runs
  // in a row happen on any machine now and then.
  static constexpr double kSlowdownGain = 0.8;
  // A change of count costs more than its runs' own difference: the OpenMP team grows or
  // shrinks (a worker made anew on a busy host took 13-24 ms before a 0.06 ms run of a small
  // detector could start; releasing the pool on the way back cost 0.1-0.3 ms). A probe that kept
  // the current count waits at least as many runs as it takes for that cost to be this share of
  // their time (up to kMaxDownInterval either way): else a small model spent more on probing
  // than on running.
  static constexpr double kSwitchCostShare = 0.02;

 private:
  struct Times {
    static constexpr int kKept = 5;
    double latest[kKept] = {};  // the latest runs' seconds, a ring
    int count = 0;              // of them valid, up to kKept
    int fresh = 0;              // of them taken since the last switch, up to kKept
    int next = 0;               // ring position
    int skip = 0;               // runs handed out whose times are not samples
    int wins = 0;               // probes in a row that found it faster than the current count
    int64_t runs = 0;
    // The time of the latest `n` runs (all valid ones when n is larger): their mean without the
    // slowest when there are three or more. Not their median: on a busy host a count's runs can
    // be of two kinds (ResNet-50 at two threads, a core taken: 65-70 ms, or 125-247 ms when a
    // worker waits for its core), and a median of five that sees three fast ones keeps the
    // count that is slower on average. The slowest is left out so that one hiccup of a quiet
    // host does not move a plan.
    double Typical(int n = kKept) const;
  };
  size_t IndexOf(int threads) const;
  Direction& DirectionOf(size_t i);
  void SwitchTo(size_t i);
  void ProbeSoon(size_t i);
  // Makes `d` wait for switch_cost_ to be kSwitchCostShare of runs taking `now` seconds.
  void AmortizeSwitchCost(Direction& d, double now);
  static bool Faster(double a, double b, double gain = kSwitchGain) {
    return a < gain * b && b - a > kMinGainSeconds;
  }

  mutable std::mutex mu_;
  std::vector<int> ladder_;  // max_threads, max_threads / 2, ..., 1
  std::vector<Times> times_;
  size_t current_ = 0;
  std::shared_ptr<Probes> probes_;  // its mutex is taken after mu_
  int pending_ = -1;                // the count the next probe tries, when set
  size_t burst_ = 0;                // the count of a probe under way
  int burst_left_ = 0;              // its runs still to hand out
  size_t last_ = SIZE_MAX;          // the count handed out last
  int hasty_from_ = -1;             // the count a switch on too few runs left, until probed again
  double probe_first_ = 0;          // seconds of the latest probe's first run
  double switch_cost_ = 0;          // what the latest probe's changes of count cost past its runs
  Direction* back_ = nullptr;       // that probe's direction, until the first run back is timed
};

struct ThreadChoice::Direction {
  int64_t next = kFirstProbe;  // the run at which the next probe may start
  int64_t interval = kMinInterval;
};

struct ThreadChoice::Probes {
  std::mutex mu;
  int64_t runs = 0;  // runs handed out by every plan's ThreadChoice
  Direction down, up;
};

}  // namespace onyx::engine
