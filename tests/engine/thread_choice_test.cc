// ThreadChoice (engine/thread_choice.h) fed with made-up run times: which count it settles on,
// how soon, and how few probes it spends once settled.
#include "engine/thread_choice.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <vector>

namespace onyx::engine {
namespace {

// What `n` runs did: the runs at each count, and their mean time.
struct Runs {
  std::map<int, int> used;
  double mean_ms = 0;
};

// Runs `n` runs; a run's time is `ms_at(threads, changed)`, `changed` when its count is not the
// previous run's (the first run after a change of count also pays for the OpenMP team).
Runs DriveWithChanges(ThreadChoice& c, int n, const std::function<double(int, bool)>& ms_at) {
  Runs r;
  double total = 0;
  int last = 0;
  for (int i = 0; i < n; ++i) {
    const int t = c.Next();
    ++r.used[t];
    const double ms = ms_at(t, last != 0 && t != last);
    last = t;
    total += ms;
    c.Record(t, ms / 1e3);
  }
  r.mean_ms = n > 0 ? total / n : 0;
  return r;
}

// Runs `n` runs whose time at each count is `ms(threads)`; returns the counts used, by count.
std::map<int, int> Drive(ThreadChoice& c, int n, const std::function<double(int)>& ms) {
  return DriveWithChanges(c, n, [&](int t, bool) { return ms(t); }).used;
}

// The count the next non-probe run gets: the most used over a stretch of runs.
int Settled(ThreadChoice& c, const std::function<double(int)>& ms) {
  const std::map<int, int> used = Drive(c, 64, ms);
  int best = 0, most = -1;
  for (const auto& [t, n] : used)
    if (n > most) best = t, most = n;
  return best;
}

TEST(ThreadChoice, OneThreadNeverProbes) {
  ThreadChoice c(1);
  const auto used = Drive(c, 100, [](int) { return 1.0; });
  EXPECT_EQ(used, (std::map<int, int>{{1, 100}}));
}

TEST(ThreadChoice, QuietHostKeepsAllThreadsAndProbesRarely) {
  // Two threads take 0.55 of one thread's time.
  ThreadChoice c(2);
  const auto used = Drive(c, 1000, [](int t) { return t == 2 ? 5.5 : 10.0; });
  EXPECT_EQ(c.Next(), 2);
  // Probes of two runs each (the first is not measured) at run 4, then 32, 128 and 512 runs after
  // the previous one: one thread takes over 1.5 times as long, so the interval grows fourfold
  // (up to kMaxDownInterval). Runs 4, 37, 166 and 679.
  EXPECT_EQ(used.at(1), 8);
}

TEST(ThreadChoice, BusyHostSwitchesToOneThreadAtTheFirstProbe) {
  // A descheduled worker: two threads take far longer than one.
  ThreadChoice c(2);
  const auto used = Drive(c, 6, [](int t) { return t == 2 ? 30.0 : 4.0; });
  // Runs 1-3 at 2 threads, 4 makes the one-thread kernels, 5 measures them: much faster, so
  // run 6 is on one thread without a second probe.
  EXPECT_EQ(used.at(2), 3);
  EXPECT_EQ(used.at(1), 3);
  EXPECT_EQ(c.Next(), 1);
}

TEST(ThreadChoice, OneAndAHalfTimesAsLongSwitchesAtTheFirstProbeToo) {
  // VGG-19 with a core taken: two threads 260 ms, one thread 172 ms.
  ThreadChoice c(2);
  const auto used = Drive(c, 6, [](int t) { return t == 2 ? 260.0 : 172.0; });
  EXPECT_EQ(used.at(2), 3);
  EXPECT_EQ(c.Next(), 1);
}

TEST(ThreadChoice, RunsOfTwoKindsAreJudgedByTheirMeanWithoutTheSlowest) {
  // ResNet-50 on a busy host: two threads take one thread's time (66-69 ms) when both get a
  // core, and twice that or more when a worker waits for one; one thread takes 66.5 ms. The
  // median of five two-thread runs (68-69) is within 5% of one thread; their mean without the
  // slowest (85.75) is not. The first runs are of the fast kind, so the probe at 4-5 does not
  // switch; the later ones do.
  ThreadChoice c(2);
  const double two[] = {66, 69, 68, 180, 140};
  int k = 0;
  Drive(c, 40, [&](int t) { return t == 1 ? 66.5 : two[k++ % 5]; });
  EXPECT_EQ(c.current(), 1);
}

TEST(ThreadChoice, OneSlowRunInFiveIsLeftOut) {
  // A quiet host's hiccup: two threads 4 ms, one run in five 20 ms; one thread 6.5 ms.
  ThreadChoice c(2);
  int k = 0;
  const auto used =
      Drive(c, 200, [&](int t) { return t == 1 ? 6.5 : (k++ % 5 == 4 ? 20.0 : 4.0); });
  EXPECT_EQ(c.current(), 2);
  EXPECT_LE(used.at(1), 10);
}

TEST(ThreadChoice, AHastySwitchIsUndoneByOneFasterProbe) {
  // compare.py's warm-up: each of a new plan's first runs follows another engine's, whose threads
  // still spin, and two threads take 15 ms instead of 3 (one thread 5 ms). The probe at 4-5
  // switches to one thread on two slow runs; five runs later two threads are probed again,
  // and one faster run switches back (no confirming probe).
  ThreadChoice c(2);
  int run = 0;
  std::vector<int> counts;
  Drive(c, 40, [&](int t) {
    ++run;
    counts.push_back(t);
    if (t == 1) return 5.0;
    return run <= 3 ? 15.0 : 3.0;
  });
  EXPECT_EQ(c.current(), 2);
  // Runs 4-10 on one thread (the probe and the five after the switch), 11 two threads again
  // (it remakes their kernels), 12 measures them and switches.
  EXPECT_EQ(counts[5], 1);
  EXPECT_EQ(counts[10], 2);
  EXPECT_EQ(counts[12], 2);
  EXPECT_LE(std::count(counts.begin(), counts.end(), 1), 10);
}

TEST(ThreadChoice, AConfirmedSwitchIsNotUndoneByOneProbe) {
  // A busy host: the hasty switch at run 5 is confirmed by the probe of two threads at 10-11
  // (slow), and the plan stays on one thread.
  ThreadChoice c(2);
  Drive(c, 60, [](int t) { return t == 2 ? 30.0 : 4.0; });
  EXPECT_EQ(c.current(), 1);
}

TEST(ThreadChoice, ASmallerGainNeedsASecondProbe) {
  // One thread 25% faster: a probe at 4-5 finds it, runs 6-9 stay at 2 threads (kConfirmAfter),
  // the probe at 10-11 confirms it, run 12 is on one thread.
  ThreadChoice c(2);
  const auto used = Drive(c, 12, [](int t) { return t == 2 ? 5.0 : 4.0; });
  EXPECT_EQ(used.at(2), 7);
  EXPECT_EQ(used.at(1), 5);
  EXPECT_EQ(c.Next(), 1);
}

TEST(ThreadChoice, OneFastProbeDoesNotSwitch) {
  // Two threads slow for a moment (another engine's threads spinning in the process), as in
  // compare.py's ShuffleNet: 2.2 ms normally, 3.6 ms in runs 2 and 3; one thread 2.9 ms. The
  // probe at 4-5 finds one thread faster, the confirming one five runs later does not.
  ThreadChoice c(2);
  int run = 0;
  const auto used = Drive(c, 200, [&](int t) {
    ++run;
    if (t == 1) return 2.9;
    return run >= 2 && run <= 3 ? 3.6 : 2.2;
  });
  EXPECT_EQ(c.Next(), 2);
  // Only probes ran on one thread: at runs 4, 10 (the confirmation), 27, 60 and 189.
  EXPECT_EQ(used.at(1), 10);
}

TEST(ThreadChoice, FollowsTheLoadBothWays) {
  ThreadChoice c(2);
  const auto quiet = [](int t) { return t == 2 ? 5.5 : 10.0; };
  const auto busy = [](int t) { return t == 2 ? 30.0 : 10.5; };
  EXPECT_EQ(Settled(c, quiet), 2);
  Drive(c, 500, quiet);  // the probe interval has grown to its maximum
  // Load arrives: two slow runs at the current count put its median past one thread's probes.
  Drive(c, 3, busy);
  EXPECT_EQ(c.Next(), 1) << "still on two threads after three slow runs";
  // Load goes away: one thread is now the current count and the interval restarts at its
  // minimum, so a probe of two threads soon finds them faster and switches back.
  const auto back = Drive(c, 3 * ThreadChoice::kMinInterval, quiet);
  EXPECT_EQ(Settled(c, quiet), 2);
  EXPECT_GE(back.at(2), 2);
}

TEST(ThreadChoice, LoadThatPassesEarlyDoesNotHoldANewPlanBack) {
  // A plan made while another process held a core: it moves to one thread, its probes of two
  // find them slow, and once the load is gone a probe (every 16 runs at most, this early) finds
  // two threads fast again.
  ThreadChoice c(2);
  const auto quiet = [](int t) { return t == 2 ? 5.5 : 10.0; };
  const auto busy = [](int t) { return t == 2 ? 30.0 : 10.5; };
  Drive(c, 100, busy);
  EXPECT_EQ(c.Next(), 1);
  c.Record(1, 10.5e-3);
  const auto after = Drive(c, 20, quiet);
  EXPECT_EQ(Settled(c, quiet), 2);
  EXPECT_GE(after.at(2), 2);
}

TEST(ThreadChoice, LadderOfHalvesFindsTheFastestCount) {
  // 16 threads on a machine where 4 is fastest (small operators, too many threads).
  ThreadChoice c(16);
  const std::map<int, double> ms = {{16, 9}, {8, 6}, {4, 5}, {2, 7}, {1, 12}};
  const auto time = [&](int t) { return ms.at(t); };
  Drive(c, 200, time);
  EXPECT_EQ(Settled(c, time), 4);
  const std::map<int, int64_t> runs = c.runs();
  for (int t : {16, 8, 4, 2}) EXPECT_GT(runs.count(t), 0u) << t << " threads never tried";
}

TEST(ThreadChoice, RunsOfAFewMicrosecondsStayPut) {
  // 10% apart, but by 0.2 us: noise for runs this short.
  ThreadChoice c(2);
  const auto used = Drive(c, 1000, [](int t) { return t == 2 ? 0.0022 : 0.0020; });
  EXPECT_EQ(c.Next(), 2);
  // Probes at runs 4, then 8, 16, ..., 512 runs later (the interval doubles: these probes cost
  // little): 4, 21, 54, 119, 248, 505.
  EXPECT_EQ(used.at(1), 12);
}

// A small detector (0.064 ms a run on one thread) on a busy host: two threads take 0.09 ms, and
// the first run after each change of count also pays for the OpenMP team, 15 ms for a worker
// made anew (a descheduled core), 0.2 ms for releasing it. `ms_at(threads, changed)`.
double DetectorOnABusyHost(int threads, bool changed) {
  if (threads == 1) return 0.064 + (changed ? 0.2 : 0);
  return 0.09 + (changed ? 15 : 0);
}

TEST(ThreadChoice, ProbesWhoseTeamChangeCostsManyRunsBecomeRare) {
  // Probing two threads every 64 runs (kMaxUpInterval) made each run cost 0.3 ms on average,
  // five times its own time; with the team's cost amortized over the probe interval, about
  // kSwitchCostShare of it.
  ThreadChoice c(2);
  const double mean = DriveWithChanges(c, 30000, DetectorOnABusyHost).mean_ms;
  EXPECT_EQ(c.current(), 1);
  EXPECT_LT(mean, 0.064 * 1.1);
}

TEST(ThreadChoice, RareProbesStillFindTheLoadGone) {
  // The plan above, once the load is gone (two threads 0.059 ms, a worker made in 0.1 ms): a
  // probe of two threads comes within kMaxDownInterval runs and switches back.
  ThreadChoice c(2);
  DriveWithChanges(c, 30000, DetectorOnABusyHost);
  ASSERT_EQ(c.current(), 1);
  const auto quiet = [](int t, bool changed) {
    return (t == 1 ? 0.064 : 0.059) + (changed ? 0.1 : 0);
  };
  DriveWithChanges(c, ThreadChoice::kMaxDownInterval + 2 * ThreadChoice::kConfirmAfter + 8, quiet);
  EXPECT_EQ(c.current(), 2);
}

TEST(ThreadChoice, SmallDifferencesDoNotSwitch) {
  // One thread 3% faster: under the 5% needed to switch.
  ThreadChoice c(2);
  EXPECT_EQ(Settled(c, [](int t) { return t == 2 ? 10.0 : 9.7; }), 2);
}

TEST(ThreadChoice, StartsAtTheGivenCountRoundedDownToTheLadder) {
  EXPECT_EQ(ThreadChoice(8, 3).Next(), 2);
  EXPECT_EQ(ThreadChoice(8, 0).Next(), 8);
  EXPECT_EQ(ThreadChoice(8, 16).Next(), 8);
  EXPECT_EQ(ThreadChoice(8, 1).current(), 1);
}

TEST(ThreadChoice, RecordSaysWhenItSwitched) {
  ThreadChoice c(2);
  int switches = 0;
  for (int i = 0; i < 6; ++i) {
    const int t = c.Next();
    if (c.Record(t, (t == 2 ? 30.0 : 4.0) / 1e3)) {
      ++switches;
      EXPECT_EQ(i, 4);  // the probe's measured run
      EXPECT_EQ(c.current(), 1);
    }
  }
  EXPECT_EQ(switches, 1);
}

TEST(ThreadChoice, PlansOfOneSessionShareTheProbeSchedule) {
  // 32 plans (one per shape), 6 runs each, on a quiet host: on schedules of their own each would
  // probe one thread at its 4th run (32 probes); sharing one, the probes back off across plans.
  auto probes = std::make_shared<ThreadChoice::Probes>();
  int one_thread = 0;
  for (int plan = 0; plan < 32; ++plan) {
    ThreadChoice c(2, 0, probes);
    const auto used = Drive(c, 6, [](int t) { return t == 2 ? 5.5 : 10.0; });
    if (used.count(1)) one_thread += used.at(1);
  }
  // One thread at session runs 4-5, 39-40 (a plan's first run is not a sample, so the probe due
  // at 37 waits for the plan's third run) and 168, 128 runs after the second result; that probe
  // was the plan's last run, its sample never came.
  EXPECT_EQ(one_thread, 5);
}

TEST(ThreadChoice, APlanNewToTheSessionDoesNotProbeBeforeItHasATime) {
  // The shared schedule says a probe is due, but this plan has no time at its own count yet: the
  // probe waits for its next run, which has one to compare with.
  auto probes = std::make_shared<ThreadChoice::Probes>();
  ThreadChoice old(2, 0, probes);
  Drive(old, 3, [](int) { return 1.0; });
  ThreadChoice fresh(2, 0, probes);
  EXPECT_EQ(fresh.Next(), 2);  // shared run 4: due, but nothing to compare with
  fresh.Record(2, 1e-3);       // not a sample (the plan's first run at this count)
  EXPECT_EQ(fresh.Next(), 2);
  fresh.Record(2, 1e-3);
  EXPECT_EQ(fresh.Next(), 1);  // the probe, now that run 5 gave a time
}

TEST(ThreadChoice, APlanStartingBelowTheLadderTopProbesMoreThreads) {
  // Learnt on other plans: a busy host. When the load passes, the new plan's probes of two
  // threads find them faster and it moves up.
  ThreadChoice c(2, 1);
  EXPECT_EQ(Settled(c, [](int t) { return t == 2 ? 5.5 : 10.0; }), 2);
}

}  // namespace
}  // namespace onyx::engine
