// WeightCache: weak entries keyed by (source buffer, layout), each holding its source alive.
#include "kernels/weight_cache.h"

namespace onyx::kernels {
namespace {

// The packed object together with the tensor it was packed from: while any kernel holds the
// object, the source buffer (and so the key's address) stays allocated.
struct Holder {
  Tensor source;
  std::shared_ptr<const void> object;
};

}  // namespace

std::shared_ptr<const void> WeightCache::Find(const Tensor& source, const std::string& layout) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(Key(source.raw_data(), layout));
  if (it == entries_.end()) return nullptr;
  auto obj = it->second.object.lock();
  if (!obj) {
    entries_.erase(it);
    return nullptr;
  }
  return obj;
}

std::shared_ptr<const void> WeightCache::Store(const Tensor& source, const std::string& layout,
                                               std::shared_ptr<const void> object, size_t bytes) {
  auto holder = std::make_shared<Holder>(Holder{source, std::move(object)});
  // Aliasing pointer: callers see the packed object; the holder (and the source) go with it.
  std::shared_ptr<const void> shared(holder, holder->object.get());
  std::lock_guard<std::mutex> lock(mu_);
  DropExpiredLocked();
  Entry& e = entries_[Key(source.raw_data(), layout)];
  if (auto existing = e.object.lock()) {
    return existing;  // another plan packed it meanwhile: share theirs, drop ours
  }
  e.object = shared;
  e.bytes = bytes;
  return shared;
}

void WeightCache::DropExpiredLocked() const {
  for (auto it = entries_.begin(); it != entries_.end();)
    it = it->second.object.expired() ? entries_.erase(it) : std::next(it);
}

size_t WeightCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  DropExpiredLocked();
  size_t n = 0;
  for (const auto& [key, e] : entries_) n += e.bytes;
  return n;
}

}  // namespace onyx::kernels
