#include "store/tier/disk_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "launch/presets.h"
#include "launch/runtime/synthetic_runtime.h"
#include "store/tier/local_disk.h"
#include "store/transfer/host_planes.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

using testing::ScratchDir;

// One process's disk store over host planes: LocalDisk, Staged, DiskStore.
class DiskRig {
 public:
  DiskRig(const std::string& base, HostPlanes& planes, uint64_t limit, Status* open_status) {
    const CacheGeometry& g = planes.geometry();
    identity_ = ComputeNamespaceIdentity("test-model", StateMode::kOrdinary);
    fingerprint_ = ComputeLayoutFingerprint(g);
    LocalDiskOptions o;
    o.base_dir = base;
    o.host_headroom_bytes = 64ull << 20;
    Result<std::unique_ptr<LocalDisk>> disk = LocalDisk::Open(g, identity_, fingerprint_, o);
    if (!disk.ok()) {
      *open_status = disk.status();
      return;
    }
    disk_ = std::move(*disk);
    auto transport = *disk_->MakeTransport(*MakeHostTransfers(planes));
    Result<std::unique_ptr<DiskStore>> store = DiskStore::Open(
        g, std::move(transport), disk_->scan().records, {.disk_limit_bytes = limit});
    *open_status = store.status();
    if (store.ok()) store_ = std::move(*store);
  }
  ~DiskRig() {
    if (store_) {
      EXPECT_TRUE(store_->Close().ok());
    }
    store_.reset();
  }
  DiskStore* store() { return store_.get(); }
  LocalDisk& disk() { return *disk_; }

 private:
  NamespaceIdentity identity_{};
  LayoutFingerprint fingerprint_{};
  std::unique_ptr<LocalDisk> disk_;
  std::unique_ptr<DiskStore> store_;
};

#define OPEN_RIG(rig, base, planes, limit)                            \
  Status rig##_status;                                                \
  DiskRig rig(base, planes, limit, &rig##_status);                    \
  if (rig##_status.code() == StatusCode::kFailedPrecondition &&       \
      rig##_status.message().find("O_DIRECT") != std::string::npos) { \
    GTEST_SKIP() << rig##_status.message();                           \
  }                                                                   \
  ASSERT_TRUE(rig##_status.ok()) << rig##_status.ToString()

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
