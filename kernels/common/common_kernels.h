// The portable kernels of kernels/common, as entries of their operators' kernel lists
// (kernels/kernel_lists.cc). Each rejects in `supports` what it cannot run exactly; the
// WithFallback ones also hand run-time cases they do not cover to the reference kernel.
#pragma once

#include <string>

#include "kernels/common/simd_kernels.h"
#include "kernels/op_registry.h"

namespace onyx::kernels::common {

// Plain C++: data movement without SIMD.
KernelEntry CastConvertKernel();                       // cast_kernel.cc
KernelEntry GatherMemcpyKernel();                      // gather_kernel.cc
KernelEntry ReshapeViewKernel();                       // view_kernels.cc
KernelEntry FlattenViewKernel();                       // view_kernels.cc
KernelEntry SqueezeViewKernel(const std::string& op);  // Squeeze, Unsqueeze; view_kernels.cc

// Highway, dispatched at run time (HighwayIsa()).
KernelEntry ConcatMemcpyKernel();                                       // copy_kernels.cc
KernelEntry SplitMemcpyKernel();                                        // copy_kernels.cc
KernelEntry SliceMemcpyKernel();                                        // copy_kernels.cc
KernelEntry TransposeTiledKernel();                                     // transpose_kernel.cc
KernelEntry UnaryHwyKernel(const std::string& op, UnaryOp kind);        // elementwise_kernels.cc
KernelEntry BinaryHwyKernel(const std::string& op, BinaryOp kind);      // elementwise_kernels.cc
KernelEntry VariadicHwyKernel(const std::string& op, BinaryOp kind);    // Sum, Max, Min
KernelEntry PowHwyKernel();                                             // elementwise_kernels.cc
KernelEntry PReluHwyKernel();                                           // opset 7 on; prelu_hwy.cc
KernelEntry SoftmaxHwyKernel(const std::string& op, SoftmaxKind kind);  // softmax_kernels.cc
KernelEntry GlobalPoolHwyKernel(const std::string& op, ReduceKind kind);  // reduce_kernels.cc
// `axes_input_since`: the opset from which the axes are an input rather than an attribute.
KernelEntry ReduceHwyKernel(const std::string& op, ReduceKind kind, int64_t axes_input_since);
KernelEntry LayerNormHwyKernel();                       // normalization_kernels.cc
KernelEntry BatchNormHwyKernel();                       // normalization_kernels.cc
KernelEntry QuantizeLinearHwyKernel();                  // quantize_kernels.cc
KernelEntry DequantizeLinearHwyKernel();                // quantize_kernels.cc
KernelEntry DynamicQuantizeLinearHwyKernel();           // quantize_kernels.cc
KernelEntry LstmHwyKernel();                            // lstm_kernel.cc
KernelEntry GruHwyKernel();                             // gru_kernel.cc
KernelEntry RnnHwyKernel();                             // rnn_kernel.cc
KernelImpl ChannelAffineHwyKernel(bool channels_last);  // fused_kernels.cc (com.onyx)
KernelImpl SkipLayerNormHwyKernel();                    // fused_kernels.cc (com.onyx)
KernelImpl ReplaceNaNHwyKernel();                       // fused_kernels.cc (com.onyx)
// Convolutions and products.
KernelEntry SmallConvHwyKernel(
    const std::string& op);           // few output positions; small_conv_kernel.cc
KernelImpl WinogradConvHwyKernel();   // 3x3 NhwcConv; winograd_conv_kernel.cc
KernelImpl DepthwiseConvHwyKernel();  // NhwcConv; depthwise_conv_kernel.cc
KernelImpl BlockSparseConvKernel();   // 1x1 NhwcConv; sparse_conv_kernel.cc
KernelImpl BlockSparseMatMulKernel(const std::string& op);  // sparse_matmul_kernel.cc

}  // namespace onyx::kernels::common
