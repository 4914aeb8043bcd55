// 64-byte aligned allocate/free.
#include "memory/aligned_alloc.h"

#include <cstdlib>
#include <new>
#include <string>

namespace onyx::memory {

void* AlignedAlloc(size_t bytes) {
  void* p = std::aligned_alloc(kAlignment, AlignUp(bytes == 0 ? 1 : bytes));
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void AlignedFree(void* p) {
  std::free(p);
}

bool PoisonUninitialized() {
#ifndef NDEBUG
  return true;
#else
  static const bool poison = [] {
    const char* env = std::getenv("ONYX_POISON_UNINITIALIZED");
    return env != nullptr && std::string(env) == "1";
  }();
  return poison;
#endif
}

}  // namespace onyx::memory
