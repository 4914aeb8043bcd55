// BufferCache: free lists by size class (eighths of a power of two), bounded by kMaxFreeBytes.
#include "memory/buffer_cache.h"

#include <map>
#include <mutex>
#include <vector>

#include "memory/aligned_alloc.h"

namespace onyx::memory {
namespace {

// The smallest class size >= bytes: classes are 8, 9, ..., 15 times a power of two, so a buffer
// wastes at most an eighth of its size.
size_t ClassSize(size_t bytes) {
  size_t step = 1;
  while ((step << 4) <= bytes) step <<= 1;  // bytes < 16 * step
  return (bytes + step - 1) / step * step;
}

struct Cache {
  std::mutex mu;
  std::map<size_t, std::vector<void*>> free;  // class size -> free buffers
  size_t free_bytes = 0;
};

Cache& TheCache() {
  static Cache* cache = new Cache();  // never destroyed: tensors may die after static teardown
  return *cache;
}

void Return(void* p, size_t size) {
  Cache& c = TheCache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.free_bytes + size <= kMaxFreeBytes) {
      c.free[size].push_back(p);
      c.free_bytes += size;
      return;
    }
  }
  AlignedFree(p);
}

}  // namespace

std::shared_ptr<void> CachedBuffer(size_t bytes) {
  if (bytes < kMinCachedBytes || bytes > kMaxCachedBytes)
    return std::shared_ptr<void>(AlignedAlloc(bytes), AlignedFree);
  size_t size = ClassSize(bytes);
  void* p = nullptr;
  {
    Cache& c = TheCache();
    std::lock_guard<std::mutex> lock(c.mu);
    // The smallest free buffer of this class or larger, up to twice the size: inputs that grow
    // call after call (a sweep over lengths) then reuse warm pages instead of faulting in new
    // ones for every new class.
    for (auto it = c.free.lower_bound(size); it != c.free.end() && it->first <= 2 * size; ++it) {
      if (it->second.empty()) continue;
      p = it->second.back();
      it->second.pop_back();
      size = it->first;
      c.free_bytes -= size;
      break;
    }
  }
  if (!p) {
    // None free: a new buffer half again as large, so that inputs growing call after call find
    // it for the next few sizes instead of faulting in fresh pages for each (BERT's lengths
    // 8..256 in steps of 8: first-call cost 0.55 -> 0.3 ms per length). Pages past what its
    // tensors touch are never faulted in: the headroom costs address space, not memory (the
    // sweep ended 7 MiB smaller, fewer buffers having been touched).
    size = ClassSize(bytes + bytes / 2);
    p = AlignedAlloc(size);
  }
  return std::shared_ptr<void>(p, [size](void* q) { Return(q, size); });
}

}  // namespace onyx::memory
