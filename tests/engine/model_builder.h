// Builds small ONNX models in tests with the generated protobuf classes, so each loader and
// planner case is spelled out in C++ next to its assertion.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onnx/onnx-ml.pb.h"

namespace onyx::testing {

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17, int64_t ir_version = 8);

  onnx::ModelProto& model() { return model_; }
  onnx::GraphProto& graph() { return *model_.mutable_graph(); }

  // A graph input/output with element type and shape (-1 = symbolic "N").
  ModelBuilder& Input(const std::string& name, int32_t elem, const std::vector<int64_t>& shape);
  ModelBuilder& Output(const std::string& name, int32_t elem, const std::vector<int64_t>& shape);
  onnx::NodeProto& Node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "");
  // A float initializer stored as raw_data.
  onnx::TensorProto& FloatInit(const std::string& name, const std::vector<int64_t>& dims,
                               const std::vector<float>& values);
  // An int64 initializer stored as int64_data.
  onnx::TensorProto& Int64Init(const std::string& name, const std::vector<int64_t>& dims,
                               const std::vector<int64_t>& values);
  std::string Bytes() const { return model_.SerializeAsString(); }
  // Writes the model to `path`.
  void Save(const std::string& path) const;

 private:
  onnx::ModelProto model_;
};

void SetIntAttr(onnx::NodeProto& n, const std::string& name, int64_t v);
void SetIntsAttr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v);
// A fresh empty directory under the system temp dir.
std::string MakeTempDir();

}  // namespace onyx::testing
