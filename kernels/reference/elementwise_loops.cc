// Broadcast planning and the parallel-for behind the elementwise loop skeletons.
#include "kernels/reference/elementwise_loops.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "kernels/op_helpers.h"

namespace onyx::kernels::ref {

void ParallelFor(int64_t n, int threads, const std::function<void(int64_t, int64_t)>& body) {
  // Chunks of at least this many elements keep scheduling overhead small against memory traffic.
  constexpr int64_t kMinChunk = int64_t{1} << 14;
  if (n <= 0) return;
  auto run = [&] {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, kMinChunk),
                      [&](const tbb::blocked_range<int64_t>& r) { body(r.begin(), r.end()); });
  };
  if (threads > 1 && threads < tbb::this_task_arena::max_concurrency()) {
    tbb::task_arena arena(threads);
    arena.execute(run);
  } else {
    run();
  }
}

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

}  // namespace onyx::kernels::ref
