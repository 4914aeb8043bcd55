// Reference kernels of the ConvPool family (Conv, ConvTranspose, ConvInteger, QLinearConv,
// DeformConv, MaxPool, AveragePool, LpPool, Global*Pool, MaxUnpool, RoiAlign, MaxRoiPool) and the
// window geometry that their shape inference shares.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernel.h"
#include "kernels/node_view.h"
#include "onyx/status.h"

namespace onyx::kernels {

// Where a sliding window (conv kernel or pooling window) visits, per spatial dimension (the dims
// after N and C). Every vector has one entry per spatial dim.
struct WindowGeometry {
  std::vector<int64_t> in;         // input sizes
  std::vector<int64_t> kernel;     // window sizes (taps, before dilation)
  std::vector<int64_t> strides;    // >= 1
  std::vector<int64_t> dilations;  // >= 1
  std::vector<int64_t> pad_begin;  // resolved padding (auto_pad applied), >= 0
  std::vector<int64_t> pad_end;
  std::vector<int64_t> out;  // output sizes

  size_t rank() const { return in.size(); }
  int64_t InSize() const;      // product of `in`
  int64_t OutSize() const;     // product of `out`
  int64_t KernelSize() const;  // product of `kernel`
};

// Resolves strides, dilations, pads and auto_pad for a window of `kernel` over an input with
// spatial sizes `in`, and the output sizes. `allow_ceil_mode` reads ceil_mode (pools from opset
// 10). Conv and the pools share the ONNX rules: NOTSET uses explicit pads, SAME_* gives
// ceil(in / stride) with the odd pad at the end (UPPER) or the beginning (LOWER), VALID pads
// nothing. Errors name the node and the offending attribute.
StatusOr<WindowGeometry> ResolveWindow(const NodeView& node, const std::vector<int64_t>& in,
                                       const std::vector<int64_t>& kernel, bool allow_ceil_mode);

// com.onyx NhwcConv, the convolution the layout pass puts on channels-last activations.
inline bool IsChannelsLastConv(const NodeView& node) {
  return node.op_type() == "NhwcConv";
}
// The (N, C, spatial...) dims of an X stored as `stored`: (N, spatial..., C) when channels_last.
std::vector<int64_t> ChannelsFirstDims(const Shape& stored, bool channels_last);

// ConvTranspose: output sizes and pads from strides, dilations, output_padding, output_shape,
// pads and auto_pad (the ONNX ConvTranspose rules). `geometry.in` is X's spatial sizes,
// `geometry.out` the output's.
StatusOr<WindowGeometry> ResolveConvTransposeWindow(const NodeView& node,
                                                    const std::vector<int64_t>& in,
                                                    const std::vector<int64_t>& kernel);

// Kernels (KernelFn). Each validates its inputs against the node's attributes at run time.
Status ConvKernel(KernelContext& ctx);
Status ConvTransposeKernel(KernelContext& ctx);
Status ConvIntegerKernel(KernelContext& ctx);
Status QLinearConvKernel(KernelContext& ctx);
Status DeformConvKernel(KernelContext& ctx);
Status MaxPoolKernel(KernelContext& ctx);
Status AveragePoolKernel(KernelContext& ctx);
Status LpPoolKernel(KernelContext& ctx);
Status GlobalAveragePoolKernel(KernelContext& ctx);
Status GlobalMaxPoolKernel(KernelContext& ctx);
Status GlobalLpPoolKernel(KernelContext& ctx);
Status MaxUnpoolKernel(KernelContext& ctx);
Status RoiAlign10Kernel(KernelContext& ctx);  // opset 10: no coordinate_transformation_mode
Status RoiAlign16Kernel(KernelContext& ctx);  // opset 16+: default half_pixel
Status MaxRoiPoolKernel(KernelContext& ctx);

// Shared by the float conv and the integer convs: lays out the receptive fields of output
// positions [out_begin, out_end) (flattened, row-major over geometry.out) of one image plane
// group as a (channels * kernel size) x (out_end - out_begin) matrix, zero where the window
// falls on padding. `src` points at `channels` planes of geometry.InSize() elements. Positions
// out_begin and out_end must be multiples of the last output dim (whole output rows).
template <typename T>
void Im2Col(const T* src, int64_t channels, const WindowGeometry& g, int64_t out_begin,
            int64_t out_end, T pad_value, T* dst);

}  // namespace onyx::kernels
