// Shared oneDNN plumbing for the x86 kernels.
#include "kernels/x86/onednn_context.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <limits>
#include <new>
#include <unordered_map>

#include "kernels/activation_rules.h"
#include "kernels/thread_variants.h"
#include "memory/aligned_alloc.h"

namespace onyx::kernels::x86 {

namespace {
// oneDNN keeps the last 1024 primitives it made (their JIT code) in a process-wide cache. onyx
// keeps its own primitives in its plans and kernels, so the library's cache only has to bridge
// identical primitives made close together (the layers of one model); with shapes that change
// on every call a full cache held about 100 MB of code nobody used (issue 14). A smaller one,
// unless ONEDNN_PRIMITIVE_CACHE_CAPACITY says otherwise.
constexpr int kPrimitiveCacheCapacity = 64;
// oneDNN's ISA for an onyx level: the library then generates no code above it. Its cap can be
// set only before its first primitive or ISA query; scalar has no oneDNN equivalent (its lowest
// JIT level is SSE4.1), so oneDNN's kernels are not used under it (OnednnIsa().min).
dnnl::cpu_isa OnednnCap(IsaLevel level) {
  using I = dnnl::cpu_isa;
  switch (level) {
    case IsaLevel::kScalar:
    case IsaLevel::kSse4:
      return I::sse41;
    case IsaLevel::kAvx2:
      return I::avx2;
    case IsaLevel::kAvx512:
      return I::avx512_core;
    case IsaLevel::kAvx512Vnni:
      return I::avx512_core_vnni;
    case IsaLevel::kAvx512Bf16:
      return I::avx512_core_bf16;
    default:
      return I::all;  // amx: oneDNN 2.6 takes AMX only under "all" (initial support)
  }
}

IsaLevel LevelOf(dnnl::cpu_isa isa) {
  using I = dnnl::cpu_isa;
  switch (isa) {
    case I::avx512_core_amx:
      return IsaLevel::kAmx;
    case I::avx512_core_bf16:
      return IsaLevel::kAvx512Bf16;
    case I::avx512_core_vnni:
      return IsaLevel::kAvx512Vnni;
    case I::avx512_core:
      return IsaLevel::kAvx512;
    case I::avx2:
    case I::avx2_vnni:
      return IsaLevel::kAvx2;
    case I::sse41:
    case I::avx:
      return IsaLevel::kSse4;
    default:
      return IsaLevel::kScalar;
  }
}

}  // namespace

void CapOnednn() {
  static const bool done = [] {
    const IsaLevel cap = ProcessIsaCap();
    // Below the machine only: uncapped, oneDNN keeps its own default (and DNNL_MAX_CPU_ISA).
    if (cap != MachineIsa()) dnnl::set_max_cpu_isa(OnednnCap(cap));
    return true;
  }();
  (void)done;
}

IsaLevel OnednnLevel() {
  CapOnednn();
  return LevelOf(dnnl::get_effective_cpu_isa());
}

dnnl::engine& CpuEngine() {
  static dnnl::engine* engine = [] {
    CapOnednn();
    if (!std::getenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY") &&
        !std::getenv("DNNL_PRIMITIVE_CACHE_CAPACITY"))
      dnnl::set_primitive_cache_capacity(kPrimitiveCacheCapacity);
    return new dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return *engine;
}

void SetOmpThreads(int threads) {
  if (threads < 1) threads = 1;
  // oneDNN splits a primitive's work for the team size it sees when the primitive is made and
  // expects that team when it runs: a team capped below the request (OMP_THREAD_LIMIT) left the
  // other threads' rows unwritten. Ask for no more than the runtime will give.
  threads = std::min(threads, std::max(1, omp_get_thread_limit()));
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
}

bool RunsOnGemmDriver(const char* impl_info) {
  const std::string impl(impl_info);
  return impl.rfind("gemm", 0) == 0 || impl.rfind("x64:gemm", 0) == 0;
}

bool CpuHasBf16() {
  CapOnednn();
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
}

bool CpuHasVnni() {
  CapOnednn();
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core_vnni || isa == dnnl::cpu_isa::avx512_core_bf16 ||
         isa == dnnl::cpu_isa::avx512_core_amx;
}

dnnl::primitive_attr ScratchpadAttr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::stream& ThreadStream() {
  thread_local dnnl::stream stream(CpuEngine());
  return stream;
}

MemoryKeys::MemoryKeys() {
  static std::atomic<uint64_t> next{0};
  base_ = next.fetch_add(kPerKernel, std::memory_order_relaxed);
}

dnnl::memory ThreadMemory(uint64_t key, const dnnl::memory::desc& md, void* data) {
  // Entries of freed kernels stay until the table is this big, then all go (a thread that
  // builds sessions over and over would otherwise keep every one's).
  constexpr size_t kMaxEntries = 4096;
  thread_local std::unordered_map<uint64_t, dnnl::memory> memories;
  auto it = memories.find(key);
  if (it == memories.end()) {
    if (memories.size() >= kMaxEntries) memories.clear();
    return memories.emplace(key, dnnl::memory(md, CpuEngine(), data)).first->second;
  }
  it->second.set_data_handle(data);
  return it->second;
}

ExecArgs::ExecArgs(std::initializer_list<std::pair<int, dnnl::memory>> args) {
  for (const auto& [arg, memory] : args) Add(arg, memory);
}

void ExecArgs::Add(int arg, dnnl::memory memory) {
  if (n_ == kMax) throw dnnl::error(dnnl_invalid_arguments, "too many primitive arguments");
  args_[n_] = {arg, memory.get()};
  memories_[n_++] = std::move(memory);
}

void Execute(const dnnl::primitive& prim, dnnl::stream& stream, const ExecArgs& args) {
  dnnl::error::wrap_c_api(
      dnnl_primitive_execute(prim.get(), stream.get(), args.size(), args.data()),
      "could not execute a primitive");
}

dnnl::memory ThreadBuffer(ThreadBufferUse use, const dnnl::memory::desc& md, uint64_t key) {
  struct Buffer {
    void* data = nullptr;
    size_t size = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buffers[kThreadBufferUses];
  Buffer& buffer = buffers[static_cast<int>(use)];
  const size_t need = std::max<size_t>(md.get_size(), 64);
  if (buffer.size < need) {
    std::free(buffer.data);
    buffer.data = nullptr;
    buffer.size = (need + 4095) / 4096 * 4096;
    buffer.data = std::aligned_alloc(64, buffer.size);
    if (!buffer.data) {
      buffer.size = 0;
      throw std::bad_alloc();
    }
  }
  return ThreadMemory(key, md, buffer.data);
}

dnnl::memory ThreadScratchpad(const dnnl::memory::desc& md, uint64_t key) {
  return ThreadBuffer(ThreadBufferUse::kScratchpad, md, key);
}

Status RunSrcDstPrimitive(KernelContext& ctx, const dnnl::primitive& prim, int threads,
                          const Shape& x_shape, const dnnl::memory::desc& src_md,
                          const Shape& y_shape, const dnnl::memory::desc& dst_md,
                          const dnnl::memory::desc& scratch_md, const MemoryKeys& keys) {
  SetOmpThreads(threads);
  const Tensor& x = ctx.input(0);
  if (x.shape() != x_shape) return ctx.node().Fail("input shape changed after planning");
  try {
    dnnl::stream& stream = ThreadStream();
    Tensor y = ctx.Output(0, x.dtype(), y_shape);
    Execute(prim, stream,
            {{DNNL_ARG_SRC, ThreadMemory(keys[0], src_md, x.raw_data())},
             {DNNL_ARG_DST, ThreadMemory(keys[1], dst_md, y.raw_data())},
             {DNNL_ARG_SCRATCHPAD, ThreadScratchpad(scratch_md, keys[2])}});
    stream.wait();
  } catch (const dnnl::error& e) {
    return FromDnnlError(ctx.node(), e);
  }
  return Status::Ok();
}

Status FromDnnlError(const NodeView& node, const dnnl::error& e) {
  return node.Fail("oneDNN: ", e.what());
}

Status MakeLayoutReorders(const NodeView& node, const dnnl::memory::desc& user_src,
                          const dnnl::memory::desc& src, const dnnl::memory::desc& dst,
                          const dnnl::memory::desc& user_dst, dnnl::reorder* to,
                          dnnl::reorder* from) {
  dnnl::engine& eng = CpuEngine();
  const dnnl::reorder::primitive_desc to_pd(eng, user_src, eng, src, ScratchpadAttr());
  const dnnl::reorder::primitive_desc from_pd(eng, dst, eng, user_dst, ScratchpadAttr());
  if (to_pd.scratchpad_desc().get_size() != 0 || from_pd.scratchpad_desc().get_size() != 0)
    return node.NotSupported("oneDNN's layout reorders need a scratchpad");
  *to = dnnl::reorder(to_pd);
  *from = dnnl::reorder(from_pd);
  return Status::Ok();
}

namespace {

// Reorders `data` (laid out as `user`) into `dst`.
void ReorderInto(const dnnl::memory::desc& user, const void* data, const dnnl::memory& dst,
                 dnnl::stream& stream) {
  dnnl::memory src(user, CpuEngine(), const_cast<void*>(data));
  // Computed weights are reordered during runs, from several threads at once: a scratchpad of
  // its own, never the library's shared one.
  const dnnl::reorder::primitive_desc pd(CpuEngine(), user, CpuEngine(), dst.get_desc(),
                                         ScratchpadAttr());
  ExecArgs args = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
  if (pd.scratchpad_desc().get_size() != 0)
    args.Add(DNNL_ARG_SCRATCHPAD, dnnl::memory(pd.scratchpad_desc(), CpuEngine()));
  Execute(dnnl::reorder(pd), stream, args);
  stream.wait();
}

}  // namespace

dnnl::memory ReorderWeights(const dnnl::memory::desc& user, const dnnl::memory::desc& packed,
                            const void* data, dnnl::stream& stream) {
  dnnl::memory dst(packed, CpuEngine());
  ReorderInto(user, data, dst, stream);
  return dst;
}

std::shared_ptr<const dnnl::memory> PackConstantWeights(WeightCache* cache, const Tensor& source,
                                                        const dnnl::memory::desc& user,
                                                        const dnnl::memory::desc& packed) {
  const auto pack = [&]() -> std::shared_ptr<const dnnl::memory> {
    dnnl::stream stream(CpuEngine());
    // A buffer of onyx's own, on huge pages when large: read whole on every run, a large packed
    // weight otherwise costs a TLB miss per 4 KiB page.
    std::shared_ptr<void> buffer(memory::HugePageAlloc(packed.get_size()), memory::AlignedFree);
    dnnl::memory dst(packed, CpuEngine(), buffer.get());
    ReorderInto(user, source.raw_data(), dst, stream);
    return std::shared_ptr<const dnnl::memory>(new dnnl::memory(dst),
                                               [buffer](const dnnl::memory* m) { delete m; });
  };
  if (!cache) return pack();
  // Both descriptors are plain structs, zero-filled by oneDNN before it sets them: their bytes
  // name the layout exactly.
  std::string layout(reinterpret_cast<const char*>(&user.data), sizeof(user.data));
  layout.append(reinterpret_cast<const char*>(&packed.data), sizeof(packed.data));
  return cache->GetOrPack<dnnl::memory>(source, layout, pack, packed.get_size());
}

KernelImpl OnednnImpl(const std::string& name,
                      std::function<Status(const NodeView&, const std::vector<TypeInfo>&)> supports,
                      CreateWithInfoFn create) {
  KernelImpl impl;
  impl.name = name;
  impl.supports = std::move(supports);
  impl.create_with_info = WithThreadVariants(std::move(create));
  impl.isa.min = FirstSimdLevel();
  impl.isa.dispatch = &OnednnLevel;
  impl.isa.library = "onednn";
  return impl;
}

dnnl::memory::dims ToDims(const std::vector<int64_t>& v) {
  return dnnl::memory::dims(v.begin(), v.end());
}

dnnl::memory::desc PlainDesc(const std::vector<int64_t>& dims) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * std::max<int64_t>(dims[i + 1], 1);
  return dnnl::memory::desc(ToDims(dims), dnnl::memory::data_type::f32, strides);
}

namespace {

// One eltwise step: algorithm, alpha, beta.
struct Eltwise {
  dnnl::algorithm alg;
  float alpha = 0.f, beta = 0.f;
};

// The eltwise sequence that computes an activation of the table exactly; false when there is none.
bool ActivationSteps(const Activation& a, std::vector<Eltwise>* steps) {
  using A = dnnl::algorithm;
  steps->clear();
  switch (a.kind) {
    case ActivationKind::kNone:
      return true;
    case ActivationKind::kRelu:
      steps->push_back({A::eltwise_relu, 0.f});
      return true;
    case ActivationKind::kLeakyRelu:
      steps->push_back({A::eltwise_relu, a.alpha});
      return true;
    case ActivationKind::kClip:
      steps->push_back({A::eltwise_clip, a.alpha, a.beta});
      return true;
    case ActivationKind::kSigmoid:
      steps->push_back({A::eltwise_logistic});
      return true;
    case ActivationKind::kTanh:
      steps->push_back({A::eltwise_tanh});
      return true;
    case ActivationKind::kHardSigmoid:
      // max(0, min(1, alpha * x + beta)): a linear step then a clip to [0, 1].
      steps->push_back({A::eltwise_linear, a.alpha, a.beta});
      steps->push_back({A::eltwise_clip, 0.f, 1.f});
      return true;
    case ActivationKind::kHardSwish:
      steps->push_back({A::eltwise_hardswish});
      return true;
    case ActivationKind::kElu:
      steps->push_back({A::eltwise_elu, a.alpha});
      return true;
    case ActivationKind::kGelu:
      steps->push_back({A::eltwise_gelu_erf});
      return true;
    case ActivationKind::kGeluTanh:
      steps->push_back({A::eltwise_gelu_tanh});
      return true;
    case ActivationKind::kSoftplus:
      steps->push_back({A::eltwise_soft_relu});
      return true;
    case ActivationKind::kMish:
      steps->push_back({A::eltwise_mish});
      return true;
    default:
      return false;
  }
}

}  // namespace

bool ActivationSupported(const NodeView& node) {
  std::vector<Eltwise> steps;
  StatusOr<Activation> a = ParseFusedActivation(node);
  return a.ok() && ActivationSteps(a.value(), &steps);
}

Status AppendActivation(const NodeView& node, dnnl::post_ops& ops) {
  std::vector<Eltwise> steps;
  ONYX_ASSIGN_OR_RETURN(const Activation a, ParseFusedActivation(node));
  if (!ActivationSteps(a, &steps))
    return node.NotSupported("activation '", ActivationName(a.kind), "' has no oneDNN post-op");
  for (const Eltwise& e : steps) ops.append_eltwise(1.f, e.alg, e.alpha, e.beta);
  return Status::Ok();
}

}  // namespace onyx::kernels::x86
