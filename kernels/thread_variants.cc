// Per-thread-count copies of a kernel that divides its work at creation, made on first use.
#include "kernels/thread_variants.h"

#include <atomic>
#include <mutex>
#include <optional>
#include <utility>

namespace onyx::kernels {
namespace {

class ThreadVariants : public Kernel {
 public:
  ThreadVariants(std::unique_ptr<Kernel> primary, const NodeView& node, std::vector<TypeInfo> types,
                 const KernelCreateInfo& info, CreateWithInfoFn create)
      : primary_(std::move(primary)),
        node_(node),
        types_(std::move(types)),
        info_(info),
        create_(std::move(create)) {
    // Hold the constants themselves: the plan may drop its copies of those the primary kernel
    // packed (PlanOptions::release_packed_constants). The buffers are shared, not copied, and
    // the weight cache holds the packed ones' sources alive anyway.
    for (const Tensor* c : info.constants)
      held_.emplace_back(c ? std::optional<Tensor>(*c) : std::nullopt);
    info_.constants.clear();
    for (const auto& c : held_) info_.constants.push_back(c ? &*c : nullptr);
    made_ = std::make_unique<std::atomic<const Kernel*>[]>(static_cast<size_t>(info.threads));
    for (int t = 0; t < info.threads; ++t) made_[t].store(nullptr, std::memory_order_relaxed);
  }

  Status Run(KernelContext& ctx) const override {
    const int threads = ctx.intra_op_threads();
    if (threads >= info_.threads || threads < 1) return primary_->Run(ctx);
    // Made once per count, then read without a lock: this runs for every step of such a run.
    const Kernel* k = made_[threads].load(std::memory_order_acquire);
    return (k ? *k : Make(threads)).Run(ctx);
  }
  std::string variant() const override { return primary_->variant(); }
  bool packed_input(size_t i) const override { return primary_->packed_input(i); }

 private:
  // The kernel for `threads`, made now unless another run made it meanwhile; the primary one
  // when a copy cannot be made (it then runs with the plan's team size, as before).
  const Kernel& Make(int threads) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (const Kernel* k = made_[threads].load(std::memory_order_relaxed)) return *k;
    KernelCreateInfo info = info_;
    info.threads = threads;
    auto made = create_(node_, types_, info);
    const Kernel* k = primary_.get();
    if (made.ok()) {
      variants_.push_back(std::move(made).value());
      k = variants_.back().get();
    }
    made_[threads].store(k, std::memory_order_release);
    return *k;
  }

  std::unique_ptr<Kernel> primary_;
  NodeView node_;
  std::vector<TypeInfo> types_;
  KernelCreateInfo info_;
  CreateWithInfoFn create_;
  std::vector<std::optional<Tensor>> held_;
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<Kernel>> variants_;       // owned copies
  mutable std::unique_ptr<std::atomic<const Kernel*>[]> made_;  // by count, below info_.threads
};

}  // namespace

CreateWithInfoFn WithThreadVariants(CreateWithInfoFn create) {
  return [create = std::move(create)](
             const NodeView& node, const std::vector<TypeInfo>& types,
             const KernelCreateInfo& info) -> StatusOr<std::unique_ptr<Kernel>> {
    auto k = create(node, types, info);
    if (!k.ok() || info.threads <= 1) return k;
    return std::unique_ptr<Kernel>(
        std::make_unique<ThreadVariants>(std::move(k).value(), node, types, info, create));
  };
}

}  // namespace onyx::kernels
