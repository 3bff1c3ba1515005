#include "store/record/geometry.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace strata {
namespace {

std::vector<SizedAllocation> Synthetic() {
  return {
      {"state", AllocationGroup::kStateRows, 65536, 16, MemoryOwner::kLocal},
      {"v", AllocationGroup::kKvPages, 4096, 128, MemoryOwner::kLocal},
      {"k", AllocationGroup::kKvPages, 8192, 128, MemoryOwner::kLocal},
      {"sel", AllocationGroup::kKvPages, 512, 128, MemoryOwner::kLocal},
      {"peer.k", AllocationGroup::kKvPages, 8192, 128, MemoryOwner::kPeer},
  };
}

TEST(GeometryTest, BuildsFromSyntheticModel) {
  Result<RankGeometry> g = RankGeometryFromAllocations(Synthetic());
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->row, (PlaneSpec{"state", 65536}));
  EXPECT_EQ(g->row_count, 16u);
  EXPECT_EQ(g->page_count, 128u);
  ASSERT_EQ(g->page_planes.size(), 3u);  // the peer allocation is excluded
  EXPECT_EQ(g->page_planes[0].name, "k");
  EXPECT_EQ(g->page_planes[1].name, "sel");
  EXPECT_EQ(g->page_planes[2].name, "v");
  EXPECT_EQ(g->page_bytes(), 8192u + 512 + 4096);
}

TEST(GeometryTest, OrderOfAllocationsDoesNotMatter) {
  std::vector<SizedAllocation> a = Synthetic();
  std::vector<SizedAllocation> b(a.rbegin(), a.rend());
  EXPECT_EQ(*RankGeometryFromAllocations(a), *RankGeometryFromAllocations(b));
}

TEST(GeometryTest, RejectsBadAllocationLists) {
  struct Case {
    const char* what;
    std::function<void(std::vector<SizedAllocation>&)> edit;
    const char* expect;
  } cases[] = {
      {"no row", [](auto& v) { v.erase(v.begin()); }, "no local state-row"},
      {"two rows",
       [](auto& v) {
         v.push_back({"state2", AllocationGroup::kStateRows, 8, 1, MemoryOwner::kLocal});
       },
       "second state-row"},
      {"no pages", [](auto& v) { v.resize(1); }, "no local page-plane"},
      {"page counts differ", [](auto& v) { v[1].count = 64; }, "pages, other planes have"},
      {"duplicate", [](auto& v) { v[2].name = "v"; }, "listed twice"},
      {"zero unit", [](auto& v) { v[3].unit_bytes = 0; }, "zero unit bytes"},
  };
  for (const Case& c : cases) {
    std::vector<SizedAllocation> v = Synthetic();
    c.edit(v);
    Result<RankGeometry> g = RankGeometryFromAllocations(v);
    ASSERT_FALSE(g.ok()) << c.what;
    EXPECT_NE(g.status().message().find(c.expect), std::string::npos)
        << c.what << ": " << g.status().ToString();
  }
}

TEST(GeometryTest, PeerOnlyRowIsNotALocalRow) {
  std::vector<SizedAllocation> v = Synthetic();
  v[0].owner = MemoryOwner::kPeer;
  EXPECT_FALSE(RankGeometryFromAllocations(v).ok());
}

TEST(GeometryTest, ValidateGeometry) {
  CacheGeometry g{64, {*RankGeometryFromAllocations(Synthetic())}};
  EXPECT_TRUE(ValidateGeometry(g).ok());
  g.page_tokens = 0;
  EXPECT_FALSE(ValidateGeometry(g).ok());
  g.page_tokens = 64;
  g.ranks.clear();
  EXPECT_FALSE(ValidateGeometry(g).ok());
}

}  // namespace
}  // namespace strata
