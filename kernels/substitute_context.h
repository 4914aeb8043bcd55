// SubstituteContext: runs a kernel on a node's inputs with input 0 replaced, keeping the tensor
// the kernel writes as output 0 on the heap. For reference kernels that convert around another
// reference kernel: a channels-last op around its channels-first one (NhwcQLinearConv), a
// quantized op around its float one (QLinearAveragePool).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kernels/kernel.h"

namespace onyx::kernels {

class SubstituteContext : public KernelContext {
 public:
  // The node's other inputs, subgraphs and thread count come from `outer`; without it the
  // kernel sees input 0 alone and runs on one thread.
  SubstituteContext(const NodeView& node, Value x, KernelContext* outer = nullptr)
      : node_(node), x_(std::move(x)), outer_(outer) {}

  const NodeView& node() const override { return node_; }
  int num_inputs() const override { return outer_ ? outer_->num_inputs() : 1; }
  bool has_input(int i) const override { return i == 0 || (outer_ && outer_->has_input(i)); }
  const Value& input_value(int i) const override {
    static const Value kNone;
    if (i == 0) return x_;
    return outer_ ? outer_->input_value(i) : kNone;
  }
  int num_outputs() const override { return 1; }
  bool has_output(int i) const override { return i == 0; }
  Tensor Output(int i, DType dtype, const Shape& shape) override {
    Tensor t = Tensor::AllocateUninitialized(dtype, shape);
    if (i == 0) y_ = t;
    return t;
  }
  void SetOutput(int i, Value value) override {
    if (i == 0 && value.is_tensor()) y_ = value.tensor();
  }
  StatusOr<std::vector<Value>> RunSubgraph(const std::string& attr,
                                           const std::vector<Value>& inputs) override {
    if (outer_) return outer_->RunSubgraph(attr, inputs);
    return node_.NotSupported("graph attribute '", attr, "' cannot run inside ", node_.op_type());
  }
  int intra_op_threads() const override { return outer_ ? outer_->intra_op_threads() : 1; }
  Status CheckCancelled() const override {
    return outer_ ? outer_->CheckCancelled() : Status::Ok();
  }

  // What the kernel wrote as output 0.
  const Tensor& output() const { return y_; }

 private:
  const NodeView& node_;
  Value x_;
  KernelContext* outer_;
  Tensor y_;
};

}  // namespace onyx::kernels
