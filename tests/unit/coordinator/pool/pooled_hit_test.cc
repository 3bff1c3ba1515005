#include "coordinator/pool/pooled_hit.h"

#include <gtest/gtest.h>

#include "tests/unit/coordinator/pool/pool_test_data.h"

namespace strata::pool {
namespace {

using testing::Key;

constexpr uint32_t kPageTokens = 64;
constexpr HitRecordBytes kBytes{.page = 1000, .row = 7};

// One row per case: the chain's endpoints, its sizes, the resident count,
// and the skip and page count the index itself computes for that chain
// (LookupHit: skip = a/pt - p/pt, pages = tails - skip), or nullopt.
struct Case {
  const char* name;
  std::vector<uint64_t> endpoints;
  ChainSizes sizes;
  uint64_t resident;
  std::optional<std::pair<uint64_t, uint64_t>> skip_and_pages;
};

TEST(PooledHitTest, SizesTheRestoreAsTheIndexDoes) {
  const std::vector<Case> cases = {
      {"a root chain from nothing", {640}, {0, {10}}, 0, {{0, 10}}},
      {"two records from nothing", {640, 1280}, {0, {10, 10}}, 0, {{0, 20}}},
      {"resident inside the first record", {640, 1280}, {0, {10, 10}}, 192, {{3, 17}}},
      {"below a parent the GPU holds", {1280}, {640, {10}}, 640, {{0, 10}}},
      {"a partial page re-stored by the child", {100, 200}, {0, {2, 3}}, 96, {{1, 4}}},
      {"resident at the chain's first record", {640}, {0, {10}}, 640, std::nullopt},
      {"resident below the base", {1280}, {640, {10}}, 0, std::nullopt},
      {"tails short of the keys", {640, 1280}, {0, {10}}, 0, std::nullopt},
      {"an empty chain", {}, {0, {}}, 0, std::nullopt},
      {"more skipped than held", {640}, {0, {2}}, 320, std::nullopt},
  };
  for (const Case& c : cases) {
    std::vector<PrefixKey> chain;
    for (uint64_t e : c.endpoints) chain.push_back(Key(e));
    const std::optional<HostHit> hit =
        PooledHitOf(chain, c.sizes, c.resident, kPageTokens, kBytes, Tier::kMemory);
    ASSERT_EQ(hit.has_value(), c.skip_and_pages.has_value()) << c.name;
    if (!hit) continue;
    EXPECT_EQ(hit->skip_pages, c.skip_and_pages->first) << c.name;
    EXPECT_EQ(hit->pages, c.skip_and_pages->second) << c.name;
    EXPECT_EQ(hit->bytes, hit->pages * kBytes.page + kBytes.row) << c.name;
    EXPECT_EQ(hit->endpoint, chain.back()) << c.name;
    EXPECT_EQ(hit->chain, chain) << c.name;
    EXPECT_EQ(hit->tokens_gained, chain.back().consumed - c.resident) << c.name;
    EXPECT_EQ(hit->tier, Tier::kMemory) << c.name;
  }
}

TEST(PooledHitTest, TheHitReadsTheTierClaimsLandIn) {
  for (Tier landing : {Tier::kMemory, Tier::kDisk}) {
    const std::optional<HostHit> hit =
        PooledHitOf({Key(640)}, {0, {10}}, 0, kPageTokens, kBytes, landing);
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(hit->tier, landing);
  }
}

TEST(PooledHitTest, ZeroPageTokensSizesNothing) {
  EXPECT_FALSE(PooledHitOf({Key(640)}, {0, {10}}, 0, 0, kBytes, Tier::kMemory).has_value());
}

}  // namespace
}  // namespace strata::pool
