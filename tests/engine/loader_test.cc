// Loader tests: every initializer encoding, external data and its confinement to the model
// directory, IR < 4 input defaults, and each validation error with a message naming the culprit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <random>

#include "engine/model_loader.h"
#include "onyx/session.h"
#include "tests/engine/model_builder.h"

namespace onyx {
namespace {

using testing::MakeTempDir;
using testing::ModelBuilder;

// Runs a model whose single output is Identity(initializer "w") and returns that output.
Value RunIdentityOn(ModelBuilder& b) {
  b.Node("Identity", {"w"}, {"y"}, "id");
  auto s = Session::CreateFromBytes(b.Bytes());
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s.ok()) return Value();
  NamedValues out;
  Status st = s->Run({}, {}, &out);
  EXPECT_TRUE(st.ok()) << st.message();
  return out.empty() ? Value() : out[0].second;
}

ModelBuilder OneOutput(int32_t elem, const std::vector<int64_t>& shape) {
  ModelBuilder b;
  b.Output("y", elem, shape);
  return b;
}

TEST(loader, RawDataFloat) {
  ModelBuilder b = OneOutput(onnx::TensorProto::FLOAT, {2, 2});
  b.FloatInit("w", {2, 2}, {1.5f, -2.0f, 3.25f, 0.0f});
  Value v = RunIdentityOn(b);
  ASSERT_TRUE(v.is_tensor());
  EXPECT_EQ(v.tensor().shape(), (Shape{2, 2}));
  const float* p = v.tensor().data<float>();
  EXPECT_EQ(p[0], 1.5f);
  EXPECT_EQ(p[1], -2.0f);
  EXPECT_EQ(p[2], 3.25f);
}

TEST(loader, TypedFieldsEveryStorage) {
  {
    ModelBuilder b = OneOutput(onnx::TensorProto::FLOAT, {3});
    auto* t = b.graph().add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(3);
    for (float f : {1.f, 2.f, 3.f}) t->add_float_data(f);
    Value v = RunIdentityOn(b);
    ASSERT_TRUE(v.is_tensor());
    EXPECT_EQ(v.tensor().data<float>()[2], 3.f);
  }
  {
    ModelBuilder b = OneOutput(onnx::TensorProto::INT64, {2});
    auto* t = b.graph().add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(2);
    t->add_int64_data(-7);
    t->add_int64_data(int64_t{1} << 40);
    Value v = RunIdentityOn(b);
    ASSERT_TRUE(v.is_tensor());
    EXPECT_EQ(v.tensor().data<int64_t>()[0], -7);
    EXPECT_EQ(v.tensor().data<int64_t>()[1], int64_t{1} << 40);
  }
  {
    ModelBuilder b = OneOutput(onnx::TensorProto::DOUBLE, {1});
    auto* t = b.graph().add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::DOUBLE);
    t->add_dims(1);
    t->add_double_data(0.1);
    Value v = RunIdentityOn(b);
    ASSERT_TRUE(v.is_tensor());
    EXPECT_EQ(v.tensor().data<double>()[0], 0.1);
  }
  {
    ModelBuilder b = OneOutput(onnx::TensorProto::UINT32, {1});
    auto* t = b.graph().add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::UINT32);
    t->add_dims(1);
    t->add_uint64_data(4000000000u);
    Value v = RunIdentityOn(b);
    ASSERT_TRUE(v.is_tensor());
    EXPECT_EQ(v.tensor().data<uint32_t>()[0], 4000000000u);
  }
  {
    ModelBuilder b = OneOutput(onnx::TensorProto::BOOL, {3});
    auto* t = b.graph().add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::BOOL);
    t->add_dims(3);
    for (int x : {1, 0, 1}) t->add_int32_data(x);
    Value v = RunIdentityOn(b);
    ASSERT_TRUE(v.is_tensor());
    EXPECT_EQ(v.tensor().data<uint8_t>()[0], 1);
    EXPECT_EQ(v.tensor().data<uint8_t>()[1], 0);
  }
}

TEST(loader, Float16AndBFloat16PackedInInt32Data) {
  // 0x3C00 = 1.0 in half, 0xC000 = -2.0; bfloat16 0x3FC0 = 1.5.
  {
    ModelBuilder b = OneOutput(onnx::TensorProto::FLOAT16, {2});
    auto* t = b.graph().add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::FLOAT16);
    t->add_dims(2);
    t->add_int32_data(0x3C00);
    t->add_int32_data(0xC000);
    Value v = RunIdentityOn(b);
    ASSERT_TRUE(v.is_tensor());
    EXPECT_EQ(HalfToFloat(v.tensor().data<uint16_t>()[0]), 1.0f);
    EXPECT_EQ(HalfToFloat(v.tensor().data<uint16_t>()[1]), -2.0f);
  }
  {
    ModelBuilder b = OneOutput(onnx::TensorProto::BFLOAT16, {1});
    auto* t = b.graph().add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::BFLOAT16);
    t->add_dims(1);
    t->add_int32_data(0x3FC0);
    Value v = RunIdentityOn(b);
    ASSERT_TRUE(v.is_tensor());
    EXPECT_EQ(BFloat16ToFloat(v.tensor().data<uint16_t>()[0]), 1.5f);
  }
}

TEST(loader, StringsAndInt4) {
  {
    ModelBuilder b = OneOutput(onnx::TensorProto::STRING, {2});
    auto* t = b.graph().add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::STRING);
    t->add_dims(2);
    t->add_string_data("hello");
    t->add_string_data("");
    Value v = RunIdentityOn(b);
    ASSERT_TRUE(v.is_tensor());
    EXPECT_EQ(v.tensor().strings()[0], "hello");
    EXPECT_EQ(v.tensor().strings()[1], "");
  }
  {
    // int4 values {-1, 7, -8} packed low nibble first: 0x7F, 0x08.
    ModelBuilder b = OneOutput(onnx::TensorProto::INT4, {3});
    auto* t = b.graph().add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::INT4);
    t->add_dims(3);
    t->set_raw_data(std::string("\x7F\x08", 2));
    Value v = RunIdentityOn(b);
    ASSERT_TRUE(v.is_tensor());
    EXPECT_EQ(v.tensor().data<int8_t>()[0], -1);
    EXPECT_EQ(v.tensor().data<int8_t>()[1], 7);
    EXPECT_EQ(v.tensor().data<int8_t>()[2], -8);
  }
}

TEST(loader, SparseInitializerIsDensified) {
  ModelBuilder b = OneOutput(onnx::TensorProto::FLOAT, {2, 3});
  auto* sp = b.graph().add_sparse_initializer();
  sp->add_dims(2);
  sp->add_dims(3);
  auto* vals = sp->mutable_values();
  vals->set_name("w");
  vals->set_data_type(onnx::TensorProto::FLOAT);
  vals->add_dims(2);
  vals->add_float_data(5.f);
  vals->add_float_data(-1.f);
  auto* idx = sp->mutable_indices();
  idx->set_data_type(onnx::TensorProto::INT64);
  idx->add_dims(2);
  idx->add_int64_data(1);
  idx->add_int64_data(5);
  Value v = RunIdentityOn(b);
  ASSERT_TRUE(v.is_tensor());
  const float* p = v.tensor().data<float>();
  EXPECT_EQ(p[0], 0.f);
  EXPECT_EQ(p[1], 5.f);
  EXPECT_EQ(p[5], -1.f);
}

// A float sparse initializer "sw" of shape `dims` read by Identity; `indices_dims` is [nnz] or
// [nnz, rank].
Status LoadSparse(const std::vector<int64_t>& dims, const std::vector<float>& values,
                  const std::vector<int64_t>& indices, const std::vector<int64_t>& indices_dims) {
  ModelBuilder b = OneOutput(onnx::TensorProto::FLOAT, dims);
  auto* sp = b.graph().add_sparse_initializer();
  for (int64_t d : dims) sp->add_dims(d);
  auto* v = sp->mutable_values();
  v->set_name("sw");
  v->set_data_type(onnx::TensorProto::FLOAT);
  v->add_dims(static_cast<int64_t>(values.size()));
  for (float f : values) v->add_float_data(f);
  auto* ix = sp->mutable_indices();
  ix->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : indices_dims) ix->add_dims(d);
  for (int64_t i : indices) ix->add_int64_data(i);
  b.Node("Identity", {"sw"}, {"y"});
  return Session::CreateFromBytes(b.Bytes()).status();
}

TEST(loader, BadSparseInitializersAreRejected) {
  ASSERT_TRUE(LoadSparse({2, 3}, {1, 2}, {0, 5}, {2}).ok());
  ASSERT_TRUE(LoadSparse({2, 3}, {1, 2}, {0, 0, 1, 2}, {2, 2}).ok());
  const struct {
    Status s;
    const char* want;
  } cases[] = {
      {LoadSparse({2, 3}, {1, 2}, {0, 6}, {2}), "index 6 of value 1 is out of range"},
      {LoadSparse({2, 3}, {1, 2}, {0, -1}, {2}), "index -1 of value 1 is out of range"},
      {LoadSparse({2, 3}, {1, 2}, {0, 0, 2, 0}, {2, 2}), "index 2 of value 1 in dim 0"},
      {LoadSparse({2, 3}, {1, 2}, {0, 0, 1, 3}, {2, 2}), "index 3 of value 1 in dim 1"},
      {LoadSparse({2, 3}, {1, 2}, {0, 1, 2}, {3}), "3 indices for 2 values"},
      {LoadSparse({2, 3}, {1, 2}, {0, 1, 2}, {1, 3}), "expected [2] or [2,2]"},
      {LoadSparse({2, 3}, {1, 2}, {4, 1}, {2}), "is below the previous one"},
      {LoadSparse({2, 3}, {1, 2}, {4, 4}, {2}), "repeats the previous one"},
      {LoadSparse({1, 2}, {1, 2, 3}, {0, 1, 1}, {3}), "3 values for shape [1,2]"},
      {LoadSparse({1 << 20, 1 << 20, 1 << 20}, {1}, {0}, {1}), "when densified"},
  };
  for (const auto& c : cases) {
    ASSERT_FALSE(c.s.ok()) << c.want;
    EXPECT_NE(c.s.message().find("sparse initializer 'sw'"), std::string::npos) << c.s.message();
    EXPECT_NE(c.s.message().find(c.want), std::string::npos) << c.s.message();
  }
}

TEST(loader, ElementCountMismatchNamesInitializer) {
  ModelBuilder b = OneOutput(onnx::TensorProto::FLOAT, {4});
  b.FloatInit("weights_q", {4}, {1.f, 2.f, 3.f});  // 12 bytes for 16
  b.Node("Identity", {"weights_q"}, {"y"});
  auto s = Session::CreateFromBytes(b.Bytes());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("weights_q"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("16 bytes"), std::string::npos) << s.status().message();
}

TEST(loader, UnknownDataTypeIsRejected) {
  ModelBuilder b = OneOutput(onnx::TensorProto::FLOAT, {1});
  auto* t = b.graph().add_initializer();
  t->set_name("odd");
  t->set_data_type(99);
  t->add_dims(1);
  b.Node("Identity", {"odd"}, {"y"});
  auto s = Session::CreateFromBytes(b.Bytes());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("odd"), std::string::npos);
  EXPECT_NE(s.status().message().find("unknown data type 99"), std::string::npos)
      << s.status().message();
}

// External data: a file beside the model, read at an offset.
struct ExternalModel {
  std::string dir, path;
};

ExternalModel WriteExternalModel(const std::string& location, int64_t offset, int64_t length) {
  ExternalModel m;
  m.dir = MakeTempDir();
  const float values[4] = {10.f, 20.f, 30.f, 40.f};
  {
    std::ofstream f(m.dir + "/weights.bin", std::ios::binary);
    const char pad[8] = {};
    f.write(pad, 8);  // data starts at offset 8
    f.write(reinterpret_cast<const char*>(values), sizeof values);
  }
  ModelBuilder b = OneOutput(onnx::TensorProto::FLOAT, {4});
  auto* t = b.graph().add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(4);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto kv = [&](const std::string& k, const std::string& v) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", location);
  kv("offset", std::to_string(offset));
  if (length >= 0) kv("length", std::to_string(length));
  b.Node("Identity", {"w"}, {"y"});
  m.path = m.dir + "/model.onnx";
  b.Save(m.path);
  return m;
}

TEST(loader, ExternalDataWithOffsetAndLength) {
  ExternalModel m = WriteExternalModel("weights.bin", 8, 16);
  auto s = Session::Create(m.path);
  ASSERT_TRUE(s.ok()) << s.status().message();
  NamedValues out;
  ASSERT_TRUE(s->Run({}, {}, &out).ok());
  const float* p = out[0].second.tensor().data<float>();
  EXPECT_EQ(p[0], 10.f);
  EXPECT_EQ(p[3], 40.f);
}

TEST(loader, ExternalDataPathEscapingTheModelDirIsRejected) {
  for (const std::string loc : {"../weights.bin", "/etc/passwd", "sub/../../x.bin"}) {
    ExternalModel m = WriteExternalModel(loc, 0, 16);
    auto s = Session::Create(m.path);
    ASSERT_FALSE(s.ok()) << loc;
    EXPECT_EQ(s.status().code(), ErrorCode::kInvalidModel) << s.status().message();
    EXPECT_NE(s.status().message().find("'w'"), std::string::npos) << s.status().message();
  }
  // A symlink inside the directory that points outside it is rejected too.
  ExternalModel m = WriteExternalModel("link.bin", 0, 16);
  ASSERT_EQ(symlink("/etc/hostname", (m.dir + "/link.bin").c_str()), 0);
  auto s = Session::Create(m.path);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("outside"), std::string::npos) << s.status().message();
}

TEST(loader, ExternalDataPastEndOfFileIsRejected) {
  ExternalModel m = WriteExternalModel("weights.bin", 16, 16);  // file has 24 bytes
  auto s = Session::Create(m.path);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("past the end"), std::string::npos) << s.status().message();
}

TEST(loader, InitializerThatIsAlsoAnInputIsAnOverridableDefault) {
  ModelBuilder b(7, 3);  // IR 3
  b.Input("w", onnx::TensorProto::FLOAT, {2});
  b.Output("y", onnx::TensorProto::FLOAT, {2});
  b.FloatInit("w", {2}, {1.f, 2.f});
  b.Node("Identity", {"w"}, {"y"});
  auto s = Session::CreateFromBytes(b.Bytes());
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->required_inputs().empty());
  NamedValues out;
  ASSERT_TRUE(s->Run({}, {}, &out).ok());
  EXPECT_EQ(out[0].second.tensor().data<float>()[1], 2.f);
  Tensor feed = Tensor::Allocate(DType::kFloat, {2});
  feed.data<float>()[1] = 9.f;
  ASSERT_TRUE(s->Run({{"w", Value(feed)}}, {}, &out).ok());
  EXPECT_EQ(out[0].second.tensor().data<float>()[1], 9.f);
}

TEST(loader, UndefinedInputNamesNodeAndValue) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2});
  b.Output("y", onnx::TensorProto::FLOAT, {2});
  b.Node("Add", {"x", "ghost"}, {"y"}, "adder");
  auto s = Session::CreateFromBytes(b.Bytes());
  ASSERT_FALSE(s.ok());
  const std::string& msg = s.status().message();
  EXPECT_NE(msg.find("Add node 'adder'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'ghost'"), std::string::npos) << msg;
}

TEST(loader, DuplicateProducerIsRejected) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2});
  b.Output("y", onnx::TensorProto::FLOAT, {2});
  b.Node("Relu", {"x"}, {"y"}, "first");
  b.Node("Abs", {"x"}, {"y"}, "second");
  auto s = Session::CreateFromBytes(b.Bytes());
  ASSERT_FALSE(s.ok());
  const std::string& msg = s.status().message();
  EXPECT_NE(msg.find("'second'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("already produced"), std::string::npos) << msg;
}

TEST(loader, CycleIsRejected) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2});
  b.Output("y", onnx::TensorProto::FLOAT, {2});
  b.Node("Add", {"x", "b"}, {"a"}, "n1");
  b.Node("Relu", {"a"}, {"b"}, "n2");
  b.Node("Identity", {"b"}, {"y"}, "n3");
  auto s = Session::CreateFromBytes(b.Bytes());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("cycle"), std::string::npos) << s.status().message();
}

TEST(loader, MissingOpsetImportForDomain) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2});
  b.Output("y", onnx::TensorProto::FLOAT, {2});
  auto& n = b.Node("Foo", {"x"}, {"y"}, "f");
  n.set_domain("com.example");
  auto s = Session::CreateFromBytes(b.Bytes());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("com.example"), std::string::npos) << s.status().message();
}

TEST(loader, UnsupportedOperatorReportedAtCreation) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2});
  b.Output("y", onnx::TensorProto::FLOAT, {2});
  b.Node("NoSuchOp", {"x"}, {"y"}, "mystery");
  auto s = Session::CreateFromBytes(b.Bytes());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(s.status().message().find("NoSuchOp node 'mystery'"), std::string::npos)
      << s.status().message();
  EXPECT_NE(s.status().message().find("opset 17"), std::string::npos) << s.status().message();
}

TEST(loader, MissingRequiredAttributeNamesIt) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2});
  b.Output("y", onnx::TensorProto::INT64, {2});
  b.Node("Cast", {"x"}, {"y"}, "caster");  // 'to' is required
  auto s = Session::CreateFromBytes(b.Bytes());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("caster"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("'to'"), std::string::npos) << s.status().message();
}

TEST(loader, EmptyTruncatedAndRandomBytes) {
  auto empty = Session::CreateFromBytes("");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("empty"), std::string::npos);

  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {2});
  b.Output("y", onnx::TensorProto::FLOAT, {2});
  b.FloatInit("w", {64}, std::vector<float>(64, 1.f));
  b.Node("Relu", {"x"}, {"y"});
  const std::string full = b.Bytes();
  for (size_t cut : {full.size() / 3, full.size() / 2, full.size() - 5}) {
    auto s = Session::CreateFromBytes(full.substr(0, cut));
    EXPECT_FALSE(s.ok()) << "cut at " << cut;
  }
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::string junk(1 + rng() % 512, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    auto s = Session::CreateFromBytes(junk);  // must not crash; usually an error
    if (s.ok()) {
      NamedValues out;
      (void)s->Run({}, {}, &out);
    }
  }
}

// Files are read into owned memory (large weights straight into their tensors,
// engine/weights_in_file.h): the values must still be the file's, and bad files must say what is
// wrong.
TEST(loader, ModelFilesEmptyTruncatedDirectoryAndValid) {
  const std::string dir = MakeTempDir();
  ModelBuilder b = OneOutput(onnx::TensorProto::FLOAT, {3});
  b.FloatInit("w", {3}, {0.5f, -7.25f, 1e30f});
  b.Node("Identity", {"w"}, {"y"}, "id");
  const std::string good = dir + "/good.onnx";
  b.Save(good);
  auto s = Session::Create(good);
  ASSERT_TRUE(s.ok()) << s.status().message();
  NamedValues out;
  ASSERT_TRUE(s->Run({}, {}, &out).ok());
  const float* p = out[0].second.tensor().data<float>();
  EXPECT_EQ(p[0], 0.5f);
  EXPECT_EQ(p[1], -7.25f);
  EXPECT_EQ(p[2], 1e30f);

  const std::string bytes = b.Bytes();
  const std::string empty = dir + "/empty.onnx", cut = dir + "/cut.onnx";
  std::ofstream(empty, std::ios::binary).flush();
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  auto e = Session::Create(empty);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("empty"), std::string::npos) << e.status().message();
  auto c = Session::Create(cut);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("protobuf parsing failed"), std::string::npos)
      << c.status().message();
  for (const std::string& missing : {dir, dir + "/absent.onnx"}) {
    auto m = Session::Create(missing);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), ErrorCode::kNotFound) << missing;
    EXPECT_NE(m.status().message().find("cannot open model file"), std::string::npos);
  }
}

TEST(loader, ModelLocalFunctionIsInlined) {
  ModelBuilder b(17, 8);
  auto* os = b.model().add_opset_import();
  os->set_domain("local");
  os->set_version(1);
  auto* fn = b.model().add_functions();
  fn->set_name("AddRelu");
  fn->set_domain("local");
  fn->add_input("a");
  fn->add_input("b");
  fn->add_output("c");
  auto* fos = fn->add_opset_import();
  fos->set_domain("");
  fos->set_version(17);
  auto* n1 = fn->add_node();
  n1->set_op_type("Add");
  n1->add_input("a");
  n1->add_input("b");
  n1->add_output("t");
  auto* n2 = fn->add_node();
  n2->set_op_type("Relu");
  n2->add_input("t");
  n2->add_output("c");
  b.Input("x", onnx::TensorProto::FLOAT, {3});
  b.Output("y", onnx::TensorProto::FLOAT, {3});
  b.FloatInit("k", {3}, {-5.f, 0.5f, 1.f});
  auto& call = b.Node("AddRelu", {"x", "k"}, {"y"}, "call");
  call.set_domain("local");
  auto s = Session::CreateFromBytes(b.Bytes());
  ASSERT_TRUE(s.ok()) << s.status().message();
  Tensor x = Tensor::Allocate(DType::kFloat, {3});
  x.data<float>()[0] = 1.f;
  x.data<float>()[1] = 1.f;
  x.data<float>()[2] = -3.f;
  auto out = s->Run({{"x", Value(x)}});
  const float* y = out[0].second.tensor().data<float>();
  EXPECT_EQ(y[0], 0.f);   // relu(1 - 5)
  EXPECT_EQ(y[1], 1.5f);  // relu(1 + 0.5)
  EXPECT_EQ(y[2], 0.f);   // relu(-3 + 1)
}

}  // namespace
}  // namespace onyx
