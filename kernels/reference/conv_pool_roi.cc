// RoiAlign, MaxRoiPool and DeformConv.
#include "kernels/reference/conv_pool.h"

namespace onyx::kernels {

Status DeformConvKernel(KernelContext& ctx) { return ctx.node().NotSupported("not yet"); }
Status RoiAlign10Kernel(KernelContext& ctx) { return ctx.node().NotSupported("not yet"); }
Status RoiAlign16Kernel(KernelContext& ctx) { return ctx.node().NotSupported("not yet"); }
Status MaxRoiPoolKernel(KernelContext& ctx) { return ctx.node().NotSupported("not yet"); }

}  // namespace onyx::kernels
