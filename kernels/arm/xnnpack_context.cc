// XNNPACK's shared state: initialisation, the thread pools, status messages.
#include "kernels/arm/xnnpack_context.h"

#include <pthreadpool.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/arm/xnnpack_kernels.h"
#include "kernels/weight_cache.h"

namespace onyx::kernels::arm {
namespace {

const char* XnnStatusName(xnn_status s) {
  switch (s) {
    case xnn_status_success:
      return "success";
    case xnn_status_uninitialized:
      return "uninitialized";
    case xnn_status_invalid_parameter:
      return "invalid parameter";
    case xnn_status_invalid_state:
      return "invalid state";
    case xnn_status_unsupported_parameter:
      return "unsupported parameter";
    case xnn_status_unsupported_hardware:
      return "unsupported hardware";
    case xnn_status_out_of_memory:
      return "out of memory";
  }
  return "unknown status";
}

}  // namespace

Status XnnpackReady(const NodeView& node) {
  static const xnn_status status = xnn_initialize(/*allocator=*/nullptr);
  if (status != xnn_status_success)
    return node.NotSupported("XNNPACK failed to initialise: ", XnnStatusName(status));
  return Status::Ok();
}

pthreadpool_t XnnpackPool(int threads) {
  if (threads <= 1) return nullptr;
  static std::mutex mu;
  // Kept to the end of the process (never destroyed): kernels of sessions alive at exit may
  // still hold it.
  static auto* pools = new std::map<int, pthreadpool_t>();
  std::lock_guard<std::mutex> lock(mu);
  pthreadpool_t& pool = (*pools)[threads];
  if (!pool) pool = pthreadpool_create(static_cast<size_t>(threads));
  return pool;  // null when creation failed: XNNPACK then runs on the caller's thread
}

IsaLevel XnnpackLevel() {
#if defined(__aarch64__)
  return IsaLevel::kNeon;
#else
  return IsaMin(MachineIsa(), IsaLevel::kAvx512);
#endif
}

KernelImpl XnnpackImpl(
    const std::string& name,
    std::function<Status(const NodeView&, const std::vector<TypeInfo>&)> supports,
    CreateWithInfoFn create) {
  KernelImpl impl;
  impl.name = name;
  impl.supports = std::move(supports);
  impl.create_with_info = std::move(create);
  impl.isa = KernelIsa{FirstSimdLevel(), &XnnpackLevel, "xnnpack"};
  return impl;
}

StatusOr<std::shared_ptr<const SharedOperator>> ShareOperator(
    const NodeView& node, const KernelCreateInfo& info, const Tensor& w, const std::string& key,
    const std::function<xnn_status(xnn_operator_t*)>& create, const char* what) {
  xnn_status status = xnn_status_success;
  const std::function<std::shared_ptr<const SharedOperator>()> make = [&] {
    xnn_operator_t op = nullptr;
    status = create(&op);
    auto shared = std::make_shared<SharedOperator>();
    shared->op.reset(op);
    return status == xnn_status_success ? std::shared_ptr<const SharedOperator>(shared) : nullptr;
  };
  // About what XNNPACK packs: the weights (padded to its tiles) and the bias.
  std::shared_ptr<const SharedOperator> op =
      info.weights ? info.weights->GetOrPack<SharedOperator>(w, "xnnpack:" + key, make, w.nbytes())
                   : make();
  if (!op) return FromXnnStatus(node, status, what, true);
  return op;
}

std::string ContentKey(const Tensor* t) {
  if (!t) return "none";
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the bytes
  const auto* p = static_cast<const unsigned char*>(t->raw_data());
  for (size_t i = 0; i < t->nbytes(); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return StrCat(t->nbytes(), ":", h);
}

Status FromXnnStatus(const NodeView& node, xnn_status s, const char* what, bool creating) {
  if (s == xnn_status_success) return Status::Ok();
  if (creating) return node.NotSupported("XNNPACK ", what, ": ", XnnStatusName(s));
  return node.Fail("XNNPACK ", what, ": ", XnnStatusName(s));
}

Status RunWithEpilogue(KernelContext& ctx, const SharedOperator& op, Tensor& y, const float* z,
                       const FusedActivation& act, bool epilogue,
                       const std::function<xnn_status(float* out, pthreadpool_t pool)>& setup,
                       const char* what) {
  const NodeView& node = ctx.node();
  const int64_t n = y.numel();
  float* yd = y.data<float>();
  std::vector<float> scratch;
  float* out = yd;
  if (z == yd) {
    scratch.resize(static_cast<size_t>(n));
    out = scratch.data();
  }
  const int threads = ctx.intra_op_threads();
  {
    std::lock_guard<std::mutex> lock(op.mu);
    pthreadpool_t pool = XnnpackPool(threads);
    ONYX_RETURN_IF_ERROR(
        FromXnnStatus(node, setup(out, pool), (std::string(what) + " setup").c_str(), false));
    ONYX_RETURN_IF_ERROR(FromXnnStatus(node, xnn_run_operator(op.op.get(), pool),
                                       (std::string(what) + " run").c_str(), false));
  }
  if (out != yd) {
    ApplyFusedActivation(act, yd, out, n, threads);  // act(Z + product): addition commutes
  } else if (z || epilogue) {
    ApplyFusedActivation(act, yd, z, n, threads);
  }
  return Status::Ok();
}

}  // namespace onyx::kernels::arm
