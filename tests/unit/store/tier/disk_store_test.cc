#include "store/tier/disk_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "launch/presets.h"
#include "launch/runtime/synthetic_runtime.h"
#include "tests/unit/store/tier/disk_rig.h"

namespace strata {
namespace {

using testing::DiskRig;
using testing::ScratchDir;

TEST(DiskStoreTest, RestoreAfterGpuEvictionAndAfterRestartIsByteExact) {
  ScratchDir dir;
  HostPlanes planes(*PresetGeometry("tiny", 2, 512, 16));
  {
    OPEN_RIG(rig, dir.path(), planes, 1ull << 30);
    SyntheticRuntime rt(planes, rig.store());
    uint32_t a = rt.NewConversation();
    ASSERT_TRUE(rt.Turn(a, 1000).ok());
    ASSERT_TRUE(rt.Turn(a, 5000).ok());  // 78 pages: a two-window record
    uint32_t b = rt.Branch(a, 1000);
    ASSERT_TRUE(rt.Turn(b, 700).ok());
    ASSERT_TRUE(rt.WaitForStores().ok());
    EXPECT_EQ(rt.stats().stored, 3u);
    rt.EvictGpu();
    TurnReport t = *rt.Turn(a, 10);
    EXPECT_TRUE(t.host_hit);
    EXPECT_EQ(t.host_reused_tokens, 6000u);
    EXPECT_EQ(rt.stats().mismatches, 0u);
    EXPECT_TRUE(rig.store()->index().CheckInvariants().ok());
  }
  // Restart: a new process on the same directory restores the same bytes.
  OPEN_RIG(rig, dir.path(), planes, 1ull << 30);
  EXPECT_GE(rig.store()->index().size(), 3u);
  SyntheticRuntime rt(planes, rig.store());
  uint32_t a = rt.NewConversation();
  TurnReport first = *rt.Turn(a, 1000);
  EXPECT_TRUE(first.host_hit);
  TurnReport second = *rt.Turn(a, 5000);
  EXPECT_TRUE(second.host_hit);
  EXPECT_EQ(second.host_reused_tokens, 5000u);
  uint32_t b = rt.Branch(a, 1000);
  EXPECT_TRUE(rt.Turn(b, 700)->host_hit);
  EXPECT_EQ(rt.stats().mismatches, 0u);
  EXPECT_GT(rt.stats().restored_bytes, 0u);
}

TEST(DiskStoreTest, DiskLimitEvictsLeastRecentlyUsedAndUnlinksFiles) {
  ScratchDir dir;
  HostPlanes planes(*PresetGeometry("tiny", 1, 512, 16));
  RecordLayout layout(planes.geometry());
  const uint64_t one = RecordFileBytes(layout, {.tail_pages = 10});
  OPEN_RIG(rig, dir.path(), planes, 3 * one + one / 2);
  SyntheticRuntime rt(planes, rig.store());
  std::vector<uint32_t> convs;
  for (int i = 0; i < 6; ++i) {
    convs.push_back(rt.NewConversation());
    ASSERT_TRUE(rt.Turn(convs.back(), 640).ok());
    ASSERT_TRUE(rt.WaitForStores().ok());
  }
  ASSERT_TRUE(rig.store()->WaitIdle(std::chrono::seconds(30)));  // unlinks finish
  StoreStats s = rig.store()->Stats();
  EXPECT_GT(s.disk.evicted_total, 0u);
  EXPECT_LE(rig.store()->used_bytes(), 3 * one + one / 2);
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(rig.disk().path())) {
    files += e.path().extension() == ".ckpt";
  }
  EXPECT_EQ(files, rig.store()->index().size());
  rt.EvictGpu();
  EXPECT_FALSE(rt.Turn(convs[0], 5)->host_hit);
  EXPECT_TRUE(rt.Turn(convs[5], 5)->host_hit);
  EXPECT_EQ(rt.stats().mismatches, 0u);
}

TEST(DiskStoreTest, ParentBecomesPageOnlyWhenItsOnlyChildCommits) {
  ScratchDir dir;
  HostPlanes planes(*PresetGeometry("tiny", 1, 512, 16));
  RecordLayout layout(planes.geometry());
  OPEN_RIG(rig, dir.path(), planes, 1ull << 30);
  SyntheticRuntime rt(planes, rig.store());
  uint32_t a = rt.NewConversation();
  ASSERT_TRUE(rt.Turn(a, 640).ok());
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(rt.Turn(a, 640).ok());
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(rig.store()->WaitIdle(std::chrono::seconds(30)));
  std::vector<IndexEntry> entries = rig.store()->index().Entries();
  ASSERT_EQ(entries.size(), 2u);
  const IndexEntry& parent = entries[0].key.consumed == 640 ? entries[0] : entries[1];
  // A root record keeps its row; only a non-root record's row is dropped.
  EXPECT_EQ(parent.row, RowPresence::kPresent);
  ASSERT_TRUE(rt.Turn(a, 640).ok());
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(rig.store()->WaitIdle(std::chrono::seconds(30)));
  std::optional<IndexEntry> middle;
  for (const IndexEntry& e : rig.store()->index().Entries()) {
    if (e.key.consumed == 1280) middle = e;
  }
  ASSERT_TRUE(middle);
  EXPECT_EQ(middle->row, RowPresence::kPageOnly);
  struct stat st {};
  ASSERT_EQ(::stat((rig.disk().path() + "/" + middle->key.ToFileStem() + ".ckpt").c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size),
            RecordFileBytes(layout, {.tail_pages = 10, .has_row = false}));
}

TEST(DiskStoreTest, ASecondProcessOnTheSameDirectoryFailsAtOnce) {
  ScratchDir dir;
  HostPlanes planes(*PresetGeometry("tiny", 1, 64, 4));
  OPEN_RIG(rig, dir.path(), planes, 1ull << 30);
  Status second;
  DiskRig other(dir.path(), planes, 1ull << 30, &second);
  EXPECT_EQ(second.code(), StatusCode::kBusy);
  EXPECT_NE(second.message().find("in use by"), std::string::npos) << second.ToString();
}

}  // namespace
}  // namespace strata
