#include "coordinator/pool/pooled_hit.h"

#include <gtest/gtest.h>

#include "tests/unit/coordinator/pool/pool_test_data.h"

namespace strata::pool {
namespace {

using testing::Key;

constexpr uint32_t kPageTokens = 64;
constexpr HitRecordBytes kBytes{.page = 1000, .row = 7};

// One row per case: the chain's endpoints, its sizes, the resident count,
// the endpoints the landing tier holds, and the hit's first claimed record
// with the skip and page count the landing tier's own index computes for
// that chain once it is imported (LookupHit: skip = r/pt - p/pt, pages =
// tails - skip), or nullopt.
struct Case {
  const char* name;
  std::vector<uint64_t> endpoints;
  ChainSizes sizes;
  uint64_t resident;
  std::vector<uint64_t> landing_holds;
  struct Hit {
    size_t start;
    uint64_t skip;
    uint64_t pages;
  };
  std::optional<Hit> hit;
};

TEST(PooledHitTest, SizesTheRestoreAsTheIndexDoes) {
  const std::vector<Case> cases = {
      {"a root chain from nothing", {640}, {0, {10}}, 0, {}, {{0, 0, 10}}},
      {"two records from nothing", {640, 1280}, {0, {10, 10}}, 0, {}, {{0, 0, 20}}},
      {"resident inside the first record", {640, 1280}, {0, {10, 10}}, 192, {}, {{0, 3, 17}}},
      {"a partial page re-stored by the child", {100, 200}, {0, {2, 3}}, 96, {}, {{0, 1, 4}}},
      {"GPU-held records the landing tier lacks are claimed and skipped",
       {640, 1280},
       {0, {10, 10}},
       640,
       {},
       {{0, 10, 10}}},
      {"claimed from the deepest GPU-held record the landing tier holds",
       {320, 640, 1280},
       {0, {5, 5, 10}},
       700,
       {320},
       {{1, 5, 10}}},
      {"nothing GPU-held is claimed when the landing tier holds it all",
       {320, 640, 1280},
       {0, {5, 5, 10}},
       640,
       {320, 640},
       {{2, 0, 10}}},
      {"a record held above the resident count is claimed again",
       {640, 1280},
       {0, {10, 10}},
       320,
       {1280},
       {{0, 5, 15}}},
      {"resident at the chain's endpoint", {640}, {0, {10}}, 640, {}, std::nullopt},
      {"resident past the chain's endpoint", {640}, {0, {10}}, 700, {}, std::nullopt},
      {"a base the answer names no key of", {1280}, {640, {10}}, 640, {}, std::nullopt},
      {"resident below the base", {1280}, {640, {10}}, 0, {}, std::nullopt},
      {"tails short of the keys", {640, 1280}, {0, {10}}, 0, {}, std::nullopt},
      {"an empty chain", {}, {0, {}}, 0, {}, std::nullopt},
      {"more skipped than held", {640}, {0, {2}}, 320, {}, std::nullopt},
  };
  for (const Case& c : cases) {
    std::vector<PrefixKey> chain;
    for (uint64_t e : c.endpoints) chain.push_back(Key(e));
    const LandingHolds holds = [&](const PrefixKey& k) {
      for (uint64_t e : c.landing_holds) {
        if (Key(e) == k) return true;
      }
      return false;
    };
    const std::optional<HostHit> hit =
        PooledHitOf(chain, c.sizes, c.resident, kPageTokens, kBytes, Tier::kMemory, holds);
    ASSERT_EQ(hit.has_value(), c.hit.has_value()) << c.name;
    if (!hit) continue;
    EXPECT_EQ(hit->skip_pages, c.hit->skip) << c.name;
    EXPECT_EQ(hit->pages, c.hit->pages) << c.name;
    EXPECT_EQ(hit->bytes, hit->pages * kBytes.page + kBytes.row) << c.name;
    EXPECT_EQ(hit->endpoint, chain.back()) << c.name;
    EXPECT_EQ(hit->chain,
              std::vector<PrefixKey>(chain.begin() + static_cast<std::ptrdiff_t>(c.hit->start),
                                     chain.end()))
        << c.name;
    EXPECT_EQ(hit->tokens_gained, chain.back().consumed - c.resident) << c.name;
    EXPECT_EQ(hit->tier, Tier::kMemory) << c.name;
  }
}

TEST(PooledHitTest, TheHitReadsTheTierClaimsLandIn) {
  for (Tier landing : {Tier::kMemory, Tier::kDisk}) {
    const std::optional<HostHit> hit =
        PooledHitOf({Key(640)}, {0, {10}}, 0, kPageTokens, kBytes, landing, {});
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(hit->tier, landing);
  }
}

TEST(PooledHitTest, ZeroPageTokensSizesNothing) {
  EXPECT_FALSE(PooledHitOf({Key(640)}, {0, {10}}, 0, 0, kBytes, Tier::kMemory, {}).has_value());
}

}  // namespace
}  // namespace strata::pool
