// Reference kernels of the Matmul family: MatMul, Gemm, Einsum, MatMulInteger, QLinearMatMul.
// The float paths run on the shared blocked GEMM (gemm_core.h).
#pragma once

#include <string>
#include <vector>

#include "kernels/kernel.h"
#include "onyx/status.h"

namespace onyx::kernels {

Status MatMulKernel(KernelContext& ctx);
Status GemmKernel(KernelContext& ctx);
Status EinsumKernel(KernelContext& ctx);
Status MatMulIntegerKernel(KernelContext& ctx);
Status QLinearMatMulKernel(KernelContext& ctx);

// MatMul's output shape from two operand shapes (numpy matmul rules: 1-D operands get a dim
// prepended / appended and removed again, batch dims broadcast). Error when K differs or the
// batch dims do not broadcast.
StatusOr<Shape> MatMulShape(const Shape& a, const Shape& b);

// An Einsum equation resolved against concrete operand shapes. Every distinct label and every
// ellipsis dim is one axis of the iteration space (ellipsis dims first).
struct EinsumPlan {
  std::vector<int64_t> sizes;                 // per axis
  std::vector<std::vector<int64_t>> strides;  // per operand, per axis: element stride (a repeated
                                              // label adds up its strides; 0 = absent/broadcast)
  std::vector<int> output_axes;               // axes of the output, in output order
  std::vector<int> sum_axes;                  // axes summed over
  Shape output_shape;
};
// Parses `equation` (numpy.einsum rules: explicit "->" or implicit output, "..." broadcasting,
// repeated labels take diagonals) and checks it against the operand shapes.
StatusOr<EinsumPlan> PlanEinsum(const std::string& equation, const std::vector<Shape>& shapes);

}  // namespace onyx::kernels
