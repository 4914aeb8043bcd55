// Softmax / LogSoftmax / Hardmax's axis rule, parsed and checked once for the shape function, the
// reference kernel and the fast kernel (and com.microsoft QLinearSoftmax, which names the Softmax
// opset it follows in an attribute).
#pragma once

#include <cstdint>

#include "kernels/node_view.h"
#include "onyx/status.h"
#include "onyx/tensor.h"

namespace onyx::kernels {

// X's dims seen as [outer, n, inner] around the axis: outer * inner rows of n elements, the
// elements of one row `inner` apart.
struct SoftmaxView {
  int64_t outer = 1, n = 1, inner = 1;
};

struct SoftmaxAttrs {
  // Opsets 1-12: X is coerced to 2-D [prod(dims[:axis]), prod(dims[axis:])] and each row
  // normalised (default axis 1). Opset 13 on: the single axis `axis` (default -1).
  bool coerce_2d = false;
  int64_t axis =
      0;  // normalised: in [0, rank] when coerce_2d (the old spec's [-r, r]), else [0, rank)
  SoftmaxView ViewOf(const Shape& shape) const;
};

// Reads `axis` with the default of Softmax version `opset` and checks it against `rank`; an axis
// out of range is an error naming the node. Rank 0 has no axis to check (one element).
StatusOr<SoftmaxAttrs> ParseSoftmax(const NodeView& node, int64_t opset, int64_t rank);
// The node's own opset (ai.onnx Softmax, LogSoftmax, Hardmax).
inline StatusOr<SoftmaxAttrs> ParseSoftmax(const NodeView& node, int64_t rank) {
  return ParseSoftmax(node, node.opset(), rank);
}

}  // namespace onyx::kernels
