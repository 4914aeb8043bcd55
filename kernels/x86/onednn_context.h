// Shared oneDNN plumbing for the x86 kernels: the CPU engine, thread count, error conversion,
// activation post-ops and memory descriptors for plain tensors.
#pragma once

#include <cassert>
#include <cstdint>
#include <dnnl.hpp>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/node_view.h"
#include "kernels/op_helpers.h"  // IsFloatStatic, Present for the kernels' supports
#include "kernels/op_registry.h"
#include "kernels/weight_cache.h"
#include "kernels/x86/onednn_level.h"
#include "onyx/status.h"
#include "onyx/tensor.h"

namespace onyx::kernels::x86 {

// The process-wide CPU engine (oneDNN engines are thread-safe to share).
dnnl::engine& CpuEngine();

// Whether oneDNN computes bfloat16 natively here (AVX512-BF16 or AMX), for SessionOptions::bf16.
bool CpuHasBf16();
// Whether oneDNN's int8 kernels here multiply with AVX512-VNNI or AMX. Without them (SSE4.1,
// AVX2, AVX-512 without VNNI) they add pairs of uint8 x int8 products in 16 bits (vpmaddubsw),
// which saturates on full-range inputs: the int8 impls decline there and the reference runs.
bool CpuHasVnni();

// oneDNN 2.6 on Debian threads with GNU OpenMP: its team size follows the calling thread's
// nthreads-var, so each kernel sets it before creating and before executing a primitive.
void SetOmpThreads(int threads);

// Whether a primitive runs on oneDNN's gemm driver (implementation names "gemm:jit",
// "x64:gemm:jit": f32 products and gemm-based convolutions where no brgemm/jit kernel applies,
// e.g. CPUs without AVX-512). The driver may split the sums over K between threads by their
// number, so in deterministic mode such a primitive runs on one thread.
bool RunsOnGemmDriver(const char* impl_info);

// Attributes that make a primitive take its scratchpad from the caller. oneDNN's own
// ("library") scratchpad is one buffer per primitive unless the library was built for concurrent
// execution, and Session::Run may execute one primitive from several threads at once.
dnnl::primitive_attr ScratchpadAttr();
// This thread's stream on CpuEngine(). Creating a stream allocates, and CPU execution leaves it
// idle between calls, so every run on a thread shares one.
dnnl::stream& ThreadStream();

// Names for a kernel's memory arguments in ThreadMemory: keys no other kernel ever gets, so an
// entry left by a freed kernel never serves a new one at the same address.
class MemoryKeys {
 public:
  static constexpr int kPerKernel = 16;
  MemoryKeys();
  MemoryKeys(const MemoryKeys&) = delete;  // a copy would share the keys
  MemoryKeys& operator=(const MemoryKeys&) = delete;
  uint64_t operator[](int arg) const {
    assert(arg >= 0 && arg < kPerKernel);  // past the end it would be the next kernel's key
    return base_ + static_cast<uint64_t>(arg);
  }

 private:
  uint64_t base_;
};

// This thread's dnnl::memory for `key`, pointed at `data`. oneDNN allocates each memory object
// 64-byte aligned, which glibc serves outside its per-thread cache: a few such allocations per
// step cost about a microsecond and filled the fast bins that the next large allocation then
// consolidated (0.12 ms per ResNet-50 run). `md` must not change between calls with one key.
dnnl::memory ThreadMemory(uint64_t key, const dnnl::memory::desc& md, void* data);
inline dnnl::memory ThreadMemory(uint64_t key, const dnnl::memory::desc& md, const void* data) {
  return ThreadMemory(key, md, const_cast<void*>(data));
}

// The arguments of one primitive execution, held in place: the C++ API's execute(stream, map)
// builds a hash table and a vector on every call.
class ExecArgs {
 public:
  static constexpr int kMax = 8;
  ExecArgs(std::initializer_list<std::pair<int, dnnl::memory>> args);
  void Add(int arg, dnnl::memory memory);
  int size() const { return n_; }
  const dnnl_exec_arg_t* data() const { return args_; }

 private:
  int n_ = 0;
  dnnl::memory memories_[kMax];  // keep the objects alive while the execution runs
  dnnl_exec_arg_t args_[kMax];
};
// Executes `prim` on `stream`; throws dnnl::error as the C++ API does.
void Execute(const dnnl::primitive& prim, dnnl::stream& stream, const ExecArgs& args);

// Per-thread working buffers, one per use, so that a kernel can hold several at once.
enum class ThreadBufferUse { kScratchpad, kSource, kDestination };
constexpr int kThreadBufferUses = 3;
// Memory of `md`'s size in this thread's buffer for `use`, as ThreadMemory(key): valid until this
// thread's next call for the same use, which is enough because a thread runs one kernel at a
// time (CPU execute returns when done).
dnnl::memory ThreadBuffer(ThreadBufferUse use, const dnnl::memory::desc& md, uint64_t key);
dnnl::memory ThreadScratchpad(const dnnl::memory::desc& md, uint64_t key);

// Runs a primitive with one source and one destination (pooling, LRN): input 0, which must still
// have the planned `x_shape`, into a new output 0 of `y_shape` and input 0's type, with this
// thread's scratchpad.
Status RunSrcDstPrimitive(KernelContext& ctx, const dnnl::primitive& prim, int threads,
                          const Shape& x_shape, const dnnl::memory::desc& src_md,
                          const Shape& y_shape, const dnnl::memory::desc& dst_md,
                          const dnnl::memory::desc& scratch_md, const MemoryKeys& keys);

// A oneDNN exception as an error naming the node.
Status FromDnnlError(const NodeView& node, const dnnl::error& e);

// The reorders around a primitive that wants another layout than the tensors have: `user_src`
// into `src` (*to) and `dst` into `user_dst` (*from). They run concurrently from several threads,
// so a pair that would need a scratchpad is refused (NotSupported). May throw dnnl::error.
Status MakeLayoutReorders(const NodeView& node, const dnnl::memory::desc& user_src,
                          const dnnl::memory::desc& src, const dnnl::memory::desc& dst,
                          const dnnl::memory::desc& user_dst, dnnl::reorder* to,
                          dnnl::reorder* from);

// Weights in oneDNN's chosen layout `packed`, reordered from `data` laid out as `user`: once at
// plan time for constant weights, or per run (into a fresh buffer) when they are computed.
dnnl::memory ReorderWeights(const dnnl::memory::desc& user, const dnnl::memory::desc& packed,
                            const void* data, dnnl::stream& stream);

// Constant `source` reordered into `packed`, shared through `cache` with every other plan of the
// session that packs the same weight the same way (null cache: a private copy). The kernel keeps
// the returned pointer for as long as it uses the memory: that is what keeps the entry shared.
std::shared_ptr<const dnnl::memory> PackConstantWeights(WeightCache* cache, const Tensor& source,
                                                        const dnnl::memory::desc& user,
                                                        const dnnl::memory::desc& packed);

// A KernelImpl for a oneDNN kernel: the impls differ only in these three parts.
KernelImpl OnednnImpl(const std::string& name,
                      std::function<Status(const NodeView&, const std::vector<TypeInfo>&)> supports,
                      CreateWithInfoFn create);

// Tags of an (N, C, spatial...) tensor of rank 3 to 5 (1- to 3-D spatial): stored as it is
// (ncw, nchw, ncdhw), or channels last (nwc, nhwc, ndhwc).
inline dnnl::memory::format_tag PlainTag(size_t rank) {
  using Tag = dnnl::memory::format_tag;
  return rank == 3 ? Tag::ncw : rank == 4 ? Tag::nchw : Tag::ncdhw;
}
inline dnnl::memory::format_tag ChannelsLastTag(size_t rank) {
  using Tag = dnnl::memory::format_tag;
  return rank == 3 ? Tag::nwc : rank == 4 ? Tag::nhwc : Tag::ndhwc;
}

// Plain row-major descriptor of a float tensor with these dims.
dnnl::memory::desc PlainDesc(const std::vector<int64_t>& dims);
dnnl::memory::dims ToDims(const std::vector<int64_t>& v);

// Appends the fused activation (`activation` / `activation_params` of the com.onyx fused ops) as
// eltwise post-ops. Returns NotSupported for activations oneDNN cannot compute exactly.
Status AppendActivation(const NodeView& node, dnnl::post_ops& ops);
// True when the node's activation can be expressed as oneDNN post-ops.
bool ActivationSupported(const NodeView& node);

}  // namespace onyx::kernels::x86
