// Per-thread-count copies of a oneDNN kernel, made on first use.
#include "kernels/thread_variants.h"

#include <map>
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
  }

  Status Run(KernelContext& ctx) const override {
    const int threads = ctx.intra_op_threads();
    if (threads >= info_.threads || threads < 1) return primary_->Run(ctx);
    return For(threads).Run(ctx);
  }
  std::string variant() const override { return primary_->variant(); }
  bool packed_input(size_t i) const override { return primary_->packed_input(i); }

 private:
  // The kernel for `threads`; the primary one when a copy cannot be made (it then runs with the
  // plan's team size, as before).
  const Kernel& For(int threads) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = variants_.find(threads);
    if (it == variants_.end()) {
      KernelCreateInfo info = info_;
      info.threads = threads;
      auto made = create_(node_, types_, info);
      it = variants_.emplace(threads, made.ok() ? std::move(made).value() : nullptr).first;
    }
    return it->second ? *it->second : *primary_;
  }

  std::unique_ptr<Kernel> primary_;
  NodeView node_;
  std::vector<TypeInfo> types_;
  KernelCreateInfo info_;
  CreateWithInfoFn create_;
  std::vector<std::optional<Tensor>> held_;
  mutable std::mutex mu_;
  mutable std::map<int, std::unique_ptr<Kernel>> variants_;
};

}  // namespace

std::unique_ptr<Kernel> WithThreadVariants(std::unique_ptr<Kernel> kernel, const NodeView& node,
                                           const std::vector<TypeInfo>& types,
                                           const KernelCreateInfo& info, CreateWithInfoFn create) {
  if (info.threads <= 1) return kernel;
  return std::make_unique<ThreadVariants>(std::move(kernel), node, types, info, std::move(create));
}

}  // namespace onyx::kernels
