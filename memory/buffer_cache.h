// BufferCache: large tensor buffers kept for reuse after their tensors die. A plan for symbolic
// shapes allocates its intermediates on the heap on every run; freed back to glibc, buffers of
// a few hundred KiB are returned to the OS and fault in again, page by page, on the next run
// (a 512 KiB GELU output cost BERT's FFN 50% more than the same product into an arena).
#pragma once

#include <cstddef>
#include <memory>

namespace onyx::memory {

// A 64-byte-aligned buffer of at least `bytes` (contents unspecified), from the cache when one
// of its size class, or of a larger class up to twice the size, is free (else a new one, half
// again as large, for sizes that grow); it goes back to the cache (under its own class) when
// the returned pointer's last owner drops it. Sizes below
// kMinCachedBytes or above kMaxCachedBytes are plain allocations.
std::shared_ptr<void> CachedBuffer(size_t bytes);

constexpr size_t kMinCachedBytes = size_t{4} << 10;
constexpr size_t kMaxCachedBytes = size_t{16} << 20;
// Free bytes the cache may hold, all sizes together; beyond it, freed buffers go back to glibc.
constexpr size_t kMaxFreeBytes = size_t{32} << 20;

}  // namespace onyx::memory
