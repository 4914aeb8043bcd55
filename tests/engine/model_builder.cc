// Test model builder.
#include "tests/engine/model_builder.h"

#include <stdlib.h>

#include <cstring>
#include <fstream>

namespace onyx::testing {

ModelBuilder::ModelBuilder(int64_t opset, int64_t ir_version) {
  model_.set_ir_version(ir_version);
  model_.set_producer_name("onyx-tests");
  auto* os = model_.add_opset_import();
  os->set_domain("");
  os->set_version(opset);
  model_.mutable_graph()->set_name("test");
}

namespace {
void FillValueInfo(onnx::ValueInfoProto* vi, const std::string& name, int32_t elem,
                   const std::vector<int64_t>& shape) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* sh = tt->mutable_shape();
  for (int64_t d : shape) {
    auto* dim = sh->add_dim();
    if (d < 0)
      dim->set_dim_param("N");
    else
      dim->set_dim_value(d);
  }
}
}  // namespace

ModelBuilder& ModelBuilder::Input(const std::string& name, int32_t elem,
                                  const std::vector<int64_t>& shape) {
  FillValueInfo(graph().add_input(), name, elem, shape);
  return *this;
}

ModelBuilder& ModelBuilder::Output(const std::string& name, int32_t elem,
                                   const std::vector<int64_t>& shape) {
  FillValueInfo(graph().add_output(), name, elem, shape);
  return *this;
}

onnx::NodeProto& ModelBuilder::Node(const std::string& op, const std::vector<std::string>& inputs,
                                    const std::vector<std::string>& outputs,
                                    const std::string& name) {
  auto* n = graph().add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return *n;
}

onnx::TensorProto& ModelBuilder::FloatInit(const std::string& name,
                                           const std::vector<int64_t>& dims,
                                           const std::vector<float>& values) {
  auto* t = graph().add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(
      std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return *t;
}

onnx::TensorProto& ModelBuilder::Int64Init(const std::string& name,
                                           const std::vector<int64_t>& dims,
                                           const std::vector<int64_t>& values) {
  auto* t = graph().add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
  return *t;
}

void ModelBuilder::Save(const std::string& path) const {
  std::ofstream f(path, std::ios::binary);
  const std::string b = Bytes();
  f.write(b.data(), static_cast<std::streamsize>(b.size()));
}

void SetIntAttr(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void SetIntsAttr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

std::string MakeTempDir() {
  char tmpl[] = "/tmp/onyx_test_XXXXXX";
  char* d = mkdtemp(tmpl);
  return d ? std::string(d) : std::string("/tmp");
}

}  // namespace onyx::testing
