// WeightCache: packed weights shared by every shape specialisation of a session. A kernel that
// reorders a constant input into its own layout asks the cache first, keyed by the constant's
// buffer and a description of the layout, so a new input shape never repacks (nor duplicates) a
// weight an earlier plan packed the same way (DESIGN contract 3).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "onyx/tensor.h"

namespace onyx::kernels {

class WeightCache {
 public:
  // What `pack` returns: the packed object and the bytes it holds.
  struct Packed {
    std::shared_ptr<const void> object;
    size_t bytes = 0;
  };

  // The packed form of `source` in `layout`, made by `pack` on a miss (outside the lock: two
  // plans may pack the same weight at once; the first one stored wins). An entry lives while a
  // kernel holds it, and it keeps `source` alive, so the buffer address cannot be reused by
  // another tensor while the entry can still be found.
  template <typename T>
  std::shared_ptr<const T> GetOrPack(const Tensor& source, const std::string& layout,
                                     const std::function<std::shared_ptr<const T>()>& pack,
                                     size_t bytes) {
    auto obj = Find(source, layout);
    if (!obj) {
      std::shared_ptr<const T> made = pack();
      if (!made) return nullptr;
      obj = Store(source, layout, made, bytes);
    }
    return std::static_pointer_cast<const T>(obj);
  }

  // Live packed bytes (entries some kernel still holds).
  size_t bytes() const;

 private:
  struct Entry {
    std::weak_ptr<const void> object;
    size_t bytes = 0;
  };
  using Key = std::pair<const void*, std::string>;
  std::shared_ptr<const void> Find(const Tensor& source, const std::string& layout);
  std::shared_ptr<const void> Store(const Tensor& source, const std::string& layout,
                                    std::shared_ptr<const void> object, size_t bytes);
  void DropExpiredLocked() const;

  mutable std::mutex mu_;
  mutable std::map<Key, Entry> entries_;
};

}  // namespace onyx::kernels
