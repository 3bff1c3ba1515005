#include "store/tier/inbound_policy.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

HostHit Hit(Tier tier, uint64_t bytes, uint64_t tokens) {
  HostHit h;
  h.tier = tier;
  h.bytes = bytes;
  h.tokens_gained = tokens;
  return h;
}

TEST(InboundPolicyTest, InitialRates) {
  InboundPolicy p;
  EXPECT_DOUBLE_EQ(p.rate(Tier::kMemory), 20e9);
  EXPECT_DOUBLE_EQ(p.rate(Tier::kDisk), 3e9);
}

TEST(InboundPolicyTest, FetchOnlyWhenTransferIsUnderHalfThePrefill) {
  InboundPolicy p;
  // 8,000 tokens = 1 s of prefill; the disk restore must take < 0.5 s = 1.5 GB.
  EXPECT_TRUE(p.ShouldFetch(Hit(Tier::kDisk, 1'400'000'000, 8000)));
  EXPECT_FALSE(p.ShouldFetch(Hit(Tier::kDisk, 1'600'000'000, 8000)));
  // The same bytes from memory (20 GB/s) are worth it.
  EXPECT_TRUE(p.ShouldFetch(Hit(Tier::kMemory, 1'600'000'000, 8000)));
  EXPECT_FALSE(p.ShouldFetch(Hit(Tier::kMemory, 1, 0)));
}

TEST(InboundPolicyTest, RateIsMedianOfLastThree) {
  InboundPolicy p;
  p.RecordTransfer(Tier::kDisk, 1'000'000'000, 1.0);  // 1 GB/s
  EXPECT_DOUBLE_EQ(p.rate(Tier::kDisk), 1e9);
  p.RecordTransfer(Tier::kDisk, 5'000'000'000, 1.0);  // 5 GB/s
  EXPECT_DOUBLE_EQ(p.rate(Tier::kDisk), 3e9);
  p.RecordTransfer(Tier::kDisk, 2'000'000'000, 1.0);  // 2 GB/s
  EXPECT_DOUBLE_EQ(p.rate(Tier::kDisk), 2e9);
  p.RecordTransfer(Tier::kDisk, 9'000'000'000, 1.0);  // drops the 1 GB/s sample
  EXPECT_DOUBLE_EQ(p.rate(Tier::kDisk), 5e9);
  EXPECT_DOUBLE_EQ(p.rate(Tier::kMemory), 20e9);  // tiers are independent
}

TEST(InboundPolicyTest, MeasuredPrefillRateChangesTheDecision) {
  InboundPolicy p;
  HostHit h = Hit(Tier::kDisk, 1'400'000'000, 8000);
  EXPECT_TRUE(p.ShouldFetch(h));
  p.SetPrefillRate(80'000);  // prefill is 10x faster: recompute instead
  EXPECT_FALSE(p.ShouldFetch(h));
}

TEST(InboundPolicyTest, APooledHitHasARateOfItsOwnRefinedBySuccessfulRestores) {
  InboundPolicy p;
  EXPECT_DOUBLE_EQ(p.pool_rate(), 400.0 * (1 << 20));  // the seed's remote initial rate
  HostHit pooled = Hit(Tier::kMemory, 300'000'000, 8000);
  pooled.pages = 100;
  pooled.pooled = true;
  // 300 MB at 400 MiB/s is 0.72 s, more than half the 1 s prefill: recompute.
  EXPECT_FALSE(p.ShouldFetch(pooled));
  // The same hit from the memory tier is worth it.
  HostHit local = pooled;
  local.pooled = false;
  EXPECT_TRUE(p.ShouldFetch(local));
  // Pooled restores measure this host's pool: 3 GB/s, and the hit is worth it.
  p.RecordRestore(pooled, 0.1);
  EXPECT_DOUBLE_EQ(p.pool_rate(), 3e9);
  EXPECT_TRUE(p.ShouldFetch(pooled));
  EXPECT_DOUBLE_EQ(p.rate(Tier::kMemory), 20e9) << "a pooled restore is not the memory tier's";
  // A row-only restore updates no rate.
  HostHit row_only = pooled;
  row_only.pages = 0;
  p.RecordRestore(row_only, 100.0);
  EXPECT_DOUBLE_EQ(p.pool_rate(), 3e9);
  // A local restore updates its tier's.
  local.tier = Tier::kDisk;
  p.RecordRestore(local, 1.0);
  EXPECT_DOUBLE_EQ(p.rate(Tier::kDisk), 3e8);
  EXPECT_DOUBLE_EQ(p.pool_rate(), 3e9);
}

}  // namespace
}  // namespace strata
