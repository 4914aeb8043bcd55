// The nine light models shipped in the onnx package run and match their shipped outputs, on the
// ONNX test runner's input (arange(n)/n as float32, symbolic dims = 1).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "engine/tensor_proto.h"
#include "onyx/session.h"

namespace onyx {
namespace {

class light_models : public ::testing::TestWithParam<std::string> {};

TEST_P(light_models, MatchesShippedOutput) {
  const std::string base = std::string(ONYX_TEST_DATA) + "/light/light_" + GetParam();
  auto s = Session::Create(base + ".onnx", SessionOptions{2, OptimizationLevel::kAll});
  ASSERT_TRUE(s.ok()) << s.status().message();
  NamedValues feeds;
  const auto required = s->required_inputs();
  for (const IoInfo& in : s->inputs()) {
    if (std::find(required.begin(), required.end(), in.name) == required.end()) continue;
    Shape shape;
    for (const Dim& d : in.type.dims) shape.push_back(d.known() ? d.value : 1);
    Tensor x = Tensor::Allocate(DType::kFloat, shape);
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i)
      x.data<float>()[i] = static_cast<float>(static_cast<double>(i) / n);
    feeds.push_back({in.name, Value(x)});
  }
  NamedValues out;
  Status st = s->Run(feeds, {}, &out);
  ASSERT_TRUE(st.ok()) << st.message();
  auto expected = engine::ReadValueFile(base + "_output_0.pb", TypeInfo());
  ASSERT_TRUE(expected.ok()) << expected.status().message();
  const Tensor& e = expected->tensor();
  const Tensor& a = out[0].second.tensor();
  ASSERT_EQ(a.shape(), e.shape());
  int64_t bad = 0;
  for (int64_t i = 0; i < e.numel(); ++i) {
    const float x = a.data<float>()[i], y = e.data<float>()[i];
    if (!(std::fabs(x - y) <= 1e-5 + 1e-3 * std::fabs(y))) ++bad;
  }
  EXPECT_EQ(bad, 0) << "elements outside rtol 1e-3 / atol 1e-5";
}

INSTANTIATE_TEST_SUITE_P(all, light_models,
                         ::testing::Values("bvlc_alexnet", "densenet121", "inception_v1",
                                           "inception_v2", "resnet50", "shufflenet", "squeezenet",
                                           "vgg19", "zfnet512"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace onyx
