// ConstantPool: weak entries by name, matched by dtype, shape and content.
#include "planner/constant_pool.h"

#include <cstring>

namespace onyx::planner {
namespace {

constexpr size_t kMinPooledBytes = 1024;

bool SameContent(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// A tensor sharing `keep`'s buffer whose holder is `keep` itself: the pool's weak pointer to
// `keep` expires exactly when no plan holds the returned tensor any more.
Tensor Handle(const std::shared_ptr<Tensor>& keep) {
  return Tensor::Wrap(keep->dtype(), keep->shape(), std::shared_ptr<void>(keep), keep->raw_data());
}

}  // namespace

Tensor ConstantPool::Intern(const std::string& name, Tensor t) {
  if (t.dtype() == DType::kString || t.nbytes() < kMinPooledBytes || !t.raw_data()) return t;
  std::lock_guard<std::mutex> lock(mu_);
  auto range = entries_.equal_range(name);
  for (auto it = range.first; it != range.second;) {
    std::shared_ptr<Tensor> live = it->second.tensor.lock();
    if (!live) {
      it = entries_.erase(it);
      continue;
    }
    if (SameContent(*live, t)) return Handle(live);
    ++it;
  }
  auto keep = std::make_shared<Tensor>(std::move(t));
  entries_.emplace(name, Entry{keep, keep->nbytes()});
  return Handle(keep);
}

size_t ConstantPool::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.tensor.expired()) {
      it = entries_.erase(it);
    } else {
      n += it->second.bytes;
      ++it;
    }
  }
  return n;
}

}  // namespace onyx::planner
