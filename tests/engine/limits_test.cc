// Limits and checked sizes (issue 19, DESIGN contract 8): hostile dims in models, feeds and
// value files give clear errors before any allocation, within a second and in bounded memory;
// SessionOptions::limits ceilings name the node and value that exceed them.
#include "onyx/limits.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "engine/model_loader.h"
#include "engine/tensor_proto.h"
#include "memory/aligned_alloc.h"
#include "onyx/session.h"
#include "onyx/tensor.h"
#include "tests/engine/model_builder.h"

namespace onyx {
namespace {

using testing::ModelBuilder;

constexpr int64_t k2p62 = int64_t{1} << 62;

// Fails the test when the enclosing scope takes a second or more.
class WithinASecond {
 public:
  WithinASecond() : start_(std::chrono::steady_clock::now()) {}
  ~WithinASecond() {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start_)
                        .count();
    EXPECT_LT(ms, 1000) << "a hostile case took " << ms << " ms";
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// Peak resident set size of this process in KiB (VmHWM), after resetting the peak to the
// current RSS when the kernel allows it (writing 5 to clear_refs, Linux 4.0+), so that a peak
// left by an earlier test does not hide this one's.
int64_t ResetAndReadPeakKiB(bool reset) {
  if (reset) {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
  }
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::strtoll(line.c_str() + 6, nullptr, 10);
  return -1;
}

StatusOr<Session> Create(const std::string& bytes, SessionOptions options = {}) {
  return Session::CreateFromBytes(bytes, options);
}

// A graph output of element type `elem` with no declared shape.
void OutputAnyShape(ModelBuilder& b, const std::string& name, int32_t elem) {
  auto* o = b.graph().add_output();
  o->set_name(name);
  o->mutable_type()->mutable_tensor_type()->set_elem_type(elem);
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// ---- (f) the checked helpers, by hand ----

TEST(Limits, CheckedMulAndAdd) {
  int64_t r = 0;
  EXPECT_TRUE(CheckedMul(3, 5, &r));
  EXPECT_EQ(r, 15);
  EXPECT_TRUE(CheckedMul(int64_t{1} << 31, int64_t{1} << 31, &r));
  EXPECT_EQ(r, int64_t{1} << 62);
  EXPECT_FALSE(CheckedMul(k2p62, 2, &r));  // 2^63 does not fit int64
  EXPECT_FALSE(CheckedMul(k2p62, 4, &r));  // wraps to 0 unchecked
  EXPECT_FALSE(CheckedMul(-1, 2, &r));
  EXPECT_TRUE(CheckedMul(0, INT64_MAX, &r));
  EXPECT_EQ(r, 0);
  EXPECT_TRUE(CheckedAdd(INT64_MAX - 1, 1, &r));
  EXPECT_EQ(r, INT64_MAX);
  EXPECT_FALSE(CheckedAdd(INT64_MAX, 1, &r));
  EXPECT_FALSE(CheckedAdd(-5, 1, &r));
}

TEST(Limits, CheckedElementCountAndByteSize) {
  int64_t n = -7;
  EXPECT_TRUE(CheckedElementCount({}, &n));
  EXPECT_EQ(n, 1);
  EXPECT_TRUE(CheckedElementCount({2, 3, 4}, &n));
  EXPECT_EQ(n, 24);
  EXPECT_FALSE(CheckedElementCount({k2p62, 4}, &n));
  EXPECT_TRUE(CheckedElementCount({k2p62, 4, 0}, &n));  // a zero dim: no elements at all
  EXPECT_EQ(n, 0);
  EXPECT_FALSE(CheckedElementCount({2, -1}, &n));
  EXPECT_FALSE(CheckedElementCount({-2, -3}, &n));  // negative even though the product is 6

  uint64_t bytes = 0;
  EXPECT_TRUE(CheckedByteSize(DType::kDouble, 3, &bytes));
  EXPECT_EQ(bytes, 24u);
  EXPECT_TRUE(CheckedByteSize(DType::kFloat, int64_t{1} << 61, &bytes));
  EXPECT_EQ(bytes, uint64_t{1} << 63);
  EXPECT_FALSE(CheckedByteSize(DType::kFloat, k2p62, &bytes));  // 2^64
  EXPECT_FALSE(CheckedByteSize(DType::kFloat, -1, &bytes));
  EXPECT_TRUE(CheckedByteSize(DType::kString, 10, &bytes));
  EXPECT_EQ(bytes, 10 * sizeof(std::string));

  // The unchecked forms saturate instead of wrapping to a small number.
  EXPECT_EQ(ShapeElementCount({k2p62, 4}), INT64_MAX);
  const Tensor huge = Tensor::Borrow(DType::kFloat, {k2p62, 4}, nullptr);
  EXPECT_EQ(huge.nbytes(), SIZE_MAX);
  EXPECT_EQ(Tensor::Borrow(DType::kFloat, {k2p62 / 8}, nullptr).nbytes(), size_t{1} << 61);
}

// Sets an environment variable for the scope of a test, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_)
      ::setenv(name_, old_.c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

TEST(Limits, ResolveLimitsReadsTheEnvironment) {
  const uint64_t memory = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                          static_cast<uint64_t>(::sysconf(_SC_PAGE_SIZE));
  {
    ScopedEnv e("ONYX_MAX_TENSOR_BYTES", "64M");
    EXPECT_EQ(ResolveLimits().max_tensor_bytes, 67108864u);
    Limits asked;
    asked.max_tensor_bytes = 1000;  // an explicit value beats the environment
    EXPECT_EQ(ResolveLimits(asked).max_tensor_bytes, 1000u);
  }
  {
    ScopedEnv e("ONYX_MAX_ARENA_BYTES", "2G");
    EXPECT_EQ(ResolveLimits().max_arena_bytes, uint64_t{2} << 30);
  }
  {
    ScopedEnv e("ONYX_MAX_TENSOR_BYTES", "12");
    EXPECT_EQ(ResolveLimits().max_tensor_bytes, 12u);
  }
  for (const char* garbage : {"lots", "64Q", "-5", "0", "99999999999999999999T"}) {
    ScopedEnv e("ONYX_MAX_TENSOR_BYTES", garbage);
    EXPECT_EQ(ResolveLimits().max_tensor_bytes, memory) << garbage;
  }
}

TEST(Limits, AllocationObeysTheThreadCeiling) {
  {
    memory::TensorByteCeilingScope ceiling(4000);
    EXPECT_EQ(Tensor::Allocate(DType::kFloat, {1000}).nbytes(), 4000u);
    try {
      Tensor::Allocate(DType::kFloat, {1001});
      FAIL() << "allocated past the ceiling";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kLimit);
      EXPECT_TRUE(Contains(e.what(), "4004 bytes")) << e.what();
      EXPECT_TRUE(Contains(e.what(), "ONYX_MAX_TENSOR_BYTES")) << e.what();
    }
  }
  EXPECT_EQ(memory::TensorByteCeiling(), 0u);
  EXPECT_EQ(Tensor::Allocate(DType::kFloat, {1001}).nbytes(), 4004u);
  // Overflowing dims never reach the allocator, ceiling or not.
  EXPECT_THROW(Tensor::Allocate(DType::kFloat, {k2p62, 4}), Error);
}

// ---- (a) hostile declarations in models ----

TEST(Limits, InputDeclaredWithOverflowingDims) {
  WithinASecond t;
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {k2p62, 4});
  b.Output("y", onnx::TensorProto::FLOAT, {k2p62, 4});
  b.Node("Relu", {"x"}, {"y"}, "relu");
  auto s = Create(b.Bytes());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ErrorCode::kLimit);
  EXPECT_TRUE(Contains(s.status().message(), "graph input 'x'")) << s.status().message();
  EXPECT_TRUE(Contains(s.status().message(), "4611686018427387904")) << s.status().message();
}

// An initializer (or Constant value) declaring dims [2^62, 4] with the given data.
onnx::TensorProto HugeTensor(const std::string& name, const std::string& raw) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(k2p62);
  t.add_dims(4);
  if (!raw.empty()) t.set_raw_data(raw);
  return t;
}

TEST(Limits, InitializerWithOverflowingDims) {
  for (const std::string& raw : {std::string(), std::string(64, '\0')}) {
    WithinASecond t;
    ModelBuilder b;
    b.Input("x", onnx::TensorProto::FLOAT, {1});
    OutputAnyShape(b, "y", onnx::TensorProto::FLOAT);
    *b.graph().add_initializer() = HugeTensor("w", raw);
    b.Node("Add", {"x", "w"}, {"y"}, "add");
    auto s = Create(b.Bytes());
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), ErrorCode::kInvalidModel);
    EXPECT_TRUE(Contains(s.status().message(), "'w'")) << s.status().message();
    EXPECT_TRUE(Contains(s.status().message(), "does not fit 64 bits")) << s.status().message();
  }
}

TEST(Limits, ConstantWithOverflowingDims) {
  WithinASecond t;
  ModelBuilder b;
  OutputAnyShape(b, "y", onnx::TensorProto::FLOAT);
  auto& n = b.Node("Constant", {}, {"y"}, "c");
  auto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = HugeTensor("", "");
  auto s = Create(b.Bytes());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ErrorCode::kInvalidModel);
  EXPECT_TRUE(Contains(s.status().message(), "does not fit 64 bits")) << s.status().message();
}

// ---- (b) the 17-byte input file and caller-made feeds ----

std::string SymbolicReluModel() {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {-1, 4});
  b.Output("y", onnx::TensorProto::FLOAT, {-1, 4});
  b.Node("Relu", {"x"}, {"y"}, "relu");
  return b.Bytes();
}

TEST(Limits, TinyValueFileDeclaringHugeDims) {
  WithinASecond t;
  const std::string bytes = HugeTensor("", "").SerializeAsString();
  EXPECT_LE(bytes.size(), 17u);  // dims (2 varints) and data_type: the report's 17-byte file
  const std::string path = testing::MakeTempDir() + "/x.pb";
  std::ofstream(path, std::ios::binary) << bytes;
  auto s = Session::CreateFromBytes(SymbolicReluModel());
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto v = engine::ReadValueFile(path, s->inputs()[0].type);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), ErrorCode::kInvalidModel);
  EXPECT_TRUE(Contains(v.status().message(), "[4611686018427387904,4]")) << v.status().message();

  // Huge but countable dims with no data: refused for the missing data, nothing allocated.
  onnx::TensorProto quarter_gig;
  quarter_gig.set_data_type(onnx::TensorProto::FLOAT);
  quarter_gig.add_dims(int64_t{1} << 28);
  std::ofstream(path, std::ios::binary) << quarter_gig.SerializeAsString();
  v = engine::ReadValueFile(path, s->inputs()[0].type);
  ASSERT_FALSE(v.ok());
  EXPECT_TRUE(Contains(v.status().message(), "needs 268435456 values in float_data, found 0"))
      << v.status().message();
}

TEST(Limits, FeedWithOverflowingDims) {
  WithinASecond t;
  Session s = Session::FromBytes(SymbolicReluModel());
  float four[4] = {1, 2, 3, 4};
  NamedValues out;
  Status st = s.Run({{"x", Value(Tensor::Borrow(DType::kFloat, {k2p62, 4}, four))}}, {}, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kLimit);
  EXPECT_TRUE(Contains(st.message(), "input 'x'")) << st.message();
  // The session still runs a sane feed.
  ASSERT_TRUE(s.Run({{"x", Value(Tensor::Borrow(DType::kFloat, {1, 4}, four))}}, {}, &out).ok());
  EXPECT_EQ(out[0].second.tensor().data<float>()[3], 4.f);
}

// ---- (c) declarations of gigabytes in a few bytes: bounded memory ----

TEST(Limits, GigabyteDeclarationsWithoutDataStayInBoundedMemory) {
  onnx::TensorProto float_decl;  // 2 GiB of floats
  float_decl.set_name("w");
  float_decl.set_data_type(onnx::TensorProto::FLOAT);
  float_decl.add_dims(int64_t{1} << 29);
  onnx::TensorProto string_decl;  // 10^8 strings: ~3.2 GB of std::string before any data
  string_decl.set_name("s");
  string_decl.set_data_type(onnx::TensorProto::STRING);
  string_decl.add_dims(100'000'000);
  onnx::TensorProto float_short = float_decl;  // raw_data shorter than declared
  float_short.set_raw_data(std::string(16, '\0'));

  const int64_t before = ResetAndReadPeakKiB(true);
  ASSERT_GT(before, 0);
  for (const onnx::TensorProto* decl : {&float_decl, &string_decl, &float_short}) {
    WithinASecond t;
    ModelBuilder b;
    b.Input("x", onnx::TensorProto::FLOAT, {1});
    b.Output("y", onnx::TensorProto::FLOAT, {1});
    *b.graph().add_initializer() = *decl;
    b.Node("Relu", {"x"}, {"y"}, "relu");
    const std::string bytes = b.Bytes();
    EXPECT_LT(bytes.size(), 120u);  // the report's 55-byte class, with our input and node
    auto s = Create(bytes);
    ASSERT_FALSE(s.ok()) << decl->name();
    // kLimit when the loader's ceiling (physical memory by default) is below the declaration.
    EXPECT_TRUE(s.status().code() == ErrorCode::kInvalidModel ||
                s.status().code() == ErrorCode::kLimit)
        << s.status().message();
    EXPECT_TRUE(Contains(s.status().message(), "initializer '" + decl->name() + "'"))
        << s.status().message();
    EXPECT_TRUE(Contains(s.status().message(), "found") || Contains(s.status().message(), "limit"))
        << s.status().message();
  }
  const int64_t after = ResetAndReadPeakKiB(false);
  std::printf("peak RSS before %lld KiB, after %lld KiB\n", static_cast<long long>(before),
              static_cast<long long>(after));
  EXPECT_LT(after - before, 200 * 1024)
      << "peak RSS grew from " << before << " KiB to " << after << " KiB";
}

TEST(Limits, LoaderRefusesATensorOverItsCeiling) {
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(4);
  t.set_raw_data(std::string(16, '\0'));
  engine::ExternalDataContext ctx;
  ctx.max_tensor_bytes = 15;
  auto r = engine::TensorFromProto(t, ctx);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kLimit);
  EXPECT_TRUE(Contains(r.status().message(), "needs 16 bytes, more than the limit of 15"))
      << r.status().message();
  ctx.max_tensor_bytes = 16;
  ASSERT_TRUE(engine::TensorFromProto(t, ctx).ok());
}

TEST(Limits, ExternalDeclarationsAreCheckedBeforeAnyAllocation) {
  // Found by fuzz_tensor_proto: 2e10 int4 elements (20 GB unpacked) and 2e15 strings, both
  // "external" in a proto with no model directory, were allocated before the location was read.
  onnx::TensorProto int4;
  int4.set_data_type(onnx::TensorProto::INT4);
  int4.add_dims(20'000'000'000);
  int4.set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = int4.add_external_data();
  kv->set_key("location");
  kv->set_value("weights.bin");
  onnx::TensorProto strings = int4;
  strings.set_data_type(onnx::TensorProto::STRING);
  strings.set_dims(0, 2'000'000'000'000'000);
  const int64_t before = ResetAndReadPeakKiB(true);
  for (const onnx::TensorProto* t : {&int4, &strings}) {
    WithinASecond timer;
    auto r = engine::TensorFromProto(*t, engine::ExternalDataContext{});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidModel) << r.status().message();
  }
  const int64_t after = ResetAndReadPeakKiB(false);
  EXPECT_LT(after - before, 200 * 1024)
      << "peak RSS grew from " << before << " KiB to " << after << " KiB";
}

TEST(Limits, BoolBytesOtherThanZeroAndOneReadAsTrue) {
  // Found by fuzz_run: a bool feed's raw byte 59 reached Xor as an invalid C++ bool (UBSan).
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::BOOL);
  t.add_dims(4);
  t.set_raw_data(std::string("\x00\x3b\x01\xff", 4));
  for (const bool take : {false, true}) {
    onnx::TensorProto copy = t;
    auto r = take ? engine::TakeTensorFromProto(&copy, engine::ExternalDataContext{})
                  : engine::TensorFromProto(copy, engine::ExternalDataContext{});
    ASSERT_TRUE(r.ok()) << r.status().message();
    const uint8_t* v = r->data<uint8_t>();
    EXPECT_EQ(v[0], 0);
    EXPECT_EQ(v[1], 1);
    EXPECT_EQ(v[2], 1);
    EXPECT_EQ(v[3], 1);
  }
}

// ---- (d) shape functions and kernels fed overflowing shapes ----

onnx::TensorProto Int64Init(const std::string& name, const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

TEST(Limits, ReshapeToOverflowingShape) {
  {  // the shape is a constant: refused when the session is created
    WithinASecond t;
    ModelBuilder b;
    b.Input("x", onnx::TensorProto::FLOAT, {2, 2});
    OutputAnyShape(b, "y", onnx::TensorProto::FLOAT);
    *b.graph().add_initializer() = Int64Init("shape", {k2p62, 4});
    b.Node("Reshape", {"x", "shape"}, {"y"}, "reshape");
    auto s = Create(b.Bytes());
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), ErrorCode::kLimit);
    EXPECT_TRUE(Contains(s.status().message(), "Reshape node 'reshape'")) << s.status().message();
  }
  {  // the shape is fed: refused when the kernel runs
    WithinASecond t;
    ModelBuilder b;
    b.Input("x", onnx::TensorProto::FLOAT, {2, 2});
    b.Input("shape", onnx::TensorProto::INT64, {2});
    OutputAnyShape(b, "y", onnx::TensorProto::FLOAT);
    b.Node("Reshape", {"x", "shape"}, {"y"}, "reshape");
    Session s = Session::FromBytes(b.Bytes());
    Tensor x = Tensor::Allocate(DType::kFloat, {2, 2});
    Tensor shape = Tensor::Allocate(DType::kInt64, {2});
    shape.data<int64_t>()[0] = k2p62;
    shape.data<int64_t>()[1] = 4;
    NamedValues out;
    Status st = s.Run({{"x", Value(x)}, {"shape", Value(shape)}}, {}, &out);
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(Contains(st.message(), "Reshape node 'reshape'")) << st.message();
    shape.data<int64_t>()[0] = 1;  // and a sane shape still works
    ASSERT_TRUE(s.Run({{"x", Value(x)}, {"shape", Value(shape)}}, {}, &out).ok());
    EXPECT_EQ(out[0].second.tensor().shape(), (Shape{1, 4}));
  }
}

// ConstantOfShape (shape from data) feeding Unsqueeze: the overflowing shape is stopped at the
// producer, at plan time when it is constant and at run time when it is fed.
TEST(Limits, UnsqueezeOfAnOverflowingShape) {
  {
    WithinASecond t;
    ModelBuilder b;
    OutputAnyShape(b, "y", onnx::TensorProto::FLOAT);
    *b.graph().add_initializer() = Int64Init("shape", {k2p62, 4});
    *b.graph().add_initializer() = Int64Init("axes", {0});
    b.Node("ConstantOfShape", {"shape"}, {"c"}, "cos");
    b.Node("Unsqueeze", {"c", "axes"}, {"y"}, "unsq");
    auto s = Create(b.Bytes());
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), ErrorCode::kLimit);
    EXPECT_TRUE(Contains(s.status().message(), "ConstantOfShape node 'cos'"))
        << s.status().message();
  }
  {
    WithinASecond t;
    ModelBuilder b;
    b.Input("shape", onnx::TensorProto::INT64, {2});
    OutputAnyShape(b, "y", onnx::TensorProto::FLOAT);
    *b.graph().add_initializer() = Int64Init("axes", {0});
    b.Node("ConstantOfShape", {"shape"}, {"c"}, "cos");
    b.Node("Unsqueeze", {"c", "axes"}, {"y"}, "unsq");
    Session s = Session::FromBytes(b.Bytes());
    Tensor shape = Tensor::Allocate(DType::kInt64, {2});
    shape.data<int64_t>()[0] = k2p62;
    shape.data<int64_t>()[1] = 4;
    NamedValues out;
    Status st = s.Run({{"shape", Value(shape)}}, {}, &out);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), ErrorCode::kLimit);
    EXPECT_TRUE(Contains(st.message(), "ConstantOfShape node 'cos'")) << st.message();
    shape.data<int64_t>()[0] = 2;
    ASSERT_TRUE(s.Run({{"shape", Value(shape)}}, {}, &out).ok());
    EXPECT_EQ(out[0].second.tensor().shape(), (Shape{1, 2, 4}));
  }
}

// ---- (e) the ceilings of SessionOptions::limits on an ordinary model ----

// x: float[1,1024] -> Concat(x,x,x,x) 'wide' [1,4096] (16 KiB) -> Relu -> ReduceSum -> y.
std::string WideModel(int64_t rows) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {rows, 1024});
  OutputAnyShape(b, "y", onnx::TensorProto::FLOAT);
  auto& c = b.Node("Concat", {"x", "x", "x", "x"}, {"wide"}, "concat");
  testing::SetIntAttr(c, "axis", 1);
  b.Node("Relu", {"wide"}, {"r"}, "relu");
  b.Node("ReduceSum", {"r"}, {"y"}, "sum");
  return b.Bytes();
}

TEST(Limits, TensorCeilingNamesTheNodeAndValue) {
  SessionOptions o;
  o.limits.max_tensor_bytes = 8192;  // x (4 KiB) fits, 'wide' (16 KiB) does not
  auto s = Create(WideModel(1), o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ErrorCode::kLimit);
  const std::string& m = s.status().message();
  EXPECT_TRUE(Contains(m, "Concat node 'concat'")) << m;
  EXPECT_TRUE(Contains(m, "output 0 'wide'")) << m;
  EXPECT_TRUE(Contains(m, "[1,4096]")) << m;
  EXPECT_TRUE(Contains(m, "16384 bytes")) << m;
  EXPECT_TRUE(Contains(m, "limit of 8192")) << m;
  EXPECT_TRUE(Contains(m, "SessionOptions::limits.max_tensor_bytes or ONYX_MAX_TENSOR_BYTES")) << m;
  o.limits.max_tensor_bytes = 16384;  // exactly enough
  auto ok = Create(WideModel(1), o);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  Tensor x = Tensor::Allocate(DType::kFloat, {1, 1024});
  for (int i = 0; i < 1024; ++i) x.data<float>()[i] = i % 2 ? 1.f : -1.f;
  auto out = ok->Run({{"x", Value(x)}});
  EXPECT_EQ(out[0].second.tensor().data<float>()[0], 4.f * 512);  // 4 copies of 512 ones
}

TEST(Limits, TensorCeilingAtRunTimeForDataDependentShapes) {
  ModelBuilder b;
  b.Input("shape", onnx::TensorProto::INT64, {2});
  OutputAnyShape(b, "y", onnx::TensorProto::FLOAT);
  b.Node("ConstantOfShape", {"shape"}, {"y"}, "cos");
  SessionOptions o;
  o.limits.max_tensor_bytes = 1 << 20;
  Session s = Session::FromBytes(b.Bytes(), o);
  Tensor shape = Tensor::Allocate(DType::kInt64, {2});
  shape.data<int64_t>()[0] = 1024;
  shape.data<int64_t>()[1] = 512;  // 2 MiB of floats
  NamedValues out;
  Status st = s.Run({{"shape", Value(shape)}}, {}, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kLimit);
  EXPECT_TRUE(Contains(st.message(), "ConstantOfShape node 'cos'")) << st.message();
  EXPECT_TRUE(Contains(st.message(), "output 0 'y'")) << st.message();
  EXPECT_TRUE(Contains(st.message(), "2097152 bytes")) << st.message();
  shape.data<int64_t>()[1] = 256;  // exactly 1 MiB
  ASSERT_TRUE(s.Run({{"shape", Value(shape)}}, {}, &out).ok());
  EXPECT_EQ(out[0].second.tensor().nbytes(), size_t{1} << 20);
}

TEST(Limits, ArenaCeilingNamesTheLimit) {
  SessionOptions o;
  o.limits.max_arena_bytes = 8192;  // 'wide' alone needs 16 KiB of arena
  auto s = Create(WideModel(1), o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ErrorCode::kLimit);
  const std::string& m = s.status().message();
  EXPECT_TRUE(Contains(m, "arena")) << m;
  EXPECT_TRUE(Contains(m, "limit of 8192")) << m;
  EXPECT_TRUE(Contains(m, "SessionOptions::limits.max_arena_bytes or ONYX_MAX_ARENA_BYTES")) << m;
  o.limits.max_arena_bytes = 1 << 20;
  EXPECT_TRUE(Create(WideModel(1), o).ok());
}

}  // namespace
}  // namespace onyx
