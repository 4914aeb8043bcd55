// ShapeCache: LRU of ready plans plus shared futures for the builds in flight.
#include "engine/shape_cache.h"

namespace onyx::engine {

void ShapeCache::Pin(const std::string& signature, PlanPtr plan) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entries_[signature];
  e.plan = std::move(plan);
  e.pinned = true;
}

StatusOr<PlanPtr> ShapeCache::GetOrBuild(const std::string& signature,
                                         const std::function<StatusOr<PlanPtr>()>& build,
                                         int build_after) {
  // Signatures seen fewer times than build_after are only counted; the table is cleared when it
  // grows past this, so a stream of ever-new shapes cannot grow it without bound.
  constexpr size_t kMaxCounted = 4096;
  std::promise<StatusOr<PlanPtr>> promise;
  {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = entries_.find(signature);
    if (it != entries_.end()) {
      ++counts_.hits;
      Entry& e = it->second;
      if (e.plan) {
        if (!e.pinned) lru_.splice(lru_.begin(), lru_, e.lru);
        return e.plan;
      }
      std::shared_future<StatusOr<PlanPtr>> pending = e.pending;
      lock.unlock();
      return pending.get();  // another thread builds this signature: wait for its result
    }
    if (build_after > 1) {
      if (uses_.size() >= kMaxCounted) uses_.clear();
      int& uses = uses_[signature];
      if (++uses < build_after) {
        ++counts_.generic_runs;
        return PlanPtr();
      }
      uses_.erase(signature);
    }
    Entry& e = entries_[signature];
    e.pending = promise.get_future().share();
    ++counts_.builds;
  }
  StatusOr<PlanPtr> built = build();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(signature);
    if (!built.ok()) {
      entries_.erase(it);
    } else {
      Entry& e = it->second;
      e.plan = *built;
      e.pending = {};
      lru_.push_front(signature);
      e.lru = lru_.begin();
      bytes_ += e.plan->bytes;
      EvictLocked(signature);
    }
  }
  promise.set_value(built);
  return built;
}

void ShapeCache::EvictLocked(const std::string& keep) {
  // Oldest first; the plan just built stays even when it alone is over the byte limit (runs
  // holding an evicted plan keep it alive until they finish).
  while (!lru_.empty() &&
         (static_cast<int64_t>(lru_.size()) > max_entries_ || bytes_ > max_bytes_)) {
    const std::string victim = lru_.back();
    if (victim == keep) break;
    auto it = entries_.find(victim);
    bytes_ -= it->second.plan->bytes;
    lru_.pop_back();
    entries_.erase(it);
    ++counts_.evictions;
  }
}

ShapeCacheStats ShapeCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  ShapeCacheStats s = counts_;
  s.entries = 0;
  for (const auto& [sig, e] : entries_)
    if (e.plan) ++s.entries;
  s.bytes = bytes_;
  return s;
}

}  // namespace onyx::engine
