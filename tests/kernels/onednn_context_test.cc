// The per-thread oneDNN objects of kernels/x86/onednn_context: one memory object per key and
// thread, repointed on every call; keys that never repeat; and execution from an ExecArgs.
#include "kernels/x86/onednn_context.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <vector>

namespace onyx::kernels::x86 {
namespace {

TEST(onednn_context, MemoryKeysNeverRepeat) {
  std::set<uint64_t> seen;
  for (int k = 0; k < 100; ++k) {
    MemoryKeys keys;
    for (int arg = 0; arg < MemoryKeys::kPerKernel; ++arg)
      EXPECT_TRUE(seen.insert(keys[arg]).second);
  }
}

TEST(onednn_context, ThreadMemoryIsOneObjectPerKeyAndThread) {
  MemoryKeys a, b;
  const dnnl::memory::desc md = PlainDesc({4});
  std::vector<float> x(4), y(4);
  dnnl::memory first = ThreadMemory(a[0], md, x.data());
  dnnl::memory again = ThreadMemory(a[0], md, y.data());
  EXPECT_EQ(first.get(), again.get());
  EXPECT_EQ(again.get_data_handle(), y.data());
  EXPECT_NE(ThreadMemory(a[1], md, x.data()).get(), first.get());
  EXPECT_NE(ThreadMemory(b[0], md, x.data()).get(), first.get());
  dnnl_memory_t other = nullptr;
  std::thread([&] { other = ThreadMemory(a[0], md, x.data()).get(); }).join();
  EXPECT_NE(other, first.get());
}

TEST(onednn_context, HandlesOutliveTheTable) {
  const dnnl::memory::desc md = PlainDesc({4});
  std::vector<float> x(4);
  MemoryKeys keys;
  dnnl::memory held = ThreadMemory(keys[0], md, x.data());
  std::vector<MemoryKeys> many(400);  // 6400 keys: the table is cleared on the way
  for (const MemoryKeys& k : many)
    for (int arg = 0; arg < MemoryKeys::kPerKernel; ++arg) ThreadMemory(k[arg], md, x.data());
  EXPECT_EQ(held.get_data_handle(), x.data());
  EXPECT_EQ(held.get_desc(), md);
}

// ReLU through Execute, against values computed by hand.
TEST(onednn_context, ExecuteRunsWithItsArguments) {
  const dnnl::memory::desc md = PlainDesc({6});
  const dnnl::eltwise_forward relu(dnnl::eltwise_forward::primitive_desc(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::eltwise_relu,
                                  md, 0.f),
      CpuEngine()));
  std::vector<float> x = {-2.f, -0.5f, 0.f, 0.25f, 3.f, -1e-3f}, y(6, 7.f);
  MemoryKeys keys;
  Execute(relu, ThreadStream(),
          {{DNNL_ARG_SRC, ThreadMemory(keys[0], md, x.data())},
           {DNNL_ARG_DST, ThreadMemory(keys[1], md, y.data())}});
  ThreadStream().wait();
  EXPECT_EQ(y, (std::vector<float>{0.f, 0.f, 0.f, 0.25f, 3.f, 0.f}));
}

TEST(onednn_context, ExecArgsRefusesMoreThanItHolds) {
  const dnnl::memory::desc md = PlainDesc({1});
  float v = 0.f;
  ExecArgs args({});
  for (int i = 0; i < ExecArgs::kMax; ++i)
    args.Add(DNNL_ARG_SRC, dnnl::memory(md, CpuEngine(), &v));
  EXPECT_EQ(args.size(), ExecArgs::kMax);
  EXPECT_THROW(args.Add(DNNL_ARG_SRC, dnnl::memory(md, CpuEngine(), &v)), dnnl::error);
}

}  // namespace
}  // namespace onyx::kernels::x86
