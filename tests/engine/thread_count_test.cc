// Runs at fewer threads than the session's (SessionOptions::adapt_threads picks them on a busy
// host; RunOptions::max_threads asks for them): every fast kernel family gives the same bits at 4,
// 2 and 1 threads, and values that agree with the reference kernels. oneDNN kernels run on
// primitives remade for the smaller team (kernels/x86/thread_variants.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kernels/op_helpers.h"
#include "onyx/session.h"
#include "tests/engine/kernel_family_cases.h"

namespace onyx {
namespace {

using testing::BitDifferences;
using testing::Case;
using testing::Feeds;
using testing::KernelFamilyCase;

// Largest |got - want| / (1 + |want|) over every output element.
double MaxRelativeError(const NamedValues& want, const NamedValues& got) {
  double worst = 0;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    const Tensor& w = want[i].second.tensor();
    const Tensor& g = got[i].second.tensor();
    for (int64_t j = 0; j < w.numel(); ++j) {
      const double a = w.data<float>()[j], b = g.data<float>()[j];
      worst = std::max(worst, std::abs(a - b) / (1 + std::abs(a)));
    }
  }
  return worst;
}

class ThreadCount : public ::testing::TestWithParam<std::string> {};

TEST_P(ThreadCount, SameBitsAtEveryCountAsTheReferenceKernelsSay) {
  const Case c = KernelFamilyCase(GetParam());
  SessionOptions options;
  options.intra_op_threads = 4;
  options.optimization = c.optimization;
  options.adapt_threads = false;  // the counts come from RunOptions::max_threads here
  Session s = Session::FromBytes(c.model, options);
  SessionOptions ref_options = options;
  ref_options.reference_kernels = true;
  Session ref = Session::FromBytes(c.model, ref_options);

  for (uint64_t seed = 0; seed < 3; ++seed) {
    const NamedValues feeds = Feeds(c, seed);
    const NamedValues want = ref.Run(feeds);
    NamedValues at4;
    for (int threads : {4, 2, 1, 2, 4}) {  // back up too: each count's kernels are kept
      RunOptions o;
      o.max_threads = threads;
      NamedValues got;
      ASSERT_TRUE(s.Run(feeds, o, &got).ok()) << threads << " threads";
      if (at4.empty()) at4 = got;
      EXPECT_EQ(BitDifferences(at4, got), 0) << c.name << ": " << threads << " threads";
      // Winograd's transforms round more than direct summation (SessionOptions::winograd).
      EXPECT_LT(MaxRelativeError(want, got), 1e-4) << c.name << ": " << threads << " threads";
    }
  }
  // Three feeds at 4, 2, 1, 2, 4 threads.
  EXPECT_EQ(s.runs_by_threads(), (std::map<int, int64_t>{{1, 3}, {2, 6}, {4, 6}}));
}

INSTANTIATE_TEST_SUITE_P(Families, ThreadCount, ::testing::ValuesIn(testing::KernelFamilyNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(AdaptThreads, OffRunsEveryRunAtTheSessionsCount) {
  const Case c = KernelFamilyCase("cnn");
  for (bool by_env : {false, true}) {
    SessionOptions options;
    options.intra_op_threads = 2;
    if (by_env) {
      setenv("ONYX_ADAPT_THREADS", "0", 1);
    } else {
      options.adapt_threads = false;
    }
    Session s = Session::FromBytes(c.model, options);
    unsetenv("ONYX_ADAPT_THREADS");
    for (int i = 0; i < 40; ++i) s.Run(Feeds(c, 0));
    EXPECT_EQ(s.runs_by_threads(), (std::map<int, int64_t>{{2, 40}})) << "by env: " << by_env;
  }
}

TEST(AdaptThreads, OnProbesOneThreadWithinTheFirstRuns) {
  // Whatever this machine's load, the session tries one thread early (ThreadChoice::kFirstProbe).
  const Case c = KernelFamilyCase("matmul");
  SessionOptions options;
  options.intra_op_threads = 2;
  Session s = Session::FromBytes(c.model, options);
  for (int i = 0; i < 6; ++i) s.Run(Feeds(c, 0));
  const std::map<int, int64_t> runs = s.runs_by_threads();
  ASSERT_EQ(runs.count(1), 1u);
  EXPECT_GE(runs.at(1), 1);
  EXPECT_EQ(runs.at(1) + runs.at(2), 6);
}

// Ids of this process's threads now (/proc/self/task).
std::set<std::string> ProcessThreads() {
  std::set<std::string> ids;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task"))
    ids.insert(e.path().filename().string());
  return ids;
}
// How many of `a` are not in `b`.
size_t Missing(const std::set<std::string>& a, const std::set<std::string>& b) {
  size_t n = 0;
  for (const std::string& id : a) n += b.count(id) == 0;
  return n;
}

TEST(AdaptThreads, AOneThreadRunReleasesThePreviousTeamsWorkers) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the OpenMP team is oneDNN's, on x86 builds";
#elif defined(__clang__)
  // Clang's -fopenmp brings LLVM's libomp beside oneDNN's libgomp: the release reaches libomp.
  GTEST_SKIP() << "oneDNN's team is libgomp's; a clang build releases libomp's pool";
#endif
  // Idle OpenMP workers would spin beside a one-thread run, which starts no parallel region
  // (kernels::ReleaseIdleWorkers); this thread's pool is released before it, and a larger run
  // starts its workers again.
  const Case c = KernelFamilyCase("cnn");
  SessionOptions options;
  options.intra_op_threads = 4;
  options.adapt_threads = false;
  Session s = Session::FromBytes(c.model, options);
  const auto run_at = [&](int threads) {
    RunOptions o;
    o.max_threads = threads;
    NamedValues out;
    ASSERT_TRUE(s.Run(Feeds(c, 0), o, &out).ok()) << threads << " threads";
  };
  // Thread ids, not counts: other runtimes (TBB) may start threads of their own meanwhile.
  run_at(4);  // creation may already have used this thread's pool (weights packed on the team)
  run_at(1);
  const std::set<std::string> alone = ProcessThreads();
  run_at(4);
  const std::set<std::string> at4 = ProcessThreads();
  EXPECT_EQ(Missing(at4, alone), 3u);  // the team's three workers
  run_at(1);
  const std::set<std::string> at1 = ProcessThreads();
  EXPECT_EQ(Missing(at4, at1), 3u);  // have exited
  run_at(2);
  const std::set<std::string> at2 = ProcessThreads();
  EXPECT_EQ(Missing(at2, at1), 1u);  // a new worker
  run_at(2);                         // the same count again keeps it
  EXPECT_EQ(Missing(at2, ProcessThreads()), 0u);
}

TEST(AdaptThreads, ALoopWithFewerBlocksThanThreadsKeepsTheTeamsWorkers) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "onyx's loops run on the OpenMP team on x86 builds";
#endif
  // libgomp ends the workers beyond a smaller team when it starts; a loop with work for only two
  // of four threads must not shrink the team that the next full-size region (a oneDNN
  // primitive) needs again, or every such pair of steps creates threads.
  const auto loop = [](int64_t blocks) {
    // Items too large to share a block: one block per item (kernels::ParallelFor).
    kernels::ParallelFor(blocks, int64_t{1} << 20, 4, [](int64_t, int64_t) {});
  };
  loop(4);
  const std::set<std::string> at4 = ProcessThreads();
  loop(2);
  loop(4);
  EXPECT_EQ(Missing(at4, ProcessThreads()), 0u);  // the same workers
  // The split still covers every item, once.
  std::vector<int> seen(3, 0);
  kernels::ParallelFor(3, int64_t{1} << 20, 4, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) ++seen[i];
  });
  EXPECT_EQ(seen, std::vector<int>({1, 1, 1}));
}

}  // namespace
}  // namespace onyx
