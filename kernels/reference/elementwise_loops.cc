// Broadcast planning behind the elementwise loop skeletons.
#include "kernels/reference/elementwise_loops.h"

#include "kernels/op_helpers.h"

namespace onyx::kernels::reference {

BroadcastPlan MakeBroadcastPlan(const std::vector<Shape>& inputs, const Shape& out) {
  BroadcastPlan p;
  const size_t k = inputs.size();
  p.total = ShapeElementCount(out);
  p.inner_stride.assign(k, 0);
  p.outer_strides.assign(k, {});
  if (p.total == 0) {
    p.inner = 0;
    return p;
  }
  std::vector<std::vector<int64_t>> strides(k);
  for (size_t j = 0; j < k; ++j) strides[j] = BroadcastStrides(inputs[j], out);
  // Collapsed dims, innermost first: (size, strides per input).
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> dim_strides;  // [dim][input]
  for (size_t d = out.size(); d-- > 0;) {
    if (out[d] == 1) continue;
    std::vector<int64_t> st(k);
    for (size_t j = 0; j < k; ++j) st[j] = strides[j][d];
    if (!sizes.empty()) {
      // Merge into the previous (inner) dim when every input continues it seamlessly.
      bool mergeable = true;
      for (size_t j = 0; j < k && mergeable; ++j)
        mergeable = st[j] == dim_strides.back()[j] * sizes.back();
      if (mergeable) {
        sizes.back() *= out[d];
        continue;
      }
    }
    sizes.push_back(out[d]);
    dim_strides.push_back(std::move(st));
  }
  if (sizes.empty()) {  // scalar output
    p.inner = 1;
    return p;
  }
  p.inner = sizes[0];
  for (size_t j = 0; j < k; ++j) p.inner_stride[j] = dim_strides[0][j];
  for (size_t d = sizes.size(); d-- > 1;) {
    p.outer_shape.push_back(sizes[d]);
    for (size_t j = 0; j < k; ++j) p.outer_strides[j].push_back(dim_strides[d][j]);
  }
  return p;
}

}  // namespace onyx::kernels::reference
