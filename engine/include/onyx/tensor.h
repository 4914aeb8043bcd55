// Tensor: element type, shape and a buffer that the tensor owns (shared) or borrows.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "onyx/dtype.h"

namespace onyx {

using Shape = std::vector<int64_t>;

// 1 for a scalar, 0 if any dim is 0. Saturates at INT64_MAX when the product overflows, so an
// allocation for such a shape fails instead of getting a small buffer; validate shapes from
// models and feeds with CheckedElementCount first.
int64_t ShapeElementCount(const Shape& shape);
std::string ShapeToString(const Shape& shape);  // "[1,3,224,224]"

// Checked arithmetic for sizes (DESIGN contract 8): false when the result would not fit int64
// or an operand is negative.
bool CheckedMul(int64_t a, int64_t b, int64_t* out);
bool CheckedAdd(int64_t a, int64_t b, int64_t* out);
// Element count of `shape`: false when a dim is negative or the product overflows int64 (a dim
// of 0 makes the count 0 whatever the other dims are).
bool CheckedElementCount(const Shape& shape, int64_t* count);
// Bytes that `count` elements of `dtype` occupy (strings: sizeof(std::string) each); false on
// overflow or a negative count.
bool CheckedByteSize(DType dtype, int64_t count, uint64_t* bytes);

// A dense, row-major tensor. Copies share the buffer (like a shared_ptr); Clone() deep-copies.
// String tensors hold std::string elements; every other type holds plain bytes (see DTypeSize).
class Tensor {
 public:
  Tensor() = default;

  // Owns a new 64-byte-aligned, zero-filled buffer.
  static Tensor Allocate(DType dtype, Shape shape);
  // The same without the zero fill, for callers that write every byte next (loading weights,
  // copies): filling hundreds of megabytes twice costs seconds of page faults on large models.
  // String tensors are always constructed.
  static Tensor AllocateUninitialized(DType dtype, Shape shape);
  // Borrows memory the caller keeps alive for the tensor's lifetime (not for strings). A null
  // `data` makes a tensor that has a shape but no values (weights a kernel keeps packed).
  static Tensor Borrow(DType dtype, Shape shape, void* data);
  // Shares ownership with `holder`, which keeps `data` alive.
  static Tensor Wrap(DType dtype, Shape shape, std::shared_ptr<void> holder, void* data);
  // A scalar of type T convenience (float, double, int64_t, int32_t, bool, ...).
  template <typename T>
  static Tensor Scalar(DType dtype, T value) {
    Tensor t = Allocate(dtype, {});
    *t.data<T>() = value;
    return t;
  }

  bool defined() const { return dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_[i]; }
  int64_t numel() const { return ShapeElementCount(shape_); }
  // Saturates at SIZE_MAX (numel() saturates too), so an overflowing shape never yields a small
  // byte count that a copy or an allocation would then trust.
  size_t nbytes() const {
    const uint64_t n = static_cast<uint64_t>(numel()), elem = DTypeSize(dtype_);
    return elem != 0 && n > SIZE_MAX / elem ? SIZE_MAX : static_cast<size_t>(n * elem);
  }

  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }
  template <typename T>
  T* data() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }
  std::string* strings() { return static_cast<std::string*>(data_); }
  const std::string* strings() const { return static_cast<const std::string*>(data_); }

  // Same buffer, new shape with the same element count (checked by the caller).
  Tensor Reshaped(Shape shape) const;
  // A deep copy into a buffer the new tensor owns.
  Tensor Clone() const;
  // True when the tensor owns (shares) its buffer rather than borrowing it.
  bool owns_buffer() const { return holder_ != nullptr; }
  // True when this tensor is the only one holding its buffer: no other tensor (a model weight, a
  // value still in use) can see writes to it, so it may be handed on without a copy.
  bool owns_buffer_alone() const { return holder_ != nullptr && holder_.use_count() == 1; }

 private:
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  std::shared_ptr<void> holder_;  // null when borrowed
  void* data_ = nullptr;
};

}  // namespace onyx
