// Value: what flows along a graph edge: a tensor, a sequence of tensors, an empty optional, or
// (ai.onnx.ml) a map or a sequence of maps.
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
  enum class Kind { kNone, kTensor, kSequence, kOptionalNone, kMap, kMapSequence };

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

  // A map: keys [n] (int64 or string, no repeats) and values [n]; keys[i] maps to values[i].
  static Value Map(Tensor keys, Tensor values) {
    Value v;
    v.kind_ = Kind::kMap;
    v.tensor_ = std::move(keys);
    v.map_values_ = std::move(values);
    return v;
  }
  // A sequence of maps (ZipMap's output), every item of kind kMap with these key and value types.
  static Value MapSequence(std::vector<Value> maps, DType key, DType value) {
    Value v;
    v.kind_ = Kind::kMapSequence;
    v.maps_ = std::make_shared<std::vector<Value>>(std::move(maps));
    v.seq_elem_ = value;
    v.map_key_ = key;
    return v;
  }

  Kind kind() const { return kind_; }
  bool defined() const { return kind_ != Kind::kNone; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_sequence() const { return kind_ == Kind::kSequence; }
  bool is_optional_none() const { return kind_ == Kind::kOptionalNone; }
  bool is_map() const { return kind_ == Kind::kMap; }
  bool is_map_sequence() const { return kind_ == Kind::kMapSequence; }

  const Tensor& tensor() const { return tensor_; }
  Tensor& tensor() { return tensor_; }
  const std::vector<Tensor>& sequence() const { return *sequence_; }
  DType sequence_elem_type() const { return seq_elem_; }
  const TypeInfo& none_type() const { return *none_type_; }
  const Tensor& map_keys() const { return tensor_; }
  const Tensor& map_values() const { return map_values_; }
  const std::vector<Value>& maps() const { return *maps_; }
  DType map_key_type() const { return is_map() ? tensor_.dtype() : map_key_; }
  DType map_value_type() const { return is_map() ? map_values_.dtype() : seq_elem_; }

 private:
  Kind kind_ = Kind::kNone;
  Tensor tensor_;  // the tensor, or a map's keys
  std::shared_ptr<const std::vector<Tensor>> sequence_;
  DType seq_elem_ = DType::kUndefined;  // a sequence's element type, a map sequence's value type
  Tensor map_values_;
  std::shared_ptr<const std::vector<Value>> maps_;
  DType map_key_ = DType::kUndefined;  // a map sequence's key type
  std::shared_ptr<TypeInfo> none_type_;
};

// The static type a runtime value has: tensors with their concrete shape, sequences with their
// element type, empty optionals with the type they would hold, maps with key and value types.
TypeInfo TypeOfValue(const Value& v);

}  // namespace onyx
