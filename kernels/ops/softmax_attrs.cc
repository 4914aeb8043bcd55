// Softmax's axis rule (see softmax_attrs.h).
#include "kernels/ops/softmax_attrs.h"

namespace onyx::kernels {

StatusOr<SoftmaxAttrs> ParseSoftmax(const NodeView& node, int64_t opset, int64_t rank) {
  SoftmaxAttrs a;
  a.coerce_2d = opset < 13;
  a.axis = node.attr_int("axis", a.coerce_2d ? 1 : -1);
  if (rank <= 0) {
    a.axis = 0;
    return a;
  }
  // Opsets < 13 accept axis == rank (a 2-D view with an empty second factor is never useful,
  // but [-r, r] is what the old spec allows).
  const int64_t hi = a.coerce_2d ? rank : rank - 1;
  if (a.axis < -rank || a.axis > hi)
    return node.Invalid("axis ", a.axis, " is out of range for input 0 of rank ", rank);
  if (a.axis < 0) a.axis += rank;
  return a;
}

SoftmaxView SoftmaxAttrs::ViewOf(const Shape& shape) const {
  SoftmaxView v;
  const int64_t rank = static_cast<int64_t>(shape.size());
  for (int64_t d = 0; d < rank; ++d) {
    int64_t& part = d < axis ? v.outer : (d == axis || coerce_2d ? v.n : v.inner);
    part *= shape[d];
  }
  return v;
}

}  // namespace onyx::kernels
