// 64-byte aligned allocate/free.
#include "memory/aligned_alloc.h"

#include <cstdlib>
#include <new>

namespace onyx::memory {

void* AlignedAlloc(size_t bytes) {
  void* p = std::aligned_alloc(kAlignment, AlignUp(bytes == 0 ? 1 : bytes));
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void AlignedFree(void* p) {
  std::free(p);
}

}  // namespace onyx::memory
