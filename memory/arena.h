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

// A pool of arenas of one size, so concurrent runs of one plan each get their own block and a
// steady stream of runs allocates nothing.
class ArenaPool {
 public:
  explicit ArenaPool(size_t bytes) : bytes_(bytes) {}
  std::unique_ptr<Arena> Acquire();
  void Release(std::unique_ptr<Arena> arena);
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Arena>> free_;
};

}  // namespace onyx::memory
