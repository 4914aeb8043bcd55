// Reference kernels of the channels-last ops the planner's layout pass places (com.onyx
// NhwcConv, NhwcMaxPool, NhwcAveragePool, NhwcChannelAffine). X and Y are stored [N, spatial...,
// C]; weights stay [M, C/group, k...]. They are direct loops: the specification the oneDNN kernels
// are tested against, not a fast path.
#pragma once

#include <string>
#include <vector>

#include "kernels/kernel.h"

namespace onyx::kernels {

Status NhwcConvKernel(KernelContext& ctx);
Status NhwcMaxPoolKernel(KernelContext& ctx);
Status NhwcAveragePoolKernel(KernelContext& ctx);
// com.onyx ChannelAffine with the channels on the last axis: Y = act(X * Scale[c] + Shift[c]).
Status NhwcChannelAffineKernel(KernelContext& ctx);
// LRN's attributes on [N, H, W, C]: each pixel's C values are one LRN window sequence.
Status NhwcLrnKernel(KernelContext& ctx);
// QLinearConv's inputs and attributes with X and Y stored [N, spatial..., C].
Status NhwcQLinearConvKernel(KernelContext& ctx);

}  // namespace onyx::kernels
