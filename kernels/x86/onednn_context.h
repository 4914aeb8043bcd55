// Shared oneDNN plumbing for the x86 kernels: the CPU engine, thread count, error conversion,
// activation post-ops and memory descriptors for plain tensors.
#pragma once

#include <dnnl.hpp>
#include <string>
#include <vector>

#include "kernels/node_view.h"
#include "kernels/op_helpers.h"  // IsFloatStatic, Present for the kernels' supports
#include "kernels/op_registry.h"
#include "onyx/status.h"
#include "onyx/tensor.h"

namespace onyx::kernels::x86 {

// The process-wide CPU engine (oneDNN engines are thread-safe to share).
dnnl::engine& CpuEngine();

// oneDNN 2.6 on Debian threads with GNU OpenMP: its team size follows the calling thread's
// nthreads-var, so each kernel sets it before creating and before executing a primitive.
void SetOmpThreads(int threads);

// Attributes that make a primitive take its scratchpad from the caller. oneDNN's own
// ("library") scratchpad is one buffer per primitive unless the library was built for concurrent
// execution, and Session::Run may execute one primitive from several threads at once.
dnnl::primitive_attr ScratchpadAttr();
// Per-thread working buffers, one per use, so that a kernel can hold several at once.
enum class ThreadBufferUse { kScratchpad, kSource, kDestination };
constexpr int kThreadBufferUses = 3;
// Memory of `md`'s size in this thread's buffer for `use`: valid until this thread's next call
// for the same use, which is enough because a thread runs one kernel at a time (CPU execute
// returns when done).
dnnl::memory ThreadBuffer(ThreadBufferUse use, const dnnl::memory::desc& md);
dnnl::memory ThreadScratchpad(const dnnl::memory::desc& md);  // ThreadBuffer(kScratchpad, md)

// Runs a primitive with one source and one destination (pooling, LRN): input 0, which must still
// have the planned `x_shape`, into a new output 0 of `y_shape`, with this thread's scratchpad.
Status RunSrcDstPrimitive(KernelContext& ctx, const dnnl::primitive& prim, int threads,
                          const Shape& x_shape, const dnnl::memory::desc& src_md,
                          const Shape& y_shape, const dnnl::memory::desc& dst_md,
                          const dnnl::memory::desc& scratch_md);

// A oneDNN exception as an error naming the node.
Status FromDnnlError(const NodeView& node, const dnnl::error& e);

// Weights in oneDNN's chosen layout `packed`, reordered from `data` laid out as `user`: once at
// plan time for constant weights, or per run (into a fresh buffer) when they are computed.
dnnl::memory ReorderWeights(const dnnl::memory::desc& user, const dnnl::memory::desc& packed,
                            const void* data, dnnl::stream& stream);

// A KernelImpl for a oneDNN kernel: the impls differ only in these three parts.
KernelImpl OnednnImpl(const std::string& name,
                      std::function<Status(const NodeView&, const std::vector<TypeInfo>&)> supports,
                      CreateWithInfoFn create);

// Plain row-major descriptor of a float tensor with these dims.
dnnl::memory::desc PlainDesc(const std::vector<int64_t>& dims);
dnnl::memory::dims ToDims(const std::vector<int64_t>& v);

// Appends the fused activation (`activation` / `activation_params` of the com.onyx fused ops) as
// eltwise post-ops. Returns NotSupported for activations oneDNN cannot compute exactly.
Status AppendActivation(const NodeView& node, dnnl::post_ops& ops);
// True when the node's activation can be expressed as oneDNN post-ops.
bool ActivationSupported(const NodeView& node);

}  // namespace onyx::kernels::x86
