// Large initializers left in the model file by the loader (engine/weights_in_file.h): the values
// must be the file's bytes, everything that is not the plain form must load as before, and bad
// files must fail with the errors they gave before.
#include "engine/weights_in_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <random>

#include "onyx/session.h"
#include "tests/engine/model_builder.h"

namespace onyx {
namespace {

using testing::MakeTempDir;
using testing::ModelBuilder;

onnx::TensorProto& RawInit(ModelBuilder& b, const std::string& name, int32_t type,
                           const std::vector<int64_t>& dims, const std::string& raw) {
  auto* t = b.graph().add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(raw);
  return *t;
}

template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// A model whose outputs are Identity of: a 24 KB float weight, a 16-byte one, 20,000 bools
// written as 0 and 2 (the loader stores any non-zero as 1), a 24 KB int64 weight.
struct Weights {
  std::vector<float> big, small;
  std::vector<uint8_t> flags;
  std::vector<int64_t> ints;
};

ModelBuilder WeightsModel(const Weights& w) {
  ModelBuilder b;
  RawInit(b, "big", onnx::TensorProto::FLOAT, {96, 64}, Bytes(w.big));
  RawInit(b, "small", onnx::TensorProto::FLOAT, {4}, Bytes(w.small));
  RawInit(b, "flags", onnx::TensorProto::BOOL, {20000}, Bytes(w.flags));
  RawInit(b, "ints", onnx::TensorProto::INT64, {3, 1000}, Bytes(w.ints));
  const char* names[] = {"big", "small", "flags", "ints"};
  const int32_t types[] = {onnx::TensorProto::FLOAT, onnx::TensorProto::FLOAT,
                           onnx::TensorProto::BOOL, onnx::TensorProto::INT64};
  const std::vector<int64_t> shapes[] = {{96, 64}, {4}, {20000}, {3, 1000}};
  for (int i = 0; i < 4; ++i) {
    b.Output(std::string(names[i]) + "_out", types[i], shapes[i]);
    b.Node("Identity", {names[i]}, {std::string(names[i]) + "_out"});
  }
  return b;
}

Weights RandomWeights() {
  Weights w;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  for (int i = 0; i < 96 * 64; ++i) w.big.push_back(u(rng));
  w.small = {0.5f, -1.f, 1e30f, -0.f};
  for (int i = 0; i < 20000; ++i) w.flags.push_back(static_cast<uint8_t>(rng() % 3 == 0 ? 2 : 0));
  for (int i = 0; i < 3000; ++i) w.ints.push_back(static_cast<int64_t>(rng()) - (1ll << 31));
  return w;
}

// The loader's walk of the file at `path` (it must walk), and the ModelProto protobuf parses
// from it.
void Walk(const std::string& path, std::string* walked, onnx::ModelProto* mp) {
  auto file = memory::RegularFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().message();
  bool plain = false;
  ASSERT_TRUE(
      engine::ReadModelLeavingWeights(*file, engine::kLeaveInFileMinBytes, walked, &plain).ok());
  ASSERT_TRUE(plain);
  ASSERT_TRUE(mp->ParseFromString(*walked));
}

TEST(WeightsInFile, LargeInitializersAreReadFromTheFile) {
  const Weights w = RandomWeights();
  const std::string path = MakeTempDir() + "/model.onnx";
  ModelBuilder b = WeightsModel(w);
  b.Save(path);

  // What the loader parses: the three large tensors point into the file, the small one keeps
  // its bytes, and the parsed part is a fraction of the file.
  std::string stripped;
  onnx::ModelProto mp;
  ASSERT_NO_FATAL_FAILURE(Walk(path, &stripped, &mp));
  EXPECT_LT(stripped.size(), 2000u);
  std::ifstream in(path, std::ios::binary);
  const std::string whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const auto& t : mp.graph().initializer()) {
    if (t.name() == "small") {
      EXPECT_EQ(t.raw_data(), Bytes(w.small));
      EXPECT_EQ(t.data_location(), onnx::TensorProto::DEFAULT);
      continue;
    }
    EXPECT_EQ(t.data_location(), onnx::TensorProto::EXTERNAL) << t.name();
    EXPECT_FALSE(t.has_raw_data()) << t.name();
    std::map<std::string, std::string> kv;
    for (const auto& e : t.external_data()) kv[e.key()] = e.value();
    ASSERT_EQ(kv.count(engine::kInModelFileKey), 1u) << t.name();
    const size_t offset = std::stoull(kv["offset"]), length = std::stoull(kv["length"]);
    const std::string expected = t.name() == "big"     ? Bytes(w.big)
                                 : t.name() == "flags" ? Bytes(w.flags)
                                                       : Bytes(w.ints);
    EXPECT_EQ(whole.substr(offset, length), expected) << t.name();
  }

  // And a session holds the file's values.
  auto s = Session::Create(path);
  ASSERT_TRUE(s.ok()) << s.status().message();
  NamedValues out;
  ASSERT_TRUE(s->Run({}, {}, &out).ok());
  ASSERT_EQ(out.size(), 4u);
  const Tensor& big = out[0].second.tensor();
  ASSERT_EQ(big.shape(), (Shape{96, 64}));
  EXPECT_EQ(std::memcmp(big.raw_data(), w.big.data(), big.nbytes()), 0);
  const float* small = out[1].second.tensor().data<float>();
  EXPECT_EQ(small[2], 1e30f);
  const uint8_t* flags = out[2].second.tensor().data<uint8_t>();
  for (int i = 0; i < 20000; ++i) ASSERT_EQ(flags[i], w.flags[i] ? 1 : 0) << i;
  const Tensor& ints = out[3].second.tensor();
  EXPECT_EQ(std::memcmp(ints.raw_data(), w.ints.data(), ints.nbytes()), 0);
}

// A Constant node's value (some exporters hold weights there) is left in the file too.
TEST(WeightsInFile, ConstantValuesAreReadFromTheFile) {
  const Weights w = RandomWeights();
  ModelBuilder b;
  onnx::NodeProto& n = b.Node("Constant", {}, {"y"});
  auto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_dims(96);
  a->mutable_t()->add_dims(64);
  a->mutable_t()->set_raw_data(Bytes(w.big));
  b.Output("y", onnx::TensorProto::FLOAT, {96, 64});
  const std::string path = MakeTempDir() + "/constant.onnx";
  b.Save(path);

  std::string walked;
  onnx::ModelProto mp;
  ASSERT_NO_FATAL_FAILURE(Walk(path, &walked, &mp));
  const onnx::TensorProto& t = mp.graph().node(0).attribute(0).t();
  EXPECT_EQ(t.data_location(), onnx::TensorProto::EXTERNAL);
  EXPECT_FALSE(t.has_raw_data());

  auto s = Session::Create(path);
  ASSERT_TRUE(s.ok()) << s.status().message();
  NamedValues out;
  ASSERT_TRUE(s->Run({}, {}, &out).ok());
  const Tensor& y = out[0].second.tensor();
  ASSERT_EQ(y.shape(), (Shape{96, 64}));
  EXPECT_EQ(std::memcmp(y.raw_data(), w.big.data(), y.nbytes()), 0);
}

// raw_data one element short of its dims stays in the parsed model, so the error is the one a
// model given as bytes gets.
TEST(WeightsInFile, MismatchedRawDataGivesTheUsualError) {
  ModelBuilder b;
  RawInit(b, "big", onnx::TensorProto::FLOAT, {96, 64},
          Bytes(std::vector<float>(96 * 64 - 1, 1.f)));
  b.Output("y", onnx::TensorProto::FLOAT, {96, 64});
  b.Node("Identity", {"big"}, {"y"});
  const std::string path = MakeTempDir() + "/short.onnx";
  b.Save(path);
  auto from_file = Session::Create(path);
  auto from_bytes = Session::CreateFromBytes(b.Bytes());
  ASSERT_FALSE(from_file.ok());
  ASSERT_FALSE(from_bytes.ok());
  for (const Status& s : {from_file.status(), from_bytes.status()}) {
    EXPECT_NE(s.message().find("'big'"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("needs 24576 bytes of data, found 24572"), std::string::npos)
        << s.message();
  }
}

// Cut inside a weight, the wire format no longer walks: the file is read whole and protobuf says
// so. Cut after the weights (inside a later node), likewise.
TEST(WeightsInFile, TruncatedFilesFailAsBefore) {
  const Weights w = RandomWeights();
  ModelBuilder b = WeightsModel(w);
  const std::string bytes = b.Bytes(), dir = MakeTempDir();
  for (size_t cut : {bytes.size() / 3, bytes.size() / 2, bytes.size() - 3}) {
    const std::string path = dir + "/cut" + std::to_string(cut) + ".onnx";
    std::ofstream(path, std::ios::binary) << bytes.substr(0, cut);
    auto s = Session::Create(path);
    ASSERT_FALSE(s.ok()) << cut;
    EXPECT_NE(s.status().message().find("protobuf parsing failed"), std::string::npos)
        << s.status().message();
  }
}

// The marker is the loader's own: a model that writes it, given as bytes, has no file to read
// from and fails like any external data without a location.
TEST(WeightsInFile, TheMarkerReadsNothingOutsideTheLoader) {
  ModelBuilder b;
  auto* t = b.graph().add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(4);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  for (auto [k, v] : {std::pair<const char*, const char*>{engine::kInModelFileKey, "1"},
                      {"offset", "0"},
                      {"length", "16"}}) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  }
  b.Output("y", onnx::TensorProto::FLOAT, {4});
  b.Node("Identity", {"w"}, {"y"});
  auto s = Session::CreateFromBytes(b.Bytes());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("'w'"), std::string::npos) << s.status().message();
}

}  // namespace
}  // namespace onyx
