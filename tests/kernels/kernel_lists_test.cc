// The kernel lists (kernels/kernel_lists.cc): one ordered list per operator in front of each
// definition's reference kernel, entries serving only the opsets they name, a second list or a
// list for an unknown operator reported as a registration error; and the order the NhwcConv
// list promises, checked against the names written out here.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/common/fast_kernel.h"
#include "kernels/op_registry.h"

namespace onyx::testing {
namespace {

using kernels::KernelEntry;
using kernels::KernelImpl;
using kernels::OpDef;
using kernels::OpRegistry;

Status Reference(kernels::KernelContext&) {
  return Status::Ok();
}

KernelImpl Named(const std::string& name) {
  KernelImpl impl;
  impl.name = name;
  return impl;
}

std::vector<std::string> Names(const OpDef* def) {
  std::vector<std::string> out;
  for (const KernelImpl& impl : def->impls) out.push_back(impl.name);
  return out;
}

TEST(KernelLists, EntriesGoInOrderBeforeTheReferenceOfTheOpsetsTheyServe) {
  OpRegistry r;
  r.Add("", "Op", 1, 6, nullptr, Reference, "Op_ref_1");
  r.Add("", "Op", 7, kernels::kLatestOpset, nullptr, Reference, "Op_ref_7");
  // The second entry serves opset 7 on only; the third reads the definition it is made for.
  r.SetKernels(
      "", "Op",
      {Named("first"), KernelEntry([](const OpDef&) { return Named("from7"); }, 7),
       KernelEntry([](const OpDef& def) { return Named("for" + def.impls.back().name); })});
  EXPECT_TRUE(r.registration_errors().empty());
  EXPECT_EQ(Names(r.Find("", "Op", 3)),
            (std::vector<std::string>{"first", "forOp_ref_1", "Op_ref_1"}));
  EXPECT_EQ(Names(r.Find("", "Op", 9)),
            (std::vector<std::string>{"first", "from7", "forOp_ref_7", "Op_ref_7"}));
}

TEST(KernelLists, ASecondListOrAnUnknownOperatorIsARegistrationError) {
  OpRegistry r;
  r.Add("", "Op", 1, kernels::kLatestOpset, nullptr, Reference);
  r.SetKernels("", "Op", {Named("a")});
  r.SetKernels("", "Op", {Named("b")});
  r.SetKernels("com.onyx", "Missing", {Named("c")});
  ASSERT_EQ(r.registration_errors().size(), 2u);
  EXPECT_NE(r.registration_errors()[0].find("ai.onnx Op: set twice"), std::string::npos);
  EXPECT_NE(r.registration_errors()[1].find("com.onyx Missing: the operator is not registered"),
            std::string::npos);
  // The first list stands.
  EXPECT_EQ(Names(r.Find("", "Op", 1)), (std::vector<std::string>{"a", "Op_ref"}));
}

TEST(KernelLists, WithFallbackCreatesTheDefinitionsReferenceBesideTheFastKernel) {
  OpRegistry r;
  r.Add("", "Op", 1, kernels::kLatestOpset, nullptr, Reference, "Op_ref");
  bool got_fallback = false;
  r.SetKernels("", "Op",
               {kernels::common::WithFallback(
                   "Op_fast", kernels::KernelIsa{}, nullptr,
                   [&got_fallback](const kernels::NodeView&, const std::vector<TypeInfo>&,
                                   std::unique_ptr<kernels::Kernel> fallback)
                       -> StatusOr<std::unique_ptr<kernels::Kernel>> {
                     got_fallback = fallback != nullptr;
                     return std::move(fallback);
                   })});
  const OpDef* def = r.Find("", "Op", 1);
  ASSERT_EQ(Names(def), (std::vector<std::string>{"Op_fast", "Op_ref"}));
  ir::Node node;
  node.op_type = "Op";
  node.opset = 1;
  kernels::NodeView view(node);
  ASSERT_TRUE(def->impls[0].create_with_info(view, {}, kernels::KernelCreateInfo{}).ok());
  EXPECT_TRUE(got_fallback);
}

// (The process registry has no registration errors: Global() stops start-up on any.)
TEST(KernelLists, TheProcessRegistryKeepsTheConvolutionOrder) {
  const OpRegistry& r = OpRegistry::Global();
  // Few output positions first, then the block-sparse 1x1 and Winograd 3x3 kernels (each
  // faster than oneDNN where they accept a node), oneDNN (x86), depthwise, the reference last.
  std::vector<std::string> nhwc = {"NhwcConv_f32_small_hwy", "NhwcConv_f32_sparse",
                                   "NhwcConv_f32_hwy"};
#if defined(__x86_64__) || defined(_M_X64)
  nhwc.push_back("NhwcConv_f32_onednn");
#endif
  nhwc.push_back("NhwcConv_f32_dw_hwy");
  nhwc.push_back("NhwcConv_ref");
  const OpDef* def = r.Find("com.onyx", "NhwcConv", 1);
  ASSERT_NE(def, nullptr);
  std::vector<std::string> got = Names(def);
  // Other architectures' kernels (XNNPACK on Arm) may sit between; the named ones keep this order.
  std::vector<std::string> seen;
  for (const std::string& n : got)
    if (std::find(nhwc.begin(), nhwc.end(), n) != nhwc.end()) seen.push_back(n);
  EXPECT_EQ(seen, nhwc);
  EXPECT_EQ(got.back(), "NhwcConv_ref");
}

}  // namespace
}  // namespace onyx::testing
