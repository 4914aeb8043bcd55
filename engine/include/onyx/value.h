// Value: what flows along a graph edge: a tensor, a sequence of tensors, or an empty optional.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "onyx/tensor.h"

namespace onyx {

// Static type of a value, as the model declares or inference derives it.
struct Dim {
  int64_t value = -1;  // >= 0 when known
  std::string symbol;  // e.g. "batch" when symbolic; empty when unknown or known
  bool known() const { return value >= 0; }
  static Dim Known(int64_t v) { return Dim{v, {}}; }
  static Dim Symbol(std::string s) { return Dim{-1, std::move(s)}; }
};

struct TypeInfo {
  enum class Kind { kUnknown, kTensor, kSequence, kOptional, kMap };
  Kind kind = Kind::kUnknown;
  DType elem = DType::kUndefined;   // tensor element type (kTensor)
  bool has_shape = false;           // false: rank unknown
  std::vector<Dim> dims;            // when has_shape
  std::shared_ptr<TypeInfo> inner;  // element type of a sequence/optional
  // map key type and value type for kMap (ai.onnx.ml)
  DType map_key = DType::kUndefined;

  static TypeInfo Tensor(DType t) {
    TypeInfo i;
    i.kind = Kind::kTensor;
    i.elem = t;
    return i;
  }
  static TypeInfo TensorWithShape(DType t, const Shape& s);
  bool is_tensor() const { return kind == Kind::kTensor; }
  int64_t rank() const { return has_shape ? static_cast<int64_t>(dims.size()) : -1; }
  // True when every dim is a known number.
  bool shape_is_static() const;
  Shape static_shape() const;    // only when shape_is_static()
  std::string ToString() const;  // "float[batch,3,224,224]", "seq(float[?])", "optional(int64[])"
};

class Value {
 public:
  enum class Kind { kNone, kTensor, kSequence, kOptionalNone };

  Value() = default;
  Value(Tensor t) : kind_(Kind::kTensor), tensor_(std::move(t)) {}  // NOLINT: implicit on purpose
  static Value Sequence(std::vector<Tensor> items, DType elem) {
    Value v;
    v.kind_ = Kind::kSequence;
    v.sequence_ = std::make_shared<std::vector<Tensor>>(std::move(items));
    v.seq_elem_ = elem;
    return v;
  }
  // An optional without an element; `type` says what it would have held.
  static Value OptionalNone(TypeInfo type) {
    Value v;
    v.kind_ = Kind::kOptionalNone;
    v.none_type_ = std::make_shared<TypeInfo>(std::move(type));
    return v;
  }

  Kind kind() const { return kind_; }
  bool defined() const { return kind_ != Kind::kNone; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_sequence() const { return kind_ == Kind::kSequence; }
  bool is_optional_none() const { return kind_ == Kind::kOptionalNone; }

  const Tensor& tensor() const { return tensor_; }
  Tensor& tensor() { return tensor_; }
  const std::vector<Tensor>& sequence() const { return *sequence_; }
  DType sequence_elem_type() const { return seq_elem_; }
  const TypeInfo& none_type() const { return *none_type_; }

 private:
  Kind kind_ = Kind::kNone;
  Tensor tensor_;
  std::shared_ptr<const std::vector<Tensor>> sequence_;
  DType seq_elem_ = DType::kUndefined;
  std::shared_ptr<TypeInfo> none_type_;
};

// The static type a runtime value has: tensors with their concrete shape, sequences with their
// element type, empty optionals with the type they would hold.
TypeInfo TypeOfValue(const Value& v);

}  // namespace onyx
