// Concurrent runs on one session (DESIGN contract 7, issue 19): each fast kernel family runs from
// several threads at once on one Session, every thread with its own inputs, and every output must
// be bit-identical to a single-threaded run of the same input. The sessions use one intra-op
// thread, so OpenMP starts no team (libgomp's barriers are invisible to ThreadSanitizer).
//
// A session's TBB arena admits max(2, intra-op threads) runs at once and hands further callers'
// runs to the threads inside it, through synchronisation ThreadSanitizer cannot see either. So
// scripts/test.sh runs this test under TSan (build-tsan) with ONYX_TEST_INTRA_OP_THREADS=8 and
// OMP_THREAD_LIMIT=1: every run gets a slot of its own and every OpenMP region one thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "onyx/session.h"
#include "tests/engine/kernel_family_cases.h"

namespace onyx {
namespace {

using testing::BitDifferences;
using testing::Case;
using testing::Feeds;
using testing::KernelFamilyCase;

constexpr int kThreads = 8;
constexpr int kRunsPerThread = 6;

// The sessions' intra-op threads: ONYX_TEST_INTRA_OP_THREADS, default 1.
int IntraOpThreads() {
  const char* env = std::getenv("ONYX_TEST_INTRA_OP_THREADS");
  return env ? std::max(1, std::atoi(env)) : 1;
}

class ConcurrentRun : public ::testing::TestWithParam<std::string> {};

TEST_P(ConcurrentRun, BitIdenticalToSingleThreaded) {
  const Case c = KernelFamilyCase(GetParam());
  SessionOptions options;
  options.intra_op_threads = IntraOpThreads();
  options.optimization = c.optimization;
  Session s = Session::FromBytes(c.model, options);

  // The oracle: each thread's inputs run alone, one after another. This run also records which
  // kernels the plan picked, so a planner change that drops a family fails here, not silently.
  std::set<std::string> impls;
  RunOptions observe;
  observe.step_observer = [&](const StepEvent& e) { impls.insert(std::string(e.impl)); };
  std::vector<NamedValues> expected(kThreads * kRunsPerThread);
  for (int i = 0; i < kThreads * kRunsPerThread; ++i)
    expected[i] = s.Run(Feeds(c, i), i == 0 ? observe : RunOptions{});
  std::string used;
  for (const std::string& impl : impls) used += " " + impl;
  for (const std::string& want : c.impls) {
    // By prefix: oneDNN picks Winograd ("Conv_f32_onednn/winograd") only with AVX-512.
    const bool found = std::any_of(impls.begin(), impls.end(), [&](const std::string& impl) {
      return impl.compare(0, want.size(), want) == 0;
    });
    EXPECT_TRUE(found) << c.name << ": the plan does not use " << want << "; it uses" << used;
  }

  // Rounds of kThreads x kRunsPerThread until steps of different threads have overlapped in time
  // often enough: the session's task arena admits only a few runs at once, and on a loaded
  // machine a round of short runs may happen to go one at a time.
  constexpr int kMaxRounds = 100;
  int64_t overlaps = 0, runs = 0;
  std::atomic<int64_t> mismatched_runs{0}, mismatched_elements{0}, errors{0};
  for (int round = 0; round < kMaxRounds && overlaps < c.wanted_overlaps; ++round) {
    std::vector<std::pair<int64_t, int64_t>> spans[kThreads];  // [start, end) of each step
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        RunOptions o;
        o.step_observer = [&, t](const StepEvent& e) {
          const int64_t start = e.start.time_since_epoch().count();
          spans[t].push_back({start, start + e.duration.count()});
        };
        ready.fetch_add(1);
        while (ready.load() < kThreads) std::this_thread::yield();  // start together
        for (int r = 0; r < kRunsPerThread; ++r) {
          const int i = t * kRunsPerThread + (r + round) % kRunsPerThread;
          NamedValues out;
          if (!s.Run(Feeds(c, i), o, &out).ok()) {
            errors.fetch_add(1);
            continue;
          }
          const int64_t bad = BitDifferences(expected[i], out);
          if (bad != 0) {
            mismatched_runs.fetch_add(1);
            mismatched_elements.fetch_add(bad < 0 ? 0 : bad);
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    runs += kThreads * kRunsPerThread;
    for (int a = 0; a < kThreads; ++a)
      for (int b = a + 1; b < kThreads; ++b)
        for (const auto& x : spans[a])
          for (const auto& y : spans[b]) overlaps += x.first < y.second && y.first < x.second;
  }
  std::printf("[ %s ] %lld runs on %d threads: %lld overlapping step pairs, %lld runs differ;%s\n",
              c.name.c_str(), static_cast<long long>(runs), kThreads,
              static_cast<long long>(overlaps), static_cast<long long>(mismatched_runs.load()),
              used.c_str());
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mismatched_runs.load(), 0) << mismatched_elements.load() << " elements differ";
  EXPECT_GT(overlaps, 0) << "no two runs overlapped: the test exercised nothing concurrent";
}

INSTANTIATE_TEST_SUITE_P(Families, ConcurrentRun, ::testing::ValuesIn(testing::KernelFamilyNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace onyx
