// 64-byte aligned allocation: every tensor buffer and arena starts on a cache line.
#pragma once

#include <cstddef>

namespace onyx::memory {

constexpr size_t kAlignment = 64;

// Returns kAlignment-aligned memory of at least `bytes` (a 0-byte request still returns a unique
// pointer). Throws std::bad_alloc on failure; the executor turns that into an error.
void* AlignedAlloc(size_t bytes);
void AlignedFree(void* p);
// True in debug builds and when ONYX_POISON_UNINITIALIZED=1: arenas and tensors allocated without
// the zero fill are filled with a byte pattern instead, so that a kernel which reads its output
// before writing it fails in tests (pages fresh from the OS would read as zeros).
bool PoisonUninitialized();
inline size_t AlignUp(size_t n, size_t a = kAlignment) {
  return (n + a - 1) / a * a;
}

}  // namespace onyx::memory
