// HeldCheckpoints: what an instance announces it holds, in the manager's
// order (withdrawals before holdings), bounded, and the whole book again
// after a reset.
#include "coordinator/pool/held_checkpoints.h"

#include <gtest/gtest.h>

namespace strata::pool {
namespace {

constexpr ExportRecordSizes kSizes{.page_record_bytes = 8192, .row_segment_bytes = 4096};

Holding Held(uint64_t consumed, uint64_t generation = 1) {
  return Holding{.key = PrefixKey{.consumed = consumed, .digest = {}},
                 .generation = generation,
                 .bucket_digest = {}};
}

std::vector<uint64_t> Consumed(const std::vector<Holding>& holdings) {
  std::vector<uint64_t> out;
  for (const Holding& h : holdings) out.push_back(h.key.consumed);
  return out;
}

TEST(HeldCheckpointsTest, HoldingsAndRetirementsGoOutOnce) {
  HeldCheckpoints book;
  EXPECT_FALSE(book.TakeAnnounce(kSizes).has_value());
  book.Hold(Held(64));
  book.Hold(Held(128));
  std::optional<PoolAnnounce> a = book.TakeAnnounce(kSizes);
  ASSERT_TRUE(a.has_value());
  EXPECT_FALSE(a->reset);
  EXPECT_EQ(Consumed(a->held), (std::vector<uint64_t>{64, 128}));
  EXPECT_TRUE(a->withdrawn.empty());
  EXPECT_EQ(a->sizes.page_record_bytes, kSizes.page_record_bytes);
  EXPECT_FALSE(book.TakeAnnounce(kSizes).has_value());
  book.Retire(Held(64).key, 1);
  a = book.TakeAnnounce(kSizes);
  EXPECT_EQ(Consumed(a->withdrawn), (std::vector<uint64_t>{64}));
  EXPECT_EQ(book.size(), 1u);
}

TEST(HeldCheckpointsTest, AnOlderGenerationsNoticeLeavesTheNewerHoldingBe) {
  HeldCheckpoints book;
  book.Hold(Held(64, 1));
  book.Hold(Held(64, 2));  // made again after an eviction
  (void)book.TakeAnnounce(kSizes);
  book.Retire(Held(64).key, 1);
  EXPECT_FALSE(book.TakeAnnounce(kSizes).has_value());
  EXPECT_EQ(book.size(), 1u);
  book.Retire(Held(64).key, 2);
  EXPECT_EQ(book.size(), 0u);
}

TEST(HeldCheckpointsTest, AHoldingRetiredBeforeItWasAnnouncedIsOnlyWithdrawn) {
  HeldCheckpoints book;
  book.Hold(Held(64));
  book.Retire(Held(64).key, 1);
  const std::optional<PoolAnnounce> a = book.TakeAnnounce(kSizes);
  ASSERT_TRUE(a.has_value());
  EXPECT_TRUE(a->held.empty()) << "the manager applies withdrawals first: it would stay held";
  EXPECT_EQ(Consumed(a->withdrawn), (std::vector<uint64_t>{64}));
}

TEST(HeldCheckpointsTest, TheBookIsBoundedAndAnnouncedWholeAfterAReset) {
  HeldCheckpoints book(/*max_holdings=*/2);
  book.Hold(Held(64));
  book.Hold(Held(128));
  (void)book.TakeAnnounce(kSizes);
  book.Hold(Held(192));  // the oldest goes
  std::optional<PoolAnnounce> a = book.TakeAnnounce(kSizes);
  EXPECT_EQ(Consumed(a->withdrawn), (std::vector<uint64_t>{64}));
  EXPECT_EQ(Consumed(a->held), (std::vector<uint64_t>{192}));
  book.AnnounceAll();
  a = book.TakeAnnounce(kSizes);
  EXPECT_TRUE(a->reset);
  EXPECT_EQ(Consumed(a->held), (std::vector<uint64_t>{128, 192}));
  EXPECT_TRUE(a->withdrawn.empty());
}

TEST(HeldCheckpointsTest, ALargeBookGoesOutInBoundedAnnouncements) {
  HeldCheckpoints book;
  for (uint64_t i = 1; i <= kPoolHoldingsPerAnnounceMax + 5; ++i) book.Hold(Held(64 * i));
  std::optional<PoolAnnounce> a = book.TakeAnnounce(kSizes);
  EXPECT_EQ(a->held.size(), kPoolHoldingsPerAnnounceMax);
  a = book.TakeAnnounce(kSizes);
  EXPECT_EQ(a->held.size(), 5u);
  EXPECT_FALSE(book.pending());
}

}  // namespace
}  // namespace strata::pool
