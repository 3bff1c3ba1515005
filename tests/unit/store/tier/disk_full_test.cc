// A record directory whose filesystem fills up below the configured disk
// limit: the first write that fails with ENOSPC lowers the limit in force to
// what the filesystem held less a margin, least-recently-used records are
// evicted to make headroom, the change is counted, and later stores and
// restores carry on.
#include <gtest/gtest.h>

#include "launch/presets.h"
#include "launch/runtime/synthetic_runtime.h"
#include "tests/unit/store/io/small_file_system.h"
#include "tests/unit/store/tier/disk_rig.h"

namespace strata {
namespace {

using testing::ScratchDir;
using testing::SmallFileSystem;

// Stores `count` new ten-page conversations one after another; returns them.
std::vector<uint32_t> StoreConversations(SyntheticRuntime& rt, int count) {
  std::vector<uint32_t> convs;
  for (int i = 0; i < count; ++i) {
    convs.push_back(rt.NewConversation());
    EXPECT_TRUE(rt.Turn(convs.back(), 640).ok());
    EXPECT_TRUE(rt.WaitForStores().ok());
  }
  return convs;
}

TEST(DiskFullTest, AFilesystemBelowTheLimitLowersItEvictsAndLaterStoresCarryOn) {
  ScratchDir dir;
  HostPlanes planes(*PresetGeometry("tiny", 1, 512, 16));
  const uint64_t one = RecordFileBytes(RecordLayout(planes.geometry()), {.tail_pages = 10});
  SmallFileSystem fs(4 * one + one / 2);  // holds four records
  OPEN_RIG(rig, dir.path(), planes, 100 * one, &fs);
  SyntheticRuntime rt(planes, rig.store());

  std::vector<uint32_t> convs = StoreConversations(rt, 5);  // the fifth does not fit
  StoreStats s = rig.store()->Stats();
  EXPECT_EQ(rt.stats().store_failed, 1u);
  EXPECT_EQ(s.disk_limit_lowered_total, 1u);
  EXPECT_LT(s.disk_limit_bytes, 4 * one + one / 2);
  EXPECT_EQ(s.disk_limit_bytes, rig.store()->limit_bytes());

  // Later stores carry on under the lowered limit, evicting as usual.
  const std::vector<uint32_t> later = StoreConversations(rt, 4);
  ASSERT_TRUE(rig.store()->WaitIdle(std::chrono::seconds(30)));
  s = rig.store()->Stats();
  EXPECT_EQ(rt.stats().store_failed, 1u);
  EXPECT_EQ(s.disk_limit_lowered_total, 1u);
  EXPECT_LE(rig.store()->used_bytes(), s.disk_limit_bytes);
  EXPECT_GT(s.disk.evicted_total, 0u);  // room made under the lowered limit
  rt.EvictGpu();
  EXPECT_TRUE(rt.Turn(later.back(), 5)->host_hit);
  EXPECT_FALSE(rt.Turn(convs.front(), 5)->host_hit);  // the least recently used went
  EXPECT_EQ(rt.stats().mismatches, 0u);
}

TEST(DiskFullTest, AnotherProcessFillingTheDiskMidRunLowersTheLimitOnce) {
  ScratchDir dir;
  HostPlanes planes(*PresetGeometry("tiny", 1, 512, 16));
  const uint64_t one = RecordFileBytes(RecordLayout(planes.geometry()), {.tail_pages = 10});
  SmallFileSystem fs(100 * one);
  OPEN_RIG(rig, dir.path(), planes, 50 * one, &fs);
  SyntheticRuntime rt(planes, rig.store());
  (void)StoreConversations(rt, 6);
  EXPECT_EQ(rig.store()->Stats().disk_limit_lowered_total, 0u);

  fs.Fill(94 * one);  // six records' room left: the next store does not fit
  const std::vector<uint32_t> after = StoreConversations(rt, 4);
  ASSERT_TRUE(rig.store()->WaitIdle(std::chrono::seconds(30)));
  StoreStats s = rig.store()->Stats();
  EXPECT_EQ(s.disk_limit_lowered_total, 1u);
  EXPECT_LT(s.disk_limit_bytes, 6 * one);
  EXPECT_EQ(rt.stats().store_failed, 1u);
  EXPECT_LE(rig.store()->used_bytes(), s.disk_limit_bytes);
  rt.EvictGpu();
  EXPECT_TRUE(rt.Turn(after.back(), 5)->host_hit);
  EXPECT_EQ(rt.stats().mismatches, 0u);
}

}  // namespace
}  // namespace strata
