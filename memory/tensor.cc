// Tensor buffers: owned (aligned, zero-filled), borrowed, or shared with a holder.
#include "onyx/tensor.h"

#include <cstring>
#include <new>
#include <sstream>

#include "memory/aligned_alloc.h"
#include "onyx/status.h"

namespace onyx {

int64_t ShapeElementCount(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeToString(const Shape& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? "," : "") << shape[i];
  os << "]";
  return os.str();
}

namespace {

Tensor AllocateBuffer(DType dtype, Shape shape, bool zero) {
  const int64_t n = ShapeElementCount(shape);
  if (n < 0) throw std::bad_alloc();
  if (dtype == DType::kString) {
    auto vec = std::make_shared<std::vector<std::string>>(static_cast<size_t>(n));
    return Tensor::Wrap(dtype, std::move(shape), vec, vec->data());
  }
  const size_t elem = DTypeSize(dtype);
  if (elem != 0 && static_cast<uint64_t>(n) > (uint64_t{1} << 46) / elem) throw std::bad_alloc();
  const size_t bytes = static_cast<size_t>(n) * elem;
  void* p = memory::AlignedAlloc(bytes);
  if (zero) {
    std::memset(p, 0, bytes);
  } else if (memory::PoisonUninitialized()) {
    std::memset(p, 0xFF, bytes);  // NaN floats, -1 integers: a reader that expects zeros fails
  }
  return Tensor::Wrap(dtype, std::move(shape), std::shared_ptr<void>(p, memory::AlignedFree), p);
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
