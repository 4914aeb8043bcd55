// The cache of freed tensor buffers (memory/buffer_cache.h): what it hands back for sizes that
// repeat, grow and shrink. Sizes here are megabytes no other test of this process allocates, so
// the process-wide cache holds nothing else near them.
#include "memory/buffer_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace onyx {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(BufferCache, AFreedBufferServesTheSameSizeAgain) {
  const size_t bytes = kMiB + 4321;
  void* first = nullptr;
  {
    auto buffer = memory::CachedBuffer(bytes);
    first = buffer.get();
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
    std::memset(first, 1, bytes);  // all of it is usable
  }
  auto again = memory::CachedBuffer(bytes);
  EXPECT_EQ(again.get(), first);
}

TEST(BufferCache, ANewBufferServesSizesGrowingByHalf) {
  // A sweep over lengths asks for a little more on every call: the buffer made for the first
  // size takes the next ones up to half as much again, with no new allocation.
  const size_t bytes = 3 * kMiB + 12345;
  void* first = nullptr;
  {
    auto buffer = memory::CachedBuffer(bytes);
    first = buffer.get();
  }
  {
    auto grown = memory::CachedBuffer(bytes + bytes / 5);
    EXPECT_EQ(grown.get(), first);
    std::memset(grown.get(), 2, bytes + bytes / 5);
  }
  auto grown_more = memory::CachedBuffer(bytes + 2 * bytes / 5);
  EXPECT_EQ(grown_more.get(), first);
}

TEST(BufferCache, ASmallRequestDoesNotTakeAFarLargerBuffer) {
  const size_t bytes = 12 * kMiB + 999;
  void* large = nullptr;
  {
    auto buffer = memory::CachedBuffer(bytes);
    large = buffer.get();
  }
  // More than twice smaller than the free buffer: a buffer of its own.
  auto small = memory::CachedBuffer(bytes / 3);
  EXPECT_NE(small.get(), large);
  auto same = memory::CachedBuffer(bytes);
  EXPECT_EQ(same.get(), large);
}

}  // namespace
}  // namespace onyx
