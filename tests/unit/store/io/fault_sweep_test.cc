// The Nth-I/O-error sweep (SQLite style) over a DiskStore with durability on:
// for each operation kind and injected error, N walks from 1 upward through a
// store / fetch / restart workload until the Nth operation of that kind no
// longer happens. Every run starts from a directory that already holds the
// records of a fault-free run, so the startup scan's opens and reads are in
// the sweep too; a record the scan could not read must be quarantined, never
// deleted. Every case must inject at least one fault. After every run: no crash, no restored byte
// differs, every publication got its event, nothing leaked (slab slots, index invariants), the
// failure showed in the right counter, and after a fault-free restart every record the first run
// still held (acknowledged, not evicted or dropped) is there and the whole directory verifies
// byte-exact (fsck).
#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <functional>
#include <iostream>
#include <unordered_set>

#include "launch/presets.h"
#include "launch/record_tools.h"
#include "launch/runtime/synthetic_runtime.h"
#include "store/io/fault_plan.h"
#include "store/io/faulty_block_io.h"
#include "store/io/faulty_file_system.h"
#include "store/tier/composite/composite_store.h"
#include "store/tier/disk_store.h"
#include "store/tier/local_disk.h"
#include "store/transfer/host_planes.h"
#include "tests/unit/store/io/ack_recorder.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

using testing::ScratchDir;

constexpr uint64_t kSweepLimit = 400;  // bound on N for one operation kind
constexpr std::chrono::seconds kIdleBound{30};
constexpr uint64_t kConversations = 3;
constexpr uint64_t kTurnTokens = 640;

struct Case {
  FaultOp op;
  FaultEffect effect;
  int error;
  bool composite = false;  // a CompositeStore (memory over disk) instead of a DiskStore
};

std::string CaseName(const Case& c) {
  std::string name = std::string(c.composite ? "composite-" : "") + std::string(FaultOpName(c.op));
  if (c.effect == FaultEffect::kShort) return name + "/short";
  return name + "/" + (c.error == ENOSPC ? "ENOSPC" : c.error == EINTR ? "EINTR" : "EIO");
}

// What one faulty run left behind, for the checks after the restart.
struct RunResult {
  bool opened = false;
  std::unordered_set<PrefixKey> acked;
  std::vector<PrefixKey> held;  // in the index at close
  StoreStats stats;
};

// The faulty run syncs (an acknowledgement means durable); the checking
// restart need not.
LocalDiskOptions DiskOptions(const std::string& base, Durability durability) {
  LocalDiskOptions o;
  o.base_dir = base;
  o.host_headroom_bytes = 16ull << 20;
  o.durability = durability;
  return o;
}

DiskStoreOptions StoreOptions(const CacheGeometry& g) {
  // Room for two and a half of the three conversations: evictions (unlinks) happen.
  const uint64_t one = RecordFileBytes(
      RecordLayout(g), {.tail_pages = static_cast<uint32_t>(kTurnTokens / g.page_tokens)});
  return {.disk_limit_bytes = 2 * one + one / 2};
}

// The workload: conversations stored to disk, the GPU cache dropped, then
// every conversation resumed (disk restores, checked byte for byte).
// `settle` runs after each conversation's store (a composite's spills
// finish, so the same records reach disk whatever the machine's speed).
void RunWorkload(
    SyntheticRuntime& rt, const std::function<void()>& settle = [] {}) {
  std::vector<uint32_t> convs;
  for (uint64_t i = 0; i < kConversations; ++i) {
    convs.push_back(rt.NewConversation());
    Result<TurnReport> t = rt.Turn(convs.back(), kTurnTokens);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    ASSERT_TRUE(rt.WaitForStores().ok());
    settle();
  }
  rt.EvictGpu();
  // Most recent first: the oldest was evicted for capacity and resuming it
  // stores a new record, which would evict the next one before its restore.
  for (auto it = convs.rbegin(); it != convs.rend(); ++it) {
    const uint32_t c = *it;
    Result<TurnReport> t = rt.Turn(c, 8);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
  }
  ASSERT_TRUE(rt.WaitForStores().ok());
  EXPECT_EQ(rt.stats().mismatches, 0u);
}

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

RunResult FaultyRun(const std::string& base, HostPlanes& planes, const FaultPlan& plan,
                    FaultCounters& counters, bool composite_store) {
  RunResult r;
  PosixFileSystem posix;
  FaultyFileSystem fs(posix, plan, counters);
  LocalDiskOptions o = DiskOptions(base, Durability::kSync);
  // A composite's memory tier holds one conversation: each store evicts the
  // one before it (written by then: the workload settles), so resuming it
  // reads its file (block reads), and the oldest leaves the disk.
  if (composite_store) o.warm_slots = 14;
  o.file_system = &fs;
  o.wrap_block_io = [&](std::unique_ptr<BlockIo> io) -> std::unique_ptr<BlockIo> {
    return std::make_unique<FaultyBlockIo>(std::move(io), plan, counters);
  };
  const CacheGeometry& g = planes.geometry();
  const NamespaceIdentity identity = ComputeNamespaceIdentity("sweep-model", StateMode::kOrdinary);
  Result<std::unique_ptr<LocalDisk>> disk =
      LocalDisk::Open(g, identity, ComputeLayoutFingerprint(g), o);
  if (!disk.ok()) {
    // Only an injected fault may keep the store from opening.
    EXPECT_GT(counters.fired_total(), 0u) << disk.status().ToString();
    return r;
  }
  // A scan read or open that failed quarantined the file: it is kept.
  const uint64_t scan_faults = counters.fired(FaultOp::kReadAt) + counters.fired(FaultOp::kOpen);
  if (scan_faults > 0) {
    EXPECT_FALSE((*disk)->cleanup().quarantined.empty());
  }
  for (const std::string& q : (*disk)->cleanup().quarantined) {
    const std::string name = q.substr(0, q.find(':'));
    EXPECT_TRUE(std::filesystem::exists((*disk)->path() + "/quarantine/" + name))
        << "unreadable record " << name << " was not kept";
  }
  Result<std::unique_ptr<StagedTransport>> transport =
      (*disk)->MakeTransport(*MakeHostTransfers(planes));
  EXPECT_TRUE(transport.ok());
  if (!transport.ok()) return r;
  std::unique_ptr<DiskStore> disk_store;
  std::unique_ptr<CompositeStore> composite;
  HostStore* store = nullptr;
  const PrefixIndex* disk_index = nullptr;
  Status opened;
  if (composite_store) {
    Result<std::unique_ptr<Transfers>> memory = MakeHostTransfers(planes);
    EXPECT_TRUE(memory.ok());
    if (!memory.ok()) return r;
    CompositeStoreOptions co;
    co.disk_limit_bytes = StoreOptions(g).disk_limit_bytes;
    Result<std::unique_ptr<CompositeStore>> c = CompositeStore::Open(
        g, (*disk)->pool(), std::move(*memory), std::move(*transport), (*disk)->scan().records, co);
    opened = c.status();
    if (c.ok()) {
      composite = std::move(*c);
      store = composite.get();
      disk_index = &composite->disk().index();
    }
  } else {
    Result<std::unique_ptr<DiskStore>> d =
        DiskStore::Open(g, std::move(*transport), (*disk)->scan().records, StoreOptions(g));
    opened = d.status();
    if (d.ok()) {
      disk_store = std::move(*d);
      store = disk_store.get();
      disk_index = &disk_store->index();
    }
  }
  if (store == nullptr) {
    EXPECT_GT(counters.fired_total(), 0u) << opened.ToString();
    return r;
  }
  r.opened = true;
  {
    testing::AckRecorder recorder(*store);
    SyntheticRuntime rt(planes, &recorder, {.seed = 11, .wait_bound = std::chrono::seconds(30)});
    RunWorkload(rt, [&] {
      // Write-behind done before the next store needs room: on a slow
      // machine that store would otherwise find nothing clean to evict.
      if (composite) (void)composite->WaitIdle(NowMs(), kIdleBound);
    });
    r.acked = recorder.acked;
  }
  if (composite) {
    EXPECT_TRUE(composite->WaitIdle(NowMs(), kIdleBound));
    const Status invariants = composite->CheckInvariants();
    EXPECT_TRUE(invariants.ok()) << invariants.ToString();
  } else {
    EXPECT_TRUE(disk_store->WaitIdle(kIdleBound));
    EXPECT_TRUE(disk_index->CheckInvariants().ok());
  }
  r.stats = store->Stats();
  // A composite keeps memory copies in the pool; its invariants check those slots.
  if (!composite) {
    EXPECT_EQ(r.stats.slots_in_use, 0u) << "slab slots leaked";
  }
  for (const PrefixKey& k : r.acked) {
    const std::optional<IndexEntry> e = disk_index->Find(k);
    if (e && e->state == TransferState::kReady) r.held.push_back(k);
  }
  if (!composite) {
    // Acknowledged records the store let go of were evicted or dropped, and counted.
    EXPECT_LE(r.acked.size() - r.held.size(),
              r.stats.disk.evicted_total + r.stats.disk.dropped_io_total);
  }
  EXPECT_TRUE(store->Close().ok());
  composite.reset();
  disk_store.reset();
  return r;
}

// Reopens without faults: what the first run held is restorable, and every
// file verifies; then the workload replays against the survivors.
void CheckAfterRestart(const std::string& base, HostPlanes& planes, const RunResult& first) {
  const CacheGeometry& g = planes.geometry();
  const NamespaceIdentity identity = ComputeNamespaceIdentity("sweep-model", StateMode::kOrdinary);
  {
    Result<std::unique_ptr<LocalDisk>> disk = LocalDisk::Open(
        g, identity, ComputeLayoutFingerprint(g), DiskOptions(base, Durability::kNone));
    ASSERT_TRUE(disk.ok()) << disk.status().ToString();
    auto store = *DiskStore::Open(g, *(*disk)->MakeTransport(*MakeHostTransfers(planes)),
                                  (*disk)->scan().records, StoreOptions(g));
    for (const PrefixKey& k : first.held) {
      EXPECT_TRUE(store->index().Contains(k))
          << "acknowledged record " << k.ToFileStem() << " lost across the restart";
    }
    SyntheticRuntime rt(planes, store.get(), {.seed = 11, .wait_bound = std::chrono::seconds(30)});
    RunWorkload(rt);
    EXPECT_EQ(rt.stats().store_failed, 0u);
    EXPECT_TRUE(store->WaitIdle(kIdleBound));
    EXPECT_EQ(store->Stats().slots_in_use, 0u);
    EXPECT_TRUE(store->Close().ok());
  }
  PosixFileSystem fs;
  Result<FsckReport> fsck = RunFsck(fs, base, {});
  ASSERT_TRUE(fsck.ok()) << fsck.status().ToString();
  EXPECT_TRUE(fsck->clean()) << fsck->problems.size()
                             << " problems, first: " << fsck->problems.front().name << ": "
                             << fsck->problems.front().detail;
}

// Whether the run shows the fault it took in a counter (or an open error).
bool Observed(const Case& c, const RunResult& r) {
  if (!r.opened) return true;
  const StoreStats& s = r.stats;
  switch (c.op) {
    case FaultOp::kAllocate:
    case FaultOp::kBlockWrite:
    case FaultOp::kBlockSync:
    case FaultOp::kRename: return s.store_failed + s.fs_full_retries + s.disk.dropped_io_total > 0;
    case FaultOp::kBlockRead: return s.fetch_failed + s.disk.dropped_io_total > 0;
    default: return true;  // not tied to one counter
  }
}

class FaultSweepTest : public ::testing::TestWithParam<Case> {};

TEST_P(FaultSweepTest, EveryNthOperationFailsCleanly) {
  const Case c = GetParam();
  HostPlanes planes(*PresetGeometry("tiny", 1, 512, 16));
  {
    ScratchDir probe;
    PosixFileSystem fs;
    Result<int> fd = fs.OpenDirectory(probe.path(), DirectoryMissing::kFail);
    ASSERT_TRUE(fd.ok());
    const Status direct = ProbeDirectIo(fs, *fd, probe.path());
    fs.Close(*fd);
    if (!direct.ok()) GTEST_SKIP() << "no O_DIRECT here: " << direct.message();
  }
  // The directory every run starts from: the records of a fault-free run.
  ScratchDir seeded;
  {
    FaultCounters none;
    const RunResult seed_run = FaultyRun(seeded.path(), planes, FaultPlan(), none, c.composite);
    ASSERT_TRUE(seed_run.opened);
    ASSERT_FALSE(seed_run.held.empty());
  }
  uint64_t fired_runs = 0;
  uint64_t n = 1;
  for (; n <= kSweepLimit; ++n) {
    ScratchDir dir;
    std::filesystem::copy(seeded.path(), dir.path(), std::filesystem::copy_options::recursive);
    FaultCounters counters;
    const FaultPlan plan = FaultPlan::Nth(c.op, n, c.effect, c.error);
    const RunResult r = FaultyRun(dir.path(), planes, plan, counters, c.composite);
    const bool fired = counters.fired(c.op) > 0;
    if (fired && c.effect == FaultEffect::kError) {
      EXPECT_TRUE(Observed(c, r)) << "no counter moved";
    }
    CheckAfterRestart(dir.path(), planes, r);
    if (::testing::Test::HasFailure()) {
      std::cout << "fault sweep " << CaseName(c) << ": failed at N=" << n << "\n";
      return;
    }
    if (!fired) break;
    ++fired_runs;
  }
  EXPECT_LE(n, kSweepLimit) << "the workload never ran out of " << FaultOpName(c.op);
  EXPECT_GT(fired_runs, 0u) << "no " << FaultOpName(c.op) << " fault fired: the case tests nothing";
  std::cout << "fault sweep " << CaseName(c) << ": " << fired_runs << " faults injected\n";
}

INSTANTIATE_TEST_SUITE_P(
    Faults, FaultSweepTest,
    ::testing::Values(Case{FaultOp::kAllocate, FaultEffect::kError, ENOSPC},
                      Case{FaultOp::kAllocate, FaultEffect::kError, EIO},
                      Case{FaultOp::kBlockWrite, FaultEffect::kError, EIO},
                      Case{FaultOp::kBlockWrite, FaultEffect::kError, ENOSPC},
                      Case{FaultOp::kBlockWrite, FaultEffect::kError, EINTR},
                      Case{FaultOp::kBlockWrite, FaultEffect::kShort, 0},
                      Case{FaultOp::kBlockSync, FaultEffect::kError, EIO},
                      Case{FaultOp::kBlockRead, FaultEffect::kError, EIO},
                      Case{FaultOp::kRename, FaultEffect::kError, EIO},
                      Case{FaultOp::kUnlink, FaultEffect::kError, EIO},
                      Case{FaultOp::kOpen, FaultEffect::kError, EIO},
                      Case{FaultOp::kSync, FaultEffect::kError, EIO},
                      Case{FaultOp::kReadAt, FaultEffect::kError, EIO},
                      Case{FaultOp::kWriteAt, FaultEffect::kShort, 0},
                      Case{FaultOp::kAllocate, FaultEffect::kError, ENOSPC, true},
                      Case{FaultOp::kBlockWrite, FaultEffect::kError, EIO, true},
                      Case{FaultOp::kBlockRead, FaultEffect::kError, EIO, true},
                      Case{FaultOp::kRename, FaultEffect::kError, EIO, true}),
    [](const ::testing::TestParamInfo<Case>& info) {
      std::string name = CaseName(info.param);
      for (char& ch : name) {
        if (ch == '/' || ch == '-') ch = '_';
      }
      return name;
    });

// The random mode: a seeded plan over several kinds at once.
TEST(FaultSweepTest, SeededRandomFaultsKeepEveryInvariant) {
  HostPlanes planes(*PresetGeometry("tiny", 1, 512, 16));
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    ScratchDir dir;
    FaultCounters counters;
    const FaultPlan plan({FaultRule{.op = FaultOp::kBlockWrite, .probability = 0.15, .error = EIO},
                          FaultRule{.op = FaultOp::kBlockRead, .probability = 0.15, .error = EIO},
                          FaultRule{.op = FaultOp::kAllocate, .probability = 0.15, .error = ENOSPC},
                          FaultRule{.op = FaultOp::kUnlink, .probability = 0.1, .error = EIO}},
                         seed);
    const RunResult r = FaultyRun(dir.path(), planes, plan, counters, false);
    EXPECT_GT(counters.fired_total(), 0u) << "seed " << seed << " injected nothing";
    CheckAfterRestart(dir.path(), planes, r);
    if (::testing::Test::HasFailure()) {
      std::cout << "seeded fault run failed at seed " << seed << "\n";
      return;
    }
  }
}

}  // namespace
}  // namespace strata
