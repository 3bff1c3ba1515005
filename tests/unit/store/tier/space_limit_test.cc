#include "store/tier/space_limit.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(SpaceLimitTest, KeepsTheLimitWhenTheFilesystemHoldsMore) {
  EXPECT_EQ(LimitForFilesystem(1000, 1u << 20), 1000u);
  EXPECT_EQ(LimitForFilesystem(1000, 1067), 1000u);  // 1067 - 66 = 1001
}

TEST(SpaceLimitTest, LowersToWhatTheFilesystemHoldsLessASixteenth) {
  EXPECT_EQ(LimitForFilesystem(1u << 30, 1600), 1500u);
  EXPECT_EQ(LimitForFilesystem(1u << 30, 40u << 20), (40u << 20) - (40u << 20) / 16);
  EXPECT_EQ(SpaceMargin(1600), 100u);
}

TEST(SpaceLimitTest, AFullFilesystemWithNothingOfOursLeavesNoRoom) {
  EXPECT_EQ(LimitForFilesystem(1u << 30, 0), 0u);
}

}  // namespace
}  // namespace strata
