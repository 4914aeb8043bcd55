// ShapeCache: a session's plans by input-shape signature, least recently used first out, bounded
// by a count and by bytes. A plan for a new signature is built outside the cache's lock, so runs
// on cached shapes never wait for it; threads asking for a signature being built wait for that
// one build (DESIGN contract 3).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "engine/subgraph_plans.h"
#include "engine/thread_choice.h"
#include "onyx/status.h"
#include "planner/execution_plan.h"

namespace onyx::engine {

struct CachedPlan {
  std::unique_ptr<planner::ExecutionPlan> plan;
  size_t bytes = 0;  // what this plan alone holds (shape-specific constants)
  // The thread count of each run (SessionOptions::adapt_threads); null: always the session's.
  std::unique_ptr<ThreadChoice> threads;
  // Subgraphs planned for this plan's shapes (null: the session's generic ones only): fast
  // kernels that need static shapes or constant weights run inside If branches and Loop bodies.
  std::unique_ptr<SubgraphPlans> subplans;
};
using PlanPtr = std::shared_ptr<const CachedPlan>;

struct ShapeCacheStats {
  size_t entries = 0;    // plans cached now (the pinned one included)
  size_t bytes = 0;      // their CachedPlan::bytes
  size_t builds = 0;     // plans built for a new signature
  size_t hits = 0;       // lookups served from the cache (waiting for a build in flight included)
  size_t evictions = 0;  // plans dropped for the limits
  size_t generic_runs = 0;  // requests answered with "use the shape-generic plan"
};

class ShapeCache {
 public:
  ShapeCache(int64_t max_entries, uint64_t max_bytes)
      : max_entries_(max_entries), max_bytes_(max_bytes) {}

  // Keeps `plan` under `signature` for the session's lifetime, outside the limits (the plan made
  // for the declared input types at creation).
  void Pin(const std::string& signature, PlanPtr plan);

  // The plan for `signature`: cached, or being built by another thread (then waits for it), or
  // built here by `build` without holding the lock. Failed builds are not cached; every thread
  // that waited for one gets its error.
  //
  // With `build_after` > 1 a signature gets its own plan only on its build_after-th request:
  // before that the call returns a null plan (the caller runs its shape-generic plan) and
  // counts a generic run.
  StatusOr<PlanPtr> GetOrBuild(const std::string& signature,
                               const std::function<StatusOr<PlanPtr>()>& build,
                               int build_after = 1);

  ShapeCacheStats stats() const;

 private:
  struct Entry {
    PlanPtr plan;                                   // null while being built
    std::shared_future<StatusOr<PlanPtr>> pending;  // valid while being built
    std::list<std::string>::iterator lru;           // position in lru_ (ready, unpinned)
    bool pinned = false;
  };
  void EvictLocked(const std::string& keep);

  const int64_t max_entries_;
  const uint64_t max_bytes_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;
  std::list<std::string> lru_;       // most recently used first; ready unpinned entries only
  std::map<std::string, int> uses_;  // requests of signatures not built yet (build_after > 1)
  size_t bytes_ = 0;                 // of the entries in lru_
  ShapeCacheStats counts_;
};

}  // namespace onyx::engine
