#include "store/transfer/transfer_plan.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

std::vector<HostPageSource> Pages(size_t n, size_t packed_from = SIZE_MAX) {
  static uint8_t arena[1];
  std::vector<HostPageSource> v;
  for (size_t i = 0; i < n; ++i) v.push_back({arena, i >= packed_from});
  return v;
}

std::vector<PageId> Ids(size_t n) {
  std::vector<PageId> v;
  for (size_t i = 0; i < n; ++i) v.push_back(PageId(static_cast<uint32_t>(100 + i)));
  return v;
}

TEST(TransferPlanTest, WindowsOfAtMost64PagesWithRowOnTheLast) {
  HostRowSource row{{{nullptr, 4096}}, false};
  auto jobs =
      PlanTransfers(TransferDirection::kHostToDevice, Pages(150), Ids(150), row, StateSlot(3));
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].page_ids.size(), 64u);
  EXPECT_EQ(jobs[1].page_ids.size(), 64u);
  EXPECT_EQ(jobs[2].page_ids.size(), 22u);
  EXPECT_EQ(jobs[0].page_ids[0], PageId(100));
  EXPECT_EQ(jobs[2].page_ids.back(), PageId(249));
  EXPECT_FALSE(jobs[0].row_slot);
  EXPECT_FALSE(jobs[1].row_slot);
  ASSERT_TRUE(jobs[2].row_slot);
  EXPECT_EQ(*jobs[2].row_slot, StateSlot(3));
}

TEST(TransferPlanTest, SplitsWhereTheReplicatedFlagChanges) {
  auto jobs = PlanTransfers(TransferDirection::kHostToDevice, Pages(10, /*packed_from=*/4), Ids(10),
                            std::nullopt, std::nullopt);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].page_ids.size(), 4u);
  EXPECT_FALSE(jobs[0].replicated_pages);
  EXPECT_EQ(jobs[1].page_ids.size(), 6u);
  EXPECT_TRUE(jobs[1].replicated_pages);
}

TEST(TransferPlanTest, RowOnlyCheckpoint) {
  HostRowSource row{{{nullptr, 4096}}, true};
  auto jobs = PlanTransfers(TransferDirection::kDeviceToHost, {}, {}, row, StateSlot(0));
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_TRUE(jobs[0].page_ids.empty());
  EXPECT_TRUE(jobs[0].replicated_row);
}

}  // namespace
}  // namespace strata
