// ConstantPool: constants the planner derives from the model's weights (fusion's folded
// convolution weights, merged biases) kept once per session, so that every shape specialisation
// shares one copy and kernels find their packed form by its address (kernels/weight_cache.h).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "onyx/tensor.h"

namespace onyx::planner {

class ConstantPool {
 public:
  // `t` itself, or an equal tensor (same dtype, shape and bytes) made earlier under `name` that
  // a plan still holds. Entries live while some plan holds them. Small and string tensors are
  // returned as they are: sharing them saves nothing.
  Tensor Intern(const std::string& name, Tensor t);

  // Live pooled bytes.
  size_t bytes() const;

 private:
  struct Entry {
    std::weak_ptr<Tensor> tensor;
    size_t bytes = 0;
  };
  mutable std::mutex mu_;
  mutable std::multimap<std::string, Entry> entries_;
};

}  // namespace onyx::planner
