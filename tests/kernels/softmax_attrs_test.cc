// Softmax's axis rule (kernels/ops/softmax_attrs.h) against hand-worked views: opset < 13 coerces
// X to 2-D at the axis, 13 on takes the single axis; negative axes count from the end; an axis out
// of range is an error naming the node.
#include "kernels/ops/softmax_attrs.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/kernels/kernel_harness.h"

namespace onyx::testing {
namespace {

ir::Node SoftmaxNode(int64_t opset, bool with_axis, int64_t axis = 0) {
  ir::Node n;
  n.name = "sm";
  n.op_type = "Softmax";
  n.opset = opset;
  if (with_axis) n.attributes.push_back(IntAttr("axis", axis));
  return n;
}

struct ViewCase {
  int64_t opset;
  bool with_axis;
  int64_t axis;
  int64_t outer, n, inner;
};

TEST(SoftmaxAttrs, ViewsOfA2x3x4x5Tensor) {
  const Shape shape = {2, 3, 4, 5};
  const std::vector<ViewCase> cases = {
      {11, false, 0, 2, 60, 1},  // default axis 1, coerced: [2, 3*4*5]
      {11, true, 2, 6, 20, 1},   // [2*3, 4*5]
      {11, true, -1, 24, 5, 1},  // axis 3
      {11, true, 4, 120, 1, 1},  // axis == rank: the old spec's [-r, r]
      {13, false, 0, 24, 5, 1},  // default axis -1
      {13, true, 1, 2, 3, 20},   // the single axis 1
      {13, true, -3, 2, 3, 20}, {13, true, 0, 1, 2, 60},
  };
  for (const ViewCase& c : cases) {
    const ir::Node node = SoftmaxNode(c.opset, c.with_axis, c.axis);
    const auto a = kernels::ParseSoftmax(kernels::NodeView(node), 4);
    ASSERT_TRUE(a.ok()) << a.status().message();
    const kernels::SoftmaxView v = a.value().ViewOf(shape);
    EXPECT_EQ(v.outer, c.outer) << "opset " << c.opset << " axis " << c.axis;
    EXPECT_EQ(v.n, c.n) << "opset " << c.opset << " axis " << c.axis;
    EXPECT_EQ(v.inner, c.inner) << "opset " << c.opset << " axis " << c.axis;
  }
}

TEST(SoftmaxAttrs, AxisOutOfRangeNamesTheNode) {
  for (auto [opset, axis] : {std::pair<int64_t, int64_t>{11, 5}, {11, -5}, {13, 4}, {13, -5}}) {
    const ir::Node node = SoftmaxNode(opset, true, axis);
    const auto a = kernels::ParseSoftmax(kernels::NodeView(node), 4);
    ASSERT_FALSE(a.ok()) << "opset " << opset << " axis " << axis;
    EXPECT_NE(a.status().message().find("'sm'"), std::string::npos) << a.status().message();
    EXPECT_NE(a.status().message().find("axis " + std::to_string(axis)), std::string::npos)
        << a.status().message();
  }
  // Rank 0: one element, nothing to check.
  const ir::Node node = SoftmaxNode(13, true, 7);
  const auto a = kernels::ParseSoftmax(kernels::NodeView(node), 0);
  ASSERT_TRUE(a.ok());
  const kernels::SoftmaxView v = a.value().ViewOf({});
  EXPECT_EQ(v.outer * v.n * v.inner, 1);
}

}  // namespace
}  // namespace onyx::testing
