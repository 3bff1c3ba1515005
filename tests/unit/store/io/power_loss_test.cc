// Power loss: a disk store runs over CrashFileSystem (store/io/crash_file_system.h),
// the power is cut (everything not synced is forgotten), and the store
// restarts from what is left. With durability "sync" (the default) no
// acknowledged record is lost; with either setting no torn or corrupt byte
// is ever restored, and the crash really forgot something when nothing synced.
#include <gtest/gtest.h>

#include <unordered_set>

#include "launch/presets.h"
#include "launch/record_tools.h"
#include "launch/runtime/synthetic_runtime.h"
#include "store/io/crash_file_system.h"
#include "store/tier/disk_store.h"
#include "store/tier/local_disk.h"
#include "store/transfer/host_planes.h"
#include "tests/unit/store/io/ack_recorder.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

using testing::ScratchDir;

constexpr std::chrono::seconds kIdleBound{30};
constexpr uint64_t kConversations = 4;
constexpr uint64_t kTurnTokens = 640;
constexpr uint64_t kSeed = 23;

enum class Setting : unsigned char { kDefault, kSync, kNone };

struct Case {
  Setting setting;
  CrashMode mode;
};

const NamespaceIdentity& Identity() {
  static const NamespaceIdentity id = ComputeNamespaceIdentity("power-loss", StateMode::kOrdinary);
  return id;
}

DiskStoreOptions StoreOptions() { return {.disk_limit_bytes = uint64_t{1} << 30}; }

// Stores kConversations conversations and returns the acknowledged keys.
std::unordered_set<PrefixKey> RunBeforeTheCut(const std::string& base, HostPlanes& planes,
                                              CrashFileSystem& fs, Setting setting) {
  LocalDiskOptions o;
  o.base_dir = base;
  o.host_headroom_bytes = 16ull << 20;
  if (setting == Setting::kSync) o.durability = Durability::kSync;
  if (setting == Setting::kNone) o.durability = Durability::kNone;
  o.file_system = &fs;
  o.wrap_block_io = [&fs](std::unique_ptr<BlockIo> io) { return fs.WrapBlockIo(std::move(io)); };
  const CacheGeometry& g = planes.geometry();
  Result<std::unique_ptr<LocalDisk>> disk =
      LocalDisk::Open(g, Identity(), ComputeLayoutFingerprint(g), o);
  EXPECT_TRUE(disk.ok()) << disk.status().ToString();
  if (!disk.ok()) return {};
  Result<std::unique_ptr<DiskStore>> store =
      DiskStore::Open(g, *(*disk)->MakeTransport(*MakeHostTransfers(planes)),
                      (*disk)->scan().records, StoreOptions());
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  if (!store.ok()) return {};
  testing::AckRecorder recorder(**store);
  {
    SyntheticRuntime rt(planes, &recorder, {.seed = kSeed, .wait_bound = kIdleBound});
    for (uint64_t i = 0; i < kConversations; ++i) {
      EXPECT_TRUE(rt.Turn(rt.NewConversation(), kTurnTokens).ok());
      EXPECT_TRUE(rt.WaitForStores().ok());
    }
  }
  EXPECT_TRUE((*store)->WaitIdle(kIdleBound));
  EXPECT_TRUE((*store)->Close().ok());
  return recorder.acked;
}

class PowerLossTest : public ::testing::TestWithParam<Case> {};

TEST_P(PowerLossTest, RestartKeepsWhatWasPromisedAndNeverRestoresBadBytes) {
  const Case c = GetParam();
  HostPlanes planes(*PresetGeometry("tiny", 1, 512, 16));
  ScratchDir dir;
  PosixFileSystem posix;
  {
    Result<int> fd = posix.OpenDirectory(dir.path(), DirectoryMissing::kFail);
    ASSERT_TRUE(fd.ok());
    STRATA_SKIP_WITHOUT_DIRECT_IO(posix, *fd, dir.path());
    posix.Close(*fd);
  }
  CrashFileSystem crash(posix);
  const std::unordered_set<PrefixKey> acked = RunBeforeTheCut(dir.path(), planes, crash, c.setting);
  ASSERT_GE(acked.size(), kConversations);
  Result<CrashReport> cut = crash.SimulateCrash(c.mode);
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  if (c.setting == Setting::kNone) {
    EXPECT_GT(cut->ranges_zeroed, 0u) << "the cut forgot nothing: the test proves nothing";
  }

  // Restart on the real filesystem from what survived.
  const CacheGeometry& g = planes.geometry();
  LocalDiskOptions o;
  o.base_dir = dir.path();
  o.host_headroom_bytes = 16ull << 20;
  Result<std::unique_ptr<LocalDisk>> disk =
      LocalDisk::Open(g, Identity(), ComputeLayoutFingerprint(g), o);
  ASSERT_TRUE(disk.ok()) << disk.status().ToString();
  auto store = *DiskStore::Open(g, *(*disk)->MakeTransport(*MakeHostTransfers(planes)),
                                (*disk)->scan().records, StoreOptions());
  if (c.setting != Setting::kNone) {
    for (const PrefixKey& k : acked) {
      EXPECT_TRUE(store->index().Contains(k))
          << "acknowledged record " << k.ToFileStem() << " lost at the power cut";
    }
  }
  // The same conversations again: every host hit restores and checks bytes.
  SyntheticRuntime rt(planes, store.get(), {.seed = kSeed, .wait_bound = kIdleBound});
  for (uint64_t i = 0; i < kConversations; ++i) {
    ASSERT_TRUE(rt.Turn(rt.NewConversation(), kTurnTokens).ok());
    ASSERT_TRUE(rt.WaitForStores().ok());
  }
  EXPECT_EQ(rt.stats().mismatches, 0u) << "a torn or corrupt record was restored";
  if (c.setting != Setting::kNone) {
    EXPECT_GE(rt.stats().host_hits, kConversations);
    EXPECT_EQ(store->Stats().fetch_failed, 0u);
  }
  EXPECT_TRUE(store->WaitIdle(kIdleBound));
  EXPECT_TRUE(store->Close().ok());
  store.reset();
  (*disk).reset();
  if (c.setting != Setting::kNone) {
    Result<FsckReport> fsck = RunFsck(posix, dir.path(), {});
    ASSERT_TRUE(fsck.ok()) << fsck.status().ToString();
    EXPECT_TRUE(fsck->clean()) << fsck->problems.front().name << ": "
                               << fsck->problems.front().detail;
  }
}

INSTANTIATE_TEST_SUITE_P(Cuts, PowerLossTest,
                         ::testing::Values(Case{Setting::kDefault, CrashMode::kForgetAll},
                                           Case{Setting::kDefault, CrashMode::kForgetSomeData},
                                           Case{Setting::kSync, CrashMode::kForgetAll},
                                           Case{Setting::kNone, CrashMode::kForgetAll},
                                           Case{Setting::kNone, CrashMode::kForgetSomeData}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           const Case& c = info.param;
                           const std::string setting = c.setting == Setting::kDefault ? "Default"
                                                       : c.setting == Setting::kSync  ? "Sync"
                                                                                      : "None";
                           return setting + (c.mode == CrashMode::kForgetAll ? "ForgetAll"
                                                                             : "ForgetSomeData");
                         });

}  // namespace
}  // namespace strata
