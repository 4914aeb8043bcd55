// Reference loop of ReverseSequence (see reverse_sequence.h for the contract).
#include "kernels/reference/reverse_sequence.h"

#include "kernels/op_helpers.h"

namespace onyx::kernels::reference {

void ReverseSequence(DType dtype, const void* src, void* dst, int64_t dim0, int64_t dim1,
                     int64_t inner, bool time_major, const int64_t* lens) {
  for (int64_t i = 0; i < dim0; ++i) {
    for (int64_t j = 0; j < dim1; ++j) {
      const int64_t batch = time_major ? j : i;
      const int64_t time = time_major ? i : j;
      const int64_t len = lens[batch];
      const int64_t src_time = time < len ? len - 1 - time : time;
      const int64_t src_row = time_major ? src_time * dim1 + j : i * dim1 + src_time;
      CopyElements(dtype, src, src_row * inner, dst, (i * dim1 + j) * inner, inner);
    }
  }
}

}  // namespace onyx::kernels::reference
