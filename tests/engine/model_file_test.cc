// Model metadata, re-saved model copies (inline and external initializers) and the model edits
// SessionOptions::edits applies at load (initializers, free dimensions, external data in memory).
#include "onyx/model_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <map>

#include "onyx/session.h"
#include "tests/engine/model_builder.h"

namespace onyx {
namespace {

using testing::ModelBuilder;

// y = Relu(x + b), x: float[N,16], b: [16] initializer (64 bytes) b[i] = i - 8.
ModelBuilder AddRelu() {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {-1, 16});
  b.Output("y", onnx::TensorProto::FLOAT, {-1, 16});
  std::vector<float> bias(16);
  for (int i = 0; i < 16; ++i) bias[i] = static_cast<float>(i) - 8.f;
  b.FloatInit("b", {16}, bias);
  b.Node("Add", {"x", "b"}, {"s"}, "add");
  b.Node("Relu", {"s"}, {"y"}, "relu");
  return b;
}

// Runs `session` on x = 1 (one row) and returns y.
std::vector<float> RunOnes(const Session& session) {
  Tensor x = Tensor::Allocate(DType::kFloat, {1, 16});
  for (int i = 0; i < 16; ++i) x.data<float>()[i] = 1.f;
  NamedValues out = session.Run({{"x", x}});
  const Tensor& y = out[0].second.tensor();
  return std::vector<float>(y.data<float>(), y.data<float>() + 16);
}

std::vector<float> Expected(float add) {
  std::vector<float> y(16);
  for (int i = 0; i < 16; ++i) y[i] = std::max(0.f, 1.f + static_cast<float>(i) - 8.f + add);
  return y;
}

TEST(ModelMetadata, ReadsModelAndGraphFields) {
  ModelBuilder b = AddRelu();
  b.model().set_producer_name("exporter");
  b.model().set_domain("ai.example");
  b.model().set_doc_string("a model");
  b.model().set_model_version(7);
  b.graph().set_name("main");
  b.graph().set_doc_string("the graph");
  auto* p = b.model().add_metadata_props();
  p->set_key("names");
  p->set_value("cat,dog");
  auto m = ReadModelMetadataFromBytes(b.Bytes());
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->producer_name, "exporter");
  EXPECT_EQ(m->domain, "ai.example");
  EXPECT_EQ(m->description, "a model");
  EXPECT_EQ(m->graph_name, "main");
  EXPECT_EQ(m->graph_description, "the graph");
  EXPECT_EQ(m->version, 7);
  ASSERT_EQ(m->custom_metadata.size(), 1u);
  EXPECT_EQ(m->custom_metadata[0], std::make_pair(std::string("names"), std::string("cat,dog")));
  // Unset model_version reads as INT64_MAX, as onnxruntime reports it.
  auto unset = ReadModelMetadataFromBytes(AddRelu().Bytes());
  ASSERT_TRUE(unset.ok());
  EXPECT_EQ(unset->version, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ReadModelMetadata("/nonexistent/m.onnx").status().code(), ErrorCode::kNotFound);
}

TEST(SaveModelCopy, ExternalInitializersReloadWithTheSameOutputs) {
  const std::string dir = testing::MakeTempDir();
  SaveModelOptions o;
  o.external_data_file = "w.bin";
  o.external_min_bytes = 32;
  ASSERT_TRUE(SaveModelCopy("", AddRelu().Bytes(), dir + "/m.onnx", o).ok());
  std::ifstream data(dir + "/w.bin", std::ios::binary | std::ios::ate);
  EXPECT_EQ(static_cast<int64_t>(data.tellg()), 64);  // b: 16 floats
  Session copy(dir + "/m.onnx");
  EXPECT_EQ(RunOnes(copy), Expected(0.f));
  // Saved again inline, elsewhere: the second copy no longer needs w.bin.
  ASSERT_TRUE(SaveModelCopy(dir + "/m.onnx", "", dir + "/inline.onnx", {}).ok());
  std::remove((dir + "/w.bin").c_str());
  EXPECT_EQ(RunOnes(Session(dir + "/inline.onnx")), Expected(0.f));
  EXPECT_EQ(SaveModelCopy("", AddRelu().Bytes(), "/nonexistent/dir/m.onnx", {}).code(),
            ErrorCode::kIo);
}

TEST(ModelEdits, InitializerReplacedAndFreeDimensionFixed) {
  SessionOptions options;
  Tensor b = Tensor::Allocate(DType::kFloat, {16});
  for (int i = 0; i < 16; ++i) b.data<float>()[i] = static_cast<float>(i) - 8.f + 2.f;
  options.edits.initializers.emplace_back("b", b);
  options.edits.dims_by_name["N"] = 1;
  Session s = Session::FromBytes(AddRelu().Bytes(), options);
  EXPECT_EQ(RunOnes(s), Expected(2.f));
  ASSERT_TRUE(s.inputs()[0].type.shape_is_static());
  EXPECT_EQ(s.inputs()[0].type.static_shape(), (Shape{1, 16}));
}

TEST(ModelEdits, BadEditsAreErrors) {
  SessionOptions unknown;
  unknown.edits.initializers.emplace_back("nope", Tensor::Allocate(DType::kFloat, {1}));
  auto s = Session::CreateFromBytes(AddRelu().Bytes(), unknown);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("no initializer or graph input of that name"),
            std::string::npos);
  // A fixed dimension that carries a denotation cannot be overridden to another size.
  SessionOptions conflict;
  conflict.edits.dims_by_denotation["DATA_BATCH"] = 2;
  ModelBuilder fixed;
  fixed.Input("x", onnx::TensorProto::FLOAT, {3});
  fixed.Output("y", onnx::TensorProto::FLOAT, {3});
  fixed.graph()
      .mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_denotation("DATA_BATCH");
  fixed.Node("Relu", {"x"}, {"y"});
  auto c = Session::CreateFromBytes(fixed.Bytes(), conflict);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("sets 2 for a dimension fixed at 3"), std::string::npos);
}

TEST(ModelEdits, ExternalDataFromMemory) {
  const std::string dir = testing::MakeTempDir();
  SaveModelOptions o;
  o.external_data_file = "w.bin";
  o.external_min_bytes = 1;
  ASSERT_TRUE(SaveModelCopy("", AddRelu().Bytes(), dir + "/m.onnx", o).ok());
  std::ifstream in(dir + "/w.bin", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove((dir + "/w.bin").c_str());
  EXPECT_EQ(Session::Create(dir + "/m.onnx").status().code(), ErrorCode::kNotFound);
  SessionOptions options;
  options.edits.external_files["w.bin"] = bytes;
  EXPECT_EQ(RunOnes(Session(dir + "/m.onnx", options)), Expected(0.f));
  SessionOptions short_file;
  const std::string half = bytes.substr(0, 10);
  short_file.edits.external_files["w.bin"] = half;
  auto s = Session::Create(dir + "/m.onnx", short_file);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("lies outside the 10 bytes"), std::string::npos);
}

TEST(OutputBuffers, GraphOutputWrittenInCallerMemoryWhenAligned) {
  Session s = Session::FromBytes(AddRelu().Bytes());
  Tensor x = Tensor::Allocate(DType::kFloat, {1, 16});
  for (int i = 0; i < 16; ++i) x.data<float>()[i] = 1.f;
  Tensor storage = Tensor::Allocate(DType::kFloat, {1, 17});  // 64-byte aligned
  for (bool aligned : {true, false}) {
    float* where = storage.data<float>() + (aligned ? 0 : 1);
    std::map<std::string, Tensor> buffers{{"y", Tensor::Borrow(DType::kFloat, {1, 16}, where)}};
    RunOptions options;
    options.output_buffers = &buffers;
    NamedValues out;
    ASSERT_TRUE(s.Run({{"x", x}}, options, &out).ok());
    const Tensor& y = out[0].second.tensor();
    EXPECT_EQ(y.raw_data() == where, aligned);
    EXPECT_EQ(std::vector<float>(y.data<float>(), y.data<float>() + 16), Expected(0.f));
    if (aligned) EXPECT_EQ(std::vector<float>(where, where + 16), Expected(0.f));
  }
}

}  // namespace
}  // namespace onyx
