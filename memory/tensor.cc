// Tensor buffers: owned (aligned, zero-filled), borrowed, or shared with a holder.
#include "onyx/tensor.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>

#include "memory/aligned_alloc.h"
#include "memory/buffer_cache.h"
#include "onyx/status.h"

namespace onyx {

bool CheckedMul(int64_t a, int64_t b, int64_t* out) {
  if (a < 0 || b < 0) return false;
  return !__builtin_mul_overflow(a, b, out);
}

bool CheckedAdd(int64_t a, int64_t b, int64_t* out) {
  if (a < 0 || b < 0) return false;
  return !__builtin_add_overflow(a, b, out);
}

bool CheckedElementCount(const Shape& shape, int64_t* count) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : shape) {
    if (d < 0) return false;
    if (d == 0) {
      *count = 0;
      // Still reject negative dims after the zero.
      for (int64_t e : shape)
        if (e < 0) return false;
      return true;
    }
    if (!overflow && !CheckedMul(n, d, &n)) overflow = true;
  }
  if (overflow) return false;
  *count = n;
  return true;
}

bool CheckedByteSize(DType dtype, int64_t count, uint64_t* bytes) {
  if (count < 0) return false;
  const uint64_t elem = dtype == DType::kString ? sizeof(std::string) : DTypeSize(dtype);
  const uint64_t n = static_cast<uint64_t>(count);
  if (elem != 0 && n > ~uint64_t{0} / elem) return false;
  *bytes = n * elem;
  return true;
}

int64_t ShapeElementCount(const Shape& shape) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : shape) {
    if (d == 0) return 0;
    if (!overflow && __builtin_mul_overflow(n, d, &n)) overflow = true;
  }
  return overflow ? INT64_MAX : n;
}

std::string ShapeToString(const Shape& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? "," : "") << shape[i];
  os << "]";
  return os.str();
}

namespace {
enum class SizeProblem { kNone, kUncountable, kOverLimit };

// What, if anything, is wrong with the bytes of a tensor of `shape`: more than 64 bits can count,
// or more than max_bytes (0: no ceiling). `bytes` gets the count when it is countable.
SizeProblem TensorSizeProblem(DType dtype, const Shape& shape, uint64_t max_bytes,
                              uint64_t* bytes) {
  int64_t n = 0;
  if (!CheckedElementCount(shape, &n) || !CheckedByteSize(dtype, n, bytes))
    return SizeProblem::kUncountable;
  return max_bytes != 0 && *bytes > max_bytes ? SizeProblem::kOverLimit : SizeProblem::kNone;
}
}  // namespace

namespace memory {

bool TensorBytesWithin(DType dtype, const Shape& shape, uint64_t max_bytes, uint64_t* bytes) {
  return TensorSizeProblem(dtype, shape, max_bytes, bytes) == SizeProblem::kNone;
}

Status CheckTensorBytes(const std::string& who, DType dtype, const Shape& shape,
                        uint64_t max_bytes) {
  uint64_t bytes = 0;
  switch (TensorSizeProblem(dtype, shape, max_bytes, &bytes)) {
    case SizeProblem::kNone:
      return Status::Ok();
    case SizeProblem::kUncountable:
      return LimitExceeded(who, " of type ", DTypeName(dtype), " and shape ", ShapeToString(shape),
                           " has more bytes than 64 bits can count");
    case SizeProblem::kOverLimit:
      break;
  }
  return LimitExceeded(who, " of type ", DTypeName(dtype), " and shape ", ShapeToString(shape),
                       " needs ", bytes, " bytes, more than the limit of ", max_bytes,
                       " bytes (raise it with SessionOptions::limits.max_tensor_bytes or "
                       "ONYX_MAX_TENSOR_BYTES)");
}

}  // namespace memory

namespace {

constexpr size_t kSmallTensorBytes = 4096;

// A block of N bytes plus alignment slack whose constructor leaves the bytes alone: make_shared
// then allocates it and the shared count in one malloc() (two before, and two free()s).
template <size_t N>
struct SmallBlock {
  SmallBlock() {}  // NOLINT: user-provided on purpose, so that the bytes are not zeroed
  unsigned char bytes[N + memory::kAlignment];
};

template <size_t N>
std::shared_ptr<void> SmallBlockOf(void** p) {
  auto block = std::make_shared<SmallBlock<N>>();
  const uintptr_t at = reinterpret_cast<uintptr_t>(block->bytes);
  *p = reinterpret_cast<void*>((at + memory::kAlignment - 1) & ~uintptr_t{memory::kAlignment - 1});
  return block;
}

// At least `bytes` (<= kSmallTensorBytes), 64-byte aligned at *p, from glibc's per-thread caches.
std::shared_ptr<void> SmallBuffer(size_t bytes, void** p) {
  if (bytes <= 64) return SmallBlockOf<64>(p);
  if (bytes <= 256) return SmallBlockOf<256>(p);
  if (bytes <= 1024) return SmallBlockOf<1024>(p);
  return SmallBlockOf<kSmallTensorBytes>(p);
}

Tensor AllocateBuffer(DType dtype, Shape shape, bool zero) {
  for (int64_t d : shape)
    if (d < 0)
      throw Error(RuntimeError("cannot allocate a tensor of shape ", ShapeToString(shape)));
  // Strings count sizeof(std::string) each here: the vector below is what a count costs up front.
  uint64_t bytes = 0;
  const uint64_t ceiling = memory::TensorByteCeiling();
  if (!memory::TensorBytesWithin(dtype, shape, ceiling, &bytes))
    throw Error(memory::CheckTensorBytes("a tensor being allocated", dtype, shape, ceiling));
  const int64_t n = ShapeElementCount(shape);
  if (dtype == DType::kString) {
    auto vec = std::make_shared<std::vector<std::string>>(static_cast<size_t>(n));
    return Tensor::Wrap(dtype, std::move(shape), vec, vec->data());
  }
  // Beyond any machine's memory; without a ceiling (outside a session) this keeps the request
  // from reaching the allocator, where overcommit could let it through.
  if (bytes > (uint64_t{1} << 46)) throw std::bad_alloc();
  void* p = nullptr;
  std::shared_ptr<void> holder;
  if (bytes <= kSmallTensorBytes) {
    // glibc serves small malloc() requests from per-thread caches and aligned_alloc() never: the
    // shape vectors and scalars of a plan for symbolic shapes are allocated on every run.
    holder = SmallBuffer(static_cast<size_t>(bytes), &p);
  } else {
    holder = memory::CachedBuffer(bytes);
    p = holder.get();
  }
  if (zero) {
    std::memset(p, 0, bytes);
  } else if (memory::PoisonUninitialized()) {
    std::memset(p, 0xFF, bytes);  // NaN floats, -1 integers: a reader that expects zeros fails
  }
  return Tensor::Wrap(dtype, std::move(shape), std::move(holder), p);
}

}  // namespace

Tensor Tensor::Allocate(DType dtype, Shape shape) {
  return AllocateBuffer(dtype, std::move(shape), true);
}

Tensor Tensor::AllocateUninitialized(DType dtype, Shape shape) {
  return AllocateBuffer(dtype, std::move(shape), false);
}

Tensor Tensor::Borrow(DType dtype, Shape shape, void* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.data_ = data;
  return t;
}

Tensor Tensor::Wrap(DType dtype, Shape shape, std::shared_ptr<void> holder, void* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.holder_ = std::move(holder);
  t.data_ = data;
  return t;
}

Tensor Tensor::Reshaped(Shape shape) const {
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::Clone() const {
  if (!defined()) return Tensor();
  Tensor t = AllocateUninitialized(dtype_, shape_);
  if (dtype_ == DType::kString) {
    for (int64_t i = 0; i < numel(); ++i) t.strings()[i] = strings()[i];
  } else if (nbytes() > 0) {
    std::memcpy(t.data_, data_, nbytes());
  }
  return t;
}

}  // namespace onyx
