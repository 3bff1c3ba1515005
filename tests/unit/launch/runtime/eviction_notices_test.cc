// The bounded eviction-notice queue and the export map.
#include "launch/runtime/eviction_notices.h"

#include <gtest/gtest.h>

#include "launch/runtime/export_pins.h"

namespace strata {
namespace {

EvictionNotice Notice(uint64_t generation) {
  return EvictionNotice{.key = PrefixKey{.consumed = generation * 64, .digest = {}},
                        .generation = generation};
}

TEST(EvictionNoticeQueueTest, KeepsNoticesInOrderWithinTheBound) {
  EvictionNoticeQueue q(3);
  EXPECT_TRUE(q.idle());
  q.Push(Notice(1));
  q.Push(Notice(2));
  EvictionNoticeQueue::Batch b = q.Take();
  ASSERT_EQ(b.notices.size(), 2u);
  EXPECT_EQ(b.notices[0].generation, 1u);
  EXPECT_EQ(b.notices[1].generation, 2u);
  EXPECT_FALSE(b.lost);
  EXPECT_TRUE(q.idle());
}

TEST(EvictionNoticeQueueTest, DropsTheOldestAndReportsOneLossPerOverflow) {
  EvictionNoticeQueue q(2);
  for (uint64_t g = 1; g <= 5; ++g) q.Push(Notice(g));
  EXPECT_FALSE(q.idle());
  EvictionNoticeQueue::Batch b = q.Take();
  ASSERT_EQ(b.notices.size(), 2u);
  EXPECT_EQ(b.notices[0].generation, 4u);
  EXPECT_EQ(b.notices[1].generation, 5u);
  EXPECT_TRUE(b.lost);
  EXPECT_EQ(q.dropped_total(), 3u);
  // The loss was reported; a new notice within the bound reports none.
  q.Push(Notice(6));
  b = q.Take();
  EXPECT_FALSE(b.lost);
  ASSERT_EQ(b.notices.size(), 1u);
}

TEST(EvictionNoticeQueueTest, ALossWithNothingLeftIsStillReported) {
  EvictionNoticeQueue q(0);  // taken as 1
  EXPECT_EQ(q.capacity(), 1u);
  q.Push(Notice(1));
  q.Push(Notice(2));
  EvictionNoticeQueue::Batch b = q.Take();
  EXPECT_TRUE(b.lost);
  ASSERT_EQ(b.notices.size(), 1u);
  EXPECT_EQ(b.notices[0].generation, 2u);
}

TEST(ExportPinsTest, ASecondEndFindsNothing) {
  ExportPins pins;
  const PinnedExport p{.key = Notice(3).key, .generation = 3};
  ASSERT_TRUE(pins.Record(ExportId(1), p));
  EXPECT_FALSE(pins.Record(ExportId(1), p));  // one pin per export id
  ASSERT_TRUE(pins.Record(ExportId(2), p));
  EXPECT_EQ(pins.count(p.key), 2u);
  std::optional<PinnedExport> ended = pins.End(ExportId(1));
  ASSERT_TRUE(ended.has_value());
  EXPECT_EQ(ended->generation, 3u);
  EXPECT_FALSE(pins.End(ExportId(1)).has_value());
  EXPECT_FALSE(pins.End(ExportId(9)).has_value());
  EXPECT_EQ(pins.size(), 1u);
}

}  // namespace
}  // namespace strata
