// 64-byte aligned allocate/free.
#include "memory/aligned_alloc.h"

#include <cstdlib>
#include <new>
#include <string>

namespace onyx::memory {

namespace {
thread_local uint64_t tensor_byte_ceiling = 0;
}  // namespace

uint64_t TensorByteCeiling() {
  return tensor_byte_ceiling;
}

TensorByteCeilingScope::TensorByteCeilingScope(uint64_t max_bytes)
    : previous_(tensor_byte_ceiling) {
  tensor_byte_ceiling = max_bytes;
}

TensorByteCeilingScope::~TensorByteCeilingScope() {
  tensor_byte_ceiling = previous_;
}

void* AlignedAlloc(size_t bytes) {
  size_t rounded = 0;  // a request near SIZE_MAX must fail, not round up to a tiny block
  if (!CheckedAlignUp(bytes == 0 ? 1 : bytes, &rounded)) throw std::bad_alloc();
  void* p = std::aligned_alloc(kAlignment, rounded);
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
