#include "coordinator/pool/slot_table.h"

#include <gtest/gtest.h>

#include <array>

namespace strata::pool {
namespace {

TEST(SlotTableTest, TakeUntilExhausted) {
  SlotTable t(3);
  auto a = t.Take(2);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->size(), 2u);
  EXPECT_FALSE(t.Take(2).has_value()) << "only one slot is left";
  EXPECT_EQ(t.free_count(), 1u) << "a refused Take takes nothing";
  ASSERT_TRUE(t.Retire(*a).ok());
  EXPECT_EQ(t.free_count(), 3u);
  EXPECT_TRUE(t.CheckInvariants().ok());
}

TEST(SlotTableTest, HeldSlotIsNeverReusedUntilItsLastUnhold) {
  SlotTable t(1);
  auto a = t.Take(1);
  ASSERT_TRUE(a.has_value());
  const SlotId slot = a->front();
  ASSERT_TRUE(t.Hold(slot).ok());
  ASSERT_TRUE(t.Hold(slot).ok());
  ASSERT_TRUE(t.Retire(*a).ok());
  EXPECT_FALSE(t.Take(1).has_value()) << "retired under two holds";
  EXPECT_EQ(t.retired_held_count(), 1u);
  ASSERT_TRUE(t.Unhold(slot).ok());
  EXPECT_FALSE(t.Take(1).has_value()) << "one hold remains";
  ASSERT_TRUE(t.Unhold(slot).ok());
  EXPECT_TRUE(t.IsFree(slot));
  EXPECT_TRUE(t.Take(1).has_value());
  EXPECT_TRUE(t.CheckInvariants().ok());
}

TEST(SlotTableTest, RejectsMisuse) {
  SlotTable t(2);
  EXPECT_EQ(t.Hold(SlotId(0)).code(), StatusCode::kFailedPrecondition) << "hold of a free slot";
  EXPECT_EQ(t.Hold(SlotId(9)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t.Unhold(SlotId(0)).code(), StatusCode::kFailedPrecondition);
  const std::array<SlotId, 1> free_slot{SlotId(1)};
  EXPECT_EQ(t.Retire(free_slot).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(t.free_count(), 2u);
  EXPECT_TRUE(t.CheckInvariants().ok());
}

}  // namespace
}  // namespace strata::pool
