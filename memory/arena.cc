// Arena blocks and the per-plan pool that hands one to each concurrent run.
#include "memory/arena.h"

#include <cstdint>
#include <cstring>

#include "memory/aligned_alloc.h"

namespace onyx::memory {

Arena::Arena(size_t bytes) : size_(bytes) {
  base_ = static_cast<uint8_t*>(AlignedAlloc(bytes));
  if (PoisonUninitialized()) Poison();
}

Arena::~Arena() {
  AlignedFree(base_);
}

void Arena::Poison() {
  if (size_) std::memset(base_, 0xA5, size_);
}

std::unique_ptr<Arena> ArenaPool::Acquire(size_t bytes) {
  std::unique_ptr<Arena> too_small;  // freed outside the lock
  {
    std::lock_guard<std::mutex> lock(mu_);
    size_t best = free_.size();
    for (size_t i = 0; i < free_.size(); ++i)
      if (free_[i]->size() >= bytes &&
          (best == free_.size() || free_[i]->size() < free_[best]->size()))
        best = i;
    if (best == free_.size() && !free_.empty()) {
      // None fits: give back the largest (it is too small) so memory does not pile up.
      size_t largest = 0;
      for (size_t i = 1; i < free_.size(); ++i)
        if (free_[i]->size() > free_[largest]->size()) largest = i;
      too_small = std::move(free_[largest]);
      free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(largest));
    } else if (best < free_.size()) {
      auto a = std::move(free_[best]);
      free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(best));
      return a;
    }
  }
  too_small.reset();
  const size_t headroom = bytes / 8 > SIZE_MAX - bytes ? 0 : bytes / 8;
  return std::make_unique<Arena>(bytes + headroom);
}

void ArenaPool::Release(std::unique_ptr<Arena> arena) {
  std::unique_ptr<Arena> dropped;  // freed outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(std::move(arena));
  if (free_.size() > kMaxFree) {
    size_t smallest = 0;
    for (size_t i = 1; i < free_.size(); ++i)
      if (free_[i]->size() < free_[smallest]->size()) smallest = i;
    dropped = std::move(free_[smallest]);
    free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(smallest));
  }
}

size_t ArenaPool::free_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& a : free_) n += a->size();
  return n;
}

}  // namespace onyx::memory
