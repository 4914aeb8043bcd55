// Every op family's registration, called once in this fixed order (an explicit list, not static
// initialisers: linkers drop those from static libraries, and the order stays deterministic).
#include "kernels/op_registry.h"

namespace onyx::kernels {

void RegisterElementwise(OpRegistry& r);
void RegisterActivation(OpRegistry& r);
void RegisterReduction(OpRegistry& r);
void RegisterTensorShape(OpRegistry& r);
void RegisterIndexing(OpRegistry& r);
void RegisterConvPool(OpRegistry& r);
void RegisterNormalization(OpRegistry& r);
void RegisterMatmul(OpRegistry& r);
void RegisterRecurrent(OpRegistry& r);
void RegisterControlFlow(OpRegistry& r);
void RegisterSequence(OpRegistry& r);
void RegisterResize(OpRegistry& r);
void RegisterGridSample(OpRegistry& r);
void RegisterSpectral(OpRegistry& r);
void RegisterNonMaxSuppression(OpRegistry& r);
void RegisterQuantization(OpRegistry& r);
void RegisterQuantizationMs(OpRegistry& r);       // com.microsoft QOperator ops
void RegisterDynamicQuantizeLstm(OpRegistry& r);  // com.microsoft DynamicQuantizeLSTM
void RegisterTransformerMs(OpRegistry& r);        // com.microsoft transformer ops
void RegisterText(OpRegistry& r);
void RegisterRandom(OpRegistry& r);
void RegisterAttention(OpRegistry& r);
void RegisterRotaryEmbedding(OpRegistry& r);
void RegisterTensorScatter(OpRegistry& r);
void RegisterBitCast(OpRegistry& r);
void RegisterCausalConvWithState(OpRegistry& r);
void RegisterLinearAttention(OpRegistry& r);
void RegisterMl(OpRegistry& r);
void RegisterTraining(OpRegistry& r);
void RegisterLoss(OpRegistry& r);
void RegisterLinalg(OpRegistry& r);
void RegisterReverseSequence(OpRegistry& r);
void RegisterImageDecoder(OpRegistry& r);
void RegisterFused(OpRegistry& r);  // com.onyx ops of the fusion pass
void RegisterLayout(OpRegistry& r);

void RegisterAllOps(OpRegistry& r) {
  RegisterElementwise(r);
  RegisterActivation(r);
  RegisterReduction(r);
  RegisterTensorShape(r);
  RegisterIndexing(r);
  RegisterConvPool(r);
  RegisterNormalization(r);
  RegisterMatmul(r);
  RegisterRecurrent(r);
  RegisterControlFlow(r);
  RegisterSequence(r);
  RegisterResize(r);
  RegisterGridSample(r);
  RegisterSpectral(r);
  RegisterNonMaxSuppression(r);
  RegisterQuantization(r);
  RegisterQuantizationMs(r);
  RegisterDynamicQuantizeLstm(r);
  RegisterTransformerMs(r);
  RegisterText(r);
  RegisterRandom(r);
  RegisterAttention(r);
  RegisterRotaryEmbedding(r);
  RegisterTensorScatter(r);
  RegisterBitCast(r);
  RegisterCausalConvWithState(r);
  RegisterLinearAttention(r);
  RegisterMl(r);
  RegisterTraining(r);
  RegisterLoss(r);
  RegisterLinalg(r);
  RegisterReverseSequence(r);
  RegisterImageDecoder(r);
  RegisterFused(r);
  RegisterLayout(r);
  // Each operator's fast kernels, in front of its reference kernel (kernels/kernel_lists.cc).
  SetKernelLists(r);
  // Last: the determinism audit marks the impls registered above (docs/determinism.md).
  MarkThreadInvariantKernels(r);
}

}  // namespace onyx::kernels
