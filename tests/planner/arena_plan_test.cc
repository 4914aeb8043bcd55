// Arena planner: a brute-force checker over random interval sets proves no two values whose
// lifetimes overlap share a byte, and the arena lies between the max-live bound and the no-reuse
// sum.
#include "planner/arena_plan.h"

#include <gtest/gtest.h>

#include <random>

#include "memory/aligned_alloc.h"

namespace onyx::planner {
namespace {

void CheckLayout(const std::vector<Interval>& iv, const ArenaLayout& l) {
  ASSERT_EQ(l.offsets.size(), iv.size());
  for (size_t i = 0; i < iv.size(); ++i) {
    EXPECT_EQ(l.offsets[i] % memory::kAlignment, 0u) << "offset not 64-byte aligned";
    EXPECT_LE(l.offsets[i] + iv[i].bytes, l.arena_bytes);
    for (size_t j = i + 1; j < iv.size(); ++j) {
      const bool time_overlap = !(iv[i].last < iv[j].first || iv[j].last < iv[i].first);
      const bool byte_overlap =
          l.offsets[i] < l.offsets[j] + iv[j].bytes && l.offsets[j] < l.offsets[i] + iv[i].bytes;
      EXPECT_FALSE(time_overlap && byte_overlap) << "values " << i << " and " << j << " collide";
    }
  }
  // Brute-force max-live: at every step, sum of live sizes.
  int max_step = 0;
  size_t sum = 0;
  for (const auto& i : iv) {
    max_step = std::max(max_step, i.last);
    sum += i.bytes;
  }
  size_t best = 0;
  for (int s = 0; s <= max_step; ++s) {
    size_t live = 0;
    for (const auto& i : iv)
      if (i.first <= s && s <= i.last) live += i.bytes;
    best = std::max(best, live);
  }
  EXPECT_EQ(l.max_live_bytes, best);
  EXPECT_EQ(l.no_reuse_bytes, sum);
  EXPECT_GE(l.arena_bytes, l.max_live_bytes);
  EXPECT_LE(l.arena_bytes, l.no_reuse_bytes);
}

TEST(arena_plan, RandomIntervalSets) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 40);
    const int steps = 1 + static_cast<int>(rng() % 30);
    std::vector<Interval> iv;
    for (int k = 0; k < n; ++k) {
      const int a = static_cast<int>(rng() % steps);
      const int b = a + static_cast<int>(rng() % 6);
      const size_t bytes = memory::AlignUp(1 + rng() % 5000);
      iv.push_back({a, b, bytes});
    }
    SCOPED_TRACE("trial " + std::to_string(trial));
    CheckLayout(iv, PlanArena(iv));
  }
}

TEST(arena_plan, ChainReusesMemory) {
  // A chain a→b→c→d: each value dies after the next is made; two buffers suffice.
  std::vector<Interval> iv = {{0, 1, 1024}, {1, 2, 1024}, {2, 3, 1024}, {3, 3, 1024}};
  ArenaLayout l = PlanArena(iv);
  CheckLayout(iv, l);
  EXPECT_EQ(l.arena_bytes, 2048u);
}

TEST(arena_plan, EmptyAndSingle) {
  EXPECT_EQ(PlanArena({}).arena_bytes, 0u);
  ArenaLayout l = PlanArena({{0, 0, 64}});
  EXPECT_EQ(l.arena_bytes, 64u);
  EXPECT_EQ(l.offsets[0], 0u);
}

}  // namespace
}  // namespace onyx::planner
