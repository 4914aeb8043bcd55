// TypeInfo: static value types (tensor with symbolic shape, sequence, optional) and their printing.
#include <string>

#include "onyx/value.h"

namespace onyx {

TypeInfo TypeInfo::TensorWithShape(DType t, const Shape& s) {
  TypeInfo i = Tensor(t);
  i.has_shape = true;
  for (int64_t d : s) i.dims.push_back(Dim::Known(d));
  return i;
}

bool TypeInfo::shape_is_static() const {
  if (kind != Kind::kTensor || !has_shape) return false;
  for (const Dim& d : dims)
    if (!d.known()) return false;
  return true;
}

Shape TypeInfo::static_shape() const {
  Shape s;
  for (const Dim& d : dims) s.push_back(d.value);
  return s;
}

std::string TypeInfo::ToString() const {
  switch (kind) {
    case Kind::kUnknown:
      return "?";
    case Kind::kTensor: {
      // Appends, not a stream: sessions build this per run for their plan caches' keys.
      std::string s = DTypeName(elem);
      if (!has_shape) return s + "[...]";
      s += '[';
      for (size_t i = 0; i < dims.size(); ++i) {
        if (i) s += ',';
        if (dims[i].known())
          s += std::to_string(dims[i].value);
        else
          s += dims[i].symbol.empty() ? "?" : dims[i].symbol;
      }
      s += ']';
      return s;
    }
    case Kind::kSequence:
      return "seq(" + (inner ? inner->ToString() : "?") + ")";
    case Kind::kOptional:
      return "optional(" + (inner ? inner->ToString() : "?") + ")";
    case Kind::kMap:
      return std::string("map(") + DTypeName(map_key) + "," + (inner ? inner->ToString() : "?") +
             ")";
  }
  return "?";
}

TypeInfo TypeOfValue(const Value& v) {
  if (v.is_tensor()) return TypeInfo::TensorWithShape(v.tensor().dtype(), v.tensor().shape());
  TypeInfo t;
  if (v.is_sequence()) {
    t.kind = TypeInfo::Kind::kSequence;
    t.inner = std::make_shared<TypeInfo>(TypeInfo::Tensor(v.sequence_elem_type()));
  } else if (v.is_optional_none()) {
    t.kind = TypeInfo::Kind::kOptional;
    t.inner = std::make_shared<TypeInfo>(v.none_type());
  } else if (v.is_map() || v.is_map_sequence()) {
    TypeInfo m;
    m.kind = TypeInfo::Kind::kMap;
    m.map_key = v.map_key_type();
    m.inner = std::make_shared<TypeInfo>(TypeInfo::Tensor(v.map_value_type()));
    if (v.is_map()) return m;
    t.kind = TypeInfo::Kind::kSequence;
    t.inner = std::make_shared<TypeInfo>(std::move(m));
  }
  return t;
}

}  // namespace onyx
