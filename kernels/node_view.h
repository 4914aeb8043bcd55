// NodeView: typed access to a node's attributes whose errors already name the node and attribute.
#pragma once

#include <string>
#include <vector>

#include "kernels/ir/graph.h"
#include "onyx/status.h"

namespace onyx::kernels {

class NodeView {
 public:
  explicit NodeView(const ir::Node& node) : node_(&node) {}

  const ir::Node& node() const { return *node_; }
  const std::string& op_type() const { return node_->op_type; }
  const std::string& domain() const { return node_->domain; }
  const std::string& name() const { return node_->name; }
  int64_t opset() const { return node_->opset; }

  bool has_attr(const std::string& name) const { return node_->attr(name) != nullptr; }
  // Getters with a default return it when the attribute is absent; a present attribute of the
  // wrong type is an error reported by the Checked variants (and by the planner's validation).
  int64_t attr_int(const std::string& name, int64_t def) const;
  float attr_float(const std::string& name, float def) const;
  std::string attr_string(const std::string& name, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> def = {}) const;
  std::vector<float> attr_floats(const std::string& name, std::vector<float> def = {}) const;
  std::vector<std::string> attr_strings(const std::string& name,
                                        std::vector<std::string> def = {}) const;
  const Tensor* attr_tensor(const std::string& name) const;
  const ir::Graph* attr_graph(const std::string& name) const;

  // Required attributes: an error naming node and attribute when missing or mistyped.
  StatusOr<int64_t> RequiredInt(const std::string& name) const;
  StatusOr<float> RequiredFloat(const std::string& name) const;
  StatusOr<std::string> RequiredString(const std::string& name) const;
  StatusOr<std::vector<int64_t>> RequiredInts(const std::string& name) const;

  // "Conv node 'c1' (#3): " + message.
  template <typename... Args>
  Status Error(ErrorCode code, const Args&... args) const {
    return Status(code, StrCat(node_->Describe(), ": ", args...));
  }
  template <typename... Args>
  Status Invalid(const Args&... args) const {
    return Error(ErrorCode::kInvalidModel, args...);
  }
  template <typename... Args>
  Status Fail(const Args&... args) const {  // a run-time failure on these values
    return Error(ErrorCode::kRuntime, args...);
  }
  template <typename... Args>
  Status NotSupported(const Args&... args) const {
    return Error(ErrorCode::kUnsupported, args...);
  }

 private:
  const ir::Node* node_;
};

}  // namespace onyx::kernels
