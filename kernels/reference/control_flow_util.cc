// Type merging and axis slicing shared by the control-flow and sequence kernels.
#include "kernels/reference/control_flow_util.h"

#include <cstring>
#include <memory>
#include <string>

#include "kernels/op_helpers.h"

namespace onyx::kernels::reference {

namespace {

Dim MergeDim(const Dim& a, const Dim& b) {
  if (a.known() && b.known() && a.value == b.value) return a;
  if (!a.known() && !b.known() && !a.symbol.empty() && a.symbol == b.symbol) return a;
  return Dim();
}

bool SameDim(const Dim& a, const Dim& b) {
  return a.value == b.value && a.symbol == b.symbol;
}

std::shared_ptr<TypeInfo> MergeInner(const std::shared_ptr<TypeInfo>& a,
                                     const std::shared_ptr<TypeInfo>& b) {
  if (!a || !b) return nullptr;
  TypeInfo m = MergeTypes(*a, *b);
  if (m.kind == TypeInfo::Kind::kUnknown) return nullptr;
  return std::make_shared<TypeInfo>(std::move(m));
}

}  // namespace

TypeInfo MergeTypes(const TypeInfo& a, const TypeInfo& b) {
  using Kind = TypeInfo::Kind;
  if (a.kind == Kind::kUnknown || b.kind == Kind::kUnknown) return TypeInfo();
  if (a.kind != b.kind) {
    // optional(X) vs X: the value may or may not be present, so the result stays optional.
    if (a.kind == Kind::kOptional && a.inner && a.inner->kind == b.kind) {
      TypeInfo r = a;
      TypeInfo m = MergeTypes(*a.inner, b);
      r.inner = m.kind == Kind::kUnknown ? nullptr : std::make_shared<TypeInfo>(std::move(m));
      return r;
    }
    if (b.kind == Kind::kOptional) return MergeTypes(b, a);
    return TypeInfo();
  }
  TypeInfo r;
  r.kind = a.kind;
  switch (a.kind) {
    case Kind::kTensor:
      // An undefined element type is unknown, not a conflict.
      if (a.elem != b.elem && a.elem != DType::kUndefined && b.elem != DType::kUndefined)
        return TypeInfo();
      r.elem = a.elem != DType::kUndefined ? a.elem : b.elem;
      if (a.has_shape && b.has_shape && a.dims.size() == b.dims.size()) {
        r.has_shape = true;
        for (size_t i = 0; i < a.dims.size(); ++i) r.dims.push_back(MergeDim(a.dims[i], b.dims[i]));
      }
      return r;
    case Kind::kSequence:
    case Kind::kOptional:
      r.inner = MergeInner(a.inner, b.inner);
      return r;
    default:
      return SameType(a, b) ? a : TypeInfo();
  }
}

bool SameType(const TypeInfo& a, const TypeInfo& b) {
  if (a.kind != b.kind || a.elem != b.elem || a.has_shape != b.has_shape ||
      a.dims.size() != b.dims.size() || a.map_key != b.map_key)
    return false;
  for (size_t i = 0; i < a.dims.size(); ++i)
    if (!SameDim(a.dims[i], b.dims[i])) return false;
  if (!a.inner || !b.inner) return !a.inner && !b.inner;
  return SameType(*a.inner, *b.inner);
}

TypeInfo RelaxDims(const TypeInfo& t) {
  TypeInfo r = t;
  for (Dim& d : r.dims) d = Dim();
  if (t.inner) r.inner = std::make_shared<TypeInfo>(RelaxDims(*t.inner));
  return r;
}

Tensor TakeAlongAxis(const Tensor& src, int64_t axis, int64_t index) {
  const Shape& in = src.shape();
  Shape out_shape;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < src.rank(); ++d) {
    if (d < axis) outer *= in[d];
    if (d > axis) inner *= in[d];
    if (d != axis) out_shape.push_back(in[d]);
  }
  Tensor dst = Tensor::Allocate(src.dtype(), out_shape);
  const int64_t len = in[axis];
  for (int64_t o = 0; o < outer; ++o)
    CopyElements(src.dtype(), src.raw_data(), (o * len + index) * inner, dst.raw_data(), o * inner,
                 inner);
  return dst;
}

void PutAlongAxis(const Tensor& part, Tensor* dst, int64_t axis, int64_t index) {
  const Shape& out = dst->shape();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dst->rank(); ++d) {
    if (d < axis) outer *= out[d];
    if (d > axis) inner *= out[d];
  }
  const int64_t len = out[axis];
  for (int64_t o = 0; o < outer; ++o)
    CopyElements(dst->dtype(), part.raw_data(), o * inner, dst->raw_data(),
                 (o * len + index) * inner, inner);
}

void FillZero(Tensor* t) {
  if (t->dtype() == DType::kString) {
    for (int64_t i = 0; i < t->numel(); ++i) t->strings()[i].clear();
  } else if (t->nbytes() > 0) {
    std::memset(t->raw_data(), 0, t->nbytes());
  }
}

Shape DeclaredShapeOrZeros(const TypeInfo& t) {
  Shape s;
  if (t.kind != TypeInfo::Kind::kTensor || !t.has_shape) return s;
  for (const Dim& d : t.dims) s.push_back(d.known() ? d.value : 0);
  return s;
}

Shape InsertDim(const Shape& shape, int64_t axis, int64_t value) {
  Shape s = shape;
  s.insert(s.begin() + axis, value);
  return s;
}

Value OwnedCopy(const Value& v) {
  if (v.is_tensor()) return Value(v.tensor().Clone());
  return v;
}

}  // namespace onyx::kernels::reference
