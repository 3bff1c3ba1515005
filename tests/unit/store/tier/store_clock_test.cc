// Stores read time only through the clock in their options: with a fake one,
// a latency and a header's creation time are what the test set, exactly,
// without sleeping.
#include <gtest/gtest.h>

#include "launch/presets.h"
#include "launch/runtime/synthetic_runtime.h"
#include "store/tier/disk_store.h"
#include "tests/unit/store/tier/composite/composite_test_support.h"
#include "tests/unit/store/tier/fake_store_clock.h"

namespace strata {
namespace {

using namespace std::chrono_literals;
using testing::FakeStoreClock;
using testing::FaultFileSystem;

constexpr auto kBound = 30s;

// A DiskStore over a staged transport on a FaultFileSystem, every part
// reading `clock`.
struct ClockedDisk {
  Status Open(const std::string& base, HostPlanes& planes, FaultFileSystem& fs,
              const StoreClock& clock) {
    const CacheGeometry& g = planes.geometry();
    identity = testing::TestIdentity();
    fingerprint = ComputeLayoutFingerprint(g);
    path = RecordDirPath(base, identity, fingerprint);
    STRATA_ASSIGN_OR_RETURN(dir, RecordDir::Open(fs, path, RecordDir::Create::kYes));
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<SlabPool> pool,
                            SlabPool::Create(RecordLayout(g).page_record_bytes(), 64, 16));
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<BlockIo> io, OpenUringBlockIo(64));
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DiskThread> thread,
                            DiskThread::Start(fs, std::move(io), dir->fd(), path, {}));
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> transfers, MakeHostTransfers(planes));
    auto transport = std::make_unique<StagedTransport>(g, identity, fingerprint, std::move(pool),
                                                       std::move(transfers), std::move(thread),
                                                       StagedOptions{.clock = clock});
    STRATA_ASSIGN_OR_RETURN(
        store,
        DiskStore::Open(g, std::move(transport), {},
                        {.disk_limit_bytes = 1ull << 30, .latencies = latencies, .clock = clock}));
    return Status::Ok();
  }
  Result<ScanReport> Scan(const CacheGeometry& g) const {
    return dir->Scan(ExpectationFor(identity, fingerprint, g));
  }

  NamespaceIdentity identity{};
  LayoutFingerprint fingerprint{};
  std::string path;
  std::unique_ptr<RecordDir> dir;
  std::shared_ptr<DiskJobLatencies> latencies = std::make_shared<DiskJobLatencies>();
  std::unique_ptr<DiskStore> store;
};

TEST(StoreClockTest, DiskStoreLatencyAndHeaderTimeComeFromTheInjectedClock) {
  testing::ScratchDir base;
  FaultFileSystem fs;
  FakeStoreClock clock;
  const auto wall = std::chrono::system_clock::time_point(1'700'000'000'123'456us);
  clock.SetWall(wall);
  HostPlanes planes(*PresetGeometry("tiny", 1, 512, 16));
  ClockedDisk disk;
  Status open = disk.Open(base.path(), planes, fs, clock.clock());
  if (open.code() == StatusCode::kFailedPrecondition &&
      open.message().find("O_DIRECT") != std::string::npos) {
    GTEST_SKIP() << open.message();
  }
  ASSERT_TRUE(open.ok()) << open.ToString();

  fs.Hold();  // the write waits in preallocation until released
  SyntheticRuntime rt(planes, disk.store.get());
  const uint32_t a = rt.NewConversation();
  ASSERT_TRUE(rt.Turn(a, 1000).ok());  // the store starts at the fake time
  // The transport submits the write once its staging copy lands, on a Poll.
  std::vector<StoreEvent> events;
  const auto until = std::chrono::steady_clock::now() + kBound;
  while (!fs.WaitUntilHeld(10ms) && std::chrono::steady_clock::now() < until) {
    disk.store->Poll(testing::NowMs(), events);
  }
  ASSERT_TRUE(fs.WaitUntilHeld(0ms));
  EXPECT_TRUE(events.empty());  // nothing finishes while the write is held
  clock.Advance(7ms);
  fs.Release();
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_EQ(rt.stats().stored, 1u);

  const LatencySnapshot stores = disk.latencies->store.Snapshot();
  EXPECT_EQ(stores.count(), 1u);
  EXPECT_EQ(stores.sum_us, 7'000u);  // exactly the time the test moved
  EXPECT_EQ(disk.latencies->fetch.Snapshot().count(), 0u);

  Result<ScanReport> scan = disk.Scan(planes.geometry());
  ASSERT_TRUE(scan.ok()) << scan.status().ToString();
  ASSERT_EQ(scan->records.size(), 1u);
  EXPECT_EQ(
      scan->records[0].header.created_unix_ns,
      static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(wall.time_since_epoch()).count()));
  EXPECT_TRUE(disk.store->Close().ok());
}

}  // namespace
}  // namespace strata
