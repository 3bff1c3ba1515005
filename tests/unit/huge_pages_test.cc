#include "store/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace strata {
namespace {

struct alignas(64) Line {
  uint64_t words[8];
};

TEST(HugePagesTest, LargeBlocksAreHugePageAlignedAndUsable) {
  HugePageAllocator<uint32_t> alloc;
  const size_t n = kHugePageBytes / sizeof(uint32_t) + 3;  // not a multiple of 2 MiB
  uint32_t* p = alloc.allocate(n);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePageBytes, 0u);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint32_t>(i);
  EXPECT_EQ(p[n - 1], n - 1);
  alloc.deallocate(p, n);
}

TEST(HugePagesTest, SmallBlocksKeepTheTypesAlignment) {
  HugePageAllocator<Line> alloc;
  for (size_t n : {size_t{1}, size_t{3}, size_t{100}}) {
    Line* p = alloc.allocate(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignof(Line), 0u);
    p[n - 1].words[7] = 42;
    alloc.deallocate(p, n);
  }
}

TEST(HugePagesTest, VectorGrowsAcrossTheThreshold) {
  std::vector<Line, HugePageAllocator<Line>> v;
  const size_t n = 2 * kHugePageBytes / sizeof(Line);
  for (size_t i = 0; i < n; ++i) v.push_back(Line{{i, 0, 0, 0, 0, 0, 0, i}});
  for (size_t i = 0; i < n; i += 997) EXPECT_EQ(v[i].words[7], i);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % alignof(Line), 0u);
}

}  // namespace
}  // namespace strata
