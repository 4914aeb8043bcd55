// Registers the portable SIMD (Highway) kernels and the data-movement kernels in front of the
// reference kernels. Each impl rejects (in `supports`) what it cannot run exactly, and hands
// run-time cases it does not cover to the reference kernel, so the reference stays the fallback.
#include "kernels/common/highway_dispatch.h"
#include "kernels/op_registry.h"

namespace onyx::kernels {

namespace common {
void RegisterElementwiseCommon(OpRegistry& r);    // elementwise_kernels.cc
void RegisterSoftmaxCommon(OpRegistry& r);        // softmax_kernels.cc
void RegisterReduceCommon(OpRegistry& r);         // reduce_kernels.cc
void RegisterNormalizationCommon(OpRegistry& r);  // normalization_kernels.cc
void RegisterTransposeCommon(OpRegistry& r);      // transpose_kernel.cc
void RegisterCopyCommon(OpRegistry& r);           // copy_kernels.cc
void RegisterViewCommon(OpRegistry& r);           // view_kernels.cc
void RegisterGatherCommon(OpRegistry& r);         // gather_kernel.cc
void RegisterFusedFast(OpRegistry& r);            // fused_kernels.cc (com.onyx ops)
void RegisterDepthwiseConvFast(OpRegistry& r);    // depthwise_conv_kernel.cc
void RegisterLstmFast(OpRegistry& r);             // lstm_kernel.cc
void RegisterGruFast(OpRegistry& r);              // gru_kernel.cc
void RegisterRnnFast(OpRegistry& r);              // rnn_kernel.cc
void RegisterQuantizeCommon(OpRegistry& r);       // quantize_kernels.cc
void RegisterCastCommon(OpRegistry& r);           // cast_kernel.cc
}  // namespace common

void RegisterCommonKernels(OpRegistry& r) {
  (void)common::HighwayLevel();  // ONYX_ISA's cap on Highway's targets, before any kernel runs
  {
    // Plain C++ (no Highway call): they run at any level.
    common::RegisterViewCommon(r);
    common::RegisterGatherCommon(r);
    common::RegisterCastCommon(r);
  }
  IsaScope highway(r, HighwayIsa());
  common::RegisterElementwiseCommon(r);
  common::RegisterSoftmaxCommon(r);
  common::RegisterReduceCommon(r);
  common::RegisterNormalizationCommon(r);
  common::RegisterTransposeCommon(r);
  common::RegisterCopyCommon(r);  // strided copies transpose with Highway
  common::RegisterFusedFast(r);
  common::RegisterDepthwiseConvFast(r);
  common::RegisterLstmFast(r);
  common::RegisterGruFast(r);
  common::RegisterRnnFast(r);
  common::RegisterQuantizeCommon(r);
}

}  // namespace onyx::kernels
