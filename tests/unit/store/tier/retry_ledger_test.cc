#include "store/tier/retry_ledger.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata {
namespace {

PrefixKey Key(uint64_t n) {
  PrefixKey k;
  k.consumed = 64 * n;
  k.digest[0] = static_cast<uint8_t>(n);
  return k;
}

std::vector<EvictionNotice> Notices(std::initializer_list<uint64_t> keys) {
  std::vector<EvictionNotice> out;
  for (uint64_t k : keys) out.push_back({.key = Key(k), .generation = 1});
  return out;
}

uint64_t At(const RetryCounts& c, RetryCause cause) { return c[static_cast<size_t>(cause)]; }

TEST(RetryLedgerTest, AnEvictedKeyStillRefusedCountsUnderItsLastCause) {
  RetryLedger ledger;
  EXPECT_EQ(ledger.Offered(Key(1), StoreOutcome::kRetry, RetryCause::kQueue), StoreOutcome::kRetry);
  // A later refusal of the same key replaces its cause.
  EXPECT_EQ(ledger.Offered(Key(1), StoreOutcome::kDeferred, RetryCause::kSlabs),
            StoreOutcome::kDeferred);
  ledger.Offered(Key(2), StoreOutcome::kDeferred, RetryCause::kBudget);
  EXPECT_EQ(ledger.waiting(), 2u);
  RetryCounts counts{};
  const auto notices = Notices({1, 2, 3});
  ledger.Evicted(notices, counts);
  EXPECT_EQ(At(counts, RetryCause::kSlabs), 1u);
  EXPECT_EQ(At(counts, RetryCause::kBudget), 1u);
  EXPECT_EQ(At(counts, RetryCause::kQueue), 0u);
  EXPECT_EQ(At(counts, RetryCause::kInflight), 0u);
  EXPECT_EQ(ledger.waiting(), 0u);
  // Counted once: a second notice for the same key finds nothing.
  ledger.Evicted(notices, counts);
  EXPECT_EQ(At(counts, RetryCause::kSlabs), 1u);
}

TEST(RetryLedgerTest, EveryOtherOutcomeSettlesTheKey) {
  for (StoreOutcome settled : {StoreOutcome::kQueued, StoreOutcome::kPresent,
                               StoreOutcome::kOversize, StoreOutcome::kDisabled}) {
    RetryLedger ledger;
    ledger.Offered(Key(1), StoreOutcome::kRetry, RetryCause::kInflight);
    EXPECT_EQ(ledger.Offered(Key(1), settled, RetryCause::kInflight), settled);
    RetryCounts counts{};
    const auto notices = Notices({1});
    ledger.Evicted(notices, counts);
    EXPECT_EQ(At(counts, RetryCause::kInflight), 0u) << StoreOutcomeName(settled);
  }
}

TEST(RetryLedgerTest, PastItsCapacityTheOldestRefusalIsForgotten) {
  RetryLedger ledger(/*capacity=*/2);
  ledger.Offered(Key(1), StoreOutcome::kRetry, RetryCause::kQueue);
  ledger.Offered(Key(2), StoreOutcome::kRetry, RetryCause::kQueue);
  // Re-refusing key 1 makes it the newest: key 2 is the one forgotten next.
  ledger.Offered(Key(1), StoreOutcome::kRetry, RetryCause::kQueue);
  ledger.Offered(Key(3), StoreOutcome::kRetry, RetryCause::kQueue);
  EXPECT_EQ(ledger.waiting(), 2u);
  RetryCounts counts{};
  const auto notices = Notices({1, 2, 3});
  ledger.Evicted(notices, counts);
  EXPECT_EQ(At(counts, RetryCause::kQueue), 2u);
}

TEST(RetryLedgerTest, CauseNamesAreTheMetricsReasons) {
  EXPECT_EQ(RetryCauseName(RetryCause::kInflight), "inflight");
  EXPECT_EQ(RetryCauseName(RetryCause::kSlabs), "slabs");
  EXPECT_EQ(RetryCauseName(RetryCause::kQueue), "queue");
  EXPECT_EQ(RetryCauseName(RetryCause::kBudget), "budget");
}

}  // namespace
}  // namespace strata
