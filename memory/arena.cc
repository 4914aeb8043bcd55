// Arena blocks and the per-plan pool that hands one to each concurrent run.
#include "memory/arena.h"

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

std::unique_ptr<Arena> ArenaPool::Acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      auto a = std::move(free_.back());
      free_.pop_back();
      return a;
    }
  }
  return std::make_unique<Arena>(bytes_);
}

void ArenaPool::Release(std::unique_ptr<Arena> arena) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(std::move(arena));
}

}  // namespace onyx::memory
