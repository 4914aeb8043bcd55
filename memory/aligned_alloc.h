// 64-byte aligned allocation: every tensor buffer and arena starts on a cache line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "onyx/status.h"
#include "onyx/tensor.h"

namespace onyx::memory {

constexpr size_t kAlignment = 64;

// Returns kAlignment-aligned memory of at least `bytes` (a 0-byte request still returns a unique
// pointer). Throws std::bad_alloc on failure; the executor turns that into an error.
void* AlignedAlloc(size_t bytes);
void AlignedFree(void* p);
// For long-lived buffers streamed whole on every run (packed weights): from kHugePageMinBytes on,
// 2 MiB-aligned and rounded up to 2 MiB, with the kernel asked to back it with transparent huge
// pages (Linux madvise; where THP is off it stays on 4 KiB pages). Smaller: AlignedAlloc. Freed
// with AlignedFree.
void* HugePageAlloc(size_t bytes);
constexpr size_t kHugePageMinBytes = size_t{8} << 20;
// True in debug builds and when ONYX_POISON_UNINITIALIZED=1: arenas and tensors allocated without
// the zero fill are filled with a byte pattern instead, so that a kernel which reads its output
// before writing it fails in tests (pages fresh from the OS would read as zeros).
bool PoisonUninitialized();
inline size_t AlignUp(size_t n, size_t a = kAlignment) {
  return (n + a - 1) / a * a;
}
// AlignUp, but false instead of wrapping to a small number when `n` is within `a` of SIZE_MAX.
inline bool CheckedAlignUp(size_t n, size_t* out, size_t a = kAlignment) {
  if (n > SIZE_MAX - (a - 1)) return false;
  *out = AlignUp(n, a);
  return true;
}

// The ceiling on the bytes of any one tensor that Tensor::Allocate* may create on this thread;
// 0 means none. Session::Run sets it (limits.max_tensor_bytes) for the duration of a run, the
// planner while it folds constants. It is thread-local rather than passed down because kernels
// allocate outputs and scratch through Tensor::Allocate deep inside code that has no session in
// reach, and a ceiling passed through every kernel signature would be forgotten somewhere; the
// caller's thread is the one that allocates (parallel loops write into buffers made before them).
uint64_t TensorByteCeiling();

// Whether a tensor of `dtype` and `shape` has a byte count 64 bits hold that is within
// `max_bytes` (0: no ceiling); `bytes` gets the count when it is countable.
bool TensorBytesWithin(DType dtype, const Shape& shape, uint64_t max_bytes, uint64_t* bytes);
// `who` (a value, a feed, an initializer, a tensor being allocated) of `dtype` and `shape`: a
// kLimit error when its bytes overflow 64 bits or exceed `max_bytes` (0: no ceiling). The one size
// check every layer uses, Tensor::Allocate included.
Status CheckTensorBytes(const std::string& who, DType dtype, const Shape& shape,
                        uint64_t max_bytes);
// Sets the ceiling for this thread until destroyed, then restores the previous one.
class TensorByteCeilingScope {
 public:
  explicit TensorByteCeilingScope(uint64_t max_bytes);
  ~TensorByteCeilingScope();
  TensorByteCeilingScope(const TensorByteCeilingScope&) = delete;
  TensorByteCeilingScope& operator=(const TensorByteCeilingScope&) = delete;

 private:
  uint64_t previous_;
};

}  // namespace onyx::memory
