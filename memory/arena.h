// Arena: one 64-byte-aligned block per plan execution; intermediates live at planned offsets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace onyx::memory {

class Arena {
 public:
  explicit Arena(size_t bytes);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  uint8_t* base() { return base_; }
  size_t size() const { return size_; }
  // Fills the arena with a pattern so reads of unwritten bytes show up as garbage (done at
  // creation in debug builds and with ONYX_POISON_UNINITIALIZED=1: memory::PoisonUninitialized).
  void Poison();

 private:
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
};

// The arenas of one session, shared by all its plans: a run takes the smallest free block that
// holds its plan's arena, so concurrent runs each get their own and a steady stream of runs,
// whatever their shapes, allocates nothing once the largest has been seen. A run that finds no
// block big enough replaces the largest free one with a block an eighth bigger than it needs,
// so a decode loop whose arena grows by a little each step reallocates only now and then.
class ArenaPool {
 public:
  ArenaPool() = default;
  std::unique_ptr<Arena> Acquire(size_t bytes);
  void Release(std::unique_ptr<Arena> arena);
  // Bytes of the blocks now free in the pool.
  size_t free_bytes() const;

 private:
  static constexpr size_t kMaxFree = 16;  // blocks kept for concurrent runs
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Arena>> free_;
};

}  // namespace onyx::memory
