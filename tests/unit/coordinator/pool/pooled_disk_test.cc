// The pooled configurations whose local chain ends in a disk tier, or is
// empty (docs/pool.md, "Configurations"): two instances and a manager in one
// process, over the manager's real socket and arena. A record evicted off
// A's disk tier (disk + pool, memory + disk + pool) is read back, reaches the
// pool, and B restores it byte-exact (the synthetic runtime checks every
// restored byte) with a disk tier or with none; a refused put drops the
// record at the end of the chain, counted; a corrupt pooled record is
// refused, not restored.
#include <gtest/gtest.h>

#include <thread>

#include <variant>

#include "coordinator/pool/pool_server.h"
#include "coordinator/pool/pooled_store.h"
#include "launch/presets.h"
#include "launch/runtime/synthetic_runtime.h"
#include "store/tier/composite/composite_store.h"
#include "store/tier/disk_store.h"
#include "store/tier/local_disk.h"
#include "store/tier/memory_store.h"
#include "store/transfer/host_planes.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata::pool {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kConversationTokens = 640;  // one 10-page record each
constexpr int kConversations = 6;
constexpr uint64_t kRecordsOnDisk = 3;  // the disk limit, in 10-page records
constexpr uint64_t kWarmSlots = 24;     // a composite's memory: about two records
constexpr uint64_t kLandingSlots = 64;  // where claims land: several records

enum class Chain : uint8_t { kDisk, kMemoryAndDisk, kPoolOnly };

// One instance: synthetic planes, its local chain (a disk store, a composite
// or nothing), the pool's landing tier, its pool link and runtime.
struct Instance {
  Instance(const std::string& socket_path, const std::string& source, Chain chain,
           const std::string& base)
      : geometry(*PresetGeometry("tiny", 1, 512, 16)), planes(geometry) {
    const RecordLayout layout(geometry);
    if (chain != Chain::kPoolOnly) {
      LocalDiskOptions o;
      o.base_dir = base;
      o.host_headroom_bytes = 64ull << 20;
      o.durability = Durability::kNone;
      o.warm_slots = chain == Chain::kMemoryAndDisk ? kWarmSlots : 0;
      Result<std::unique_ptr<LocalDisk>> d =
          LocalDisk::Open(geometry, ComputeNamespaceIdentity("test-model", StateMode::kOrdinary),
                          ComputeLayoutFingerprint(geometry), o);
      open = d.status();
      if (!d.ok()) return;
      disk = std::move(*d);
      auto transport = *disk->MakeTransport(*MakeHostTransfers(planes));
      const uint64_t limit = kRecordsOnDisk * RecordFileBytes(layout, {.tail_pages = 10});
      if (chain == Chain::kDisk) {
        disk_store = *DiskStore::Open(geometry, std::move(transport), disk->scan().records,
                                      {.disk_limit_bytes = limit});
        local = disk_store.get();
      } else {
        CompositeStoreOptions co;
        co.disk_limit_bytes = limit;
        composite = *CompositeStore::Open(geometry, disk->pool(), *MakeHostTransfers(planes),
                                          std::move(transport), disk->scan().records, co);
        local = composite.get();
      }
    }
    landing = std::make_unique<MemoryStore>(
        geometry,
        std::shared_ptr<SlabPool>(*SlabPool::Create(layout.page_record_bytes(), kLandingSlots, 0)),
        *MakeHostTransfers(planes));
    PoolLinkOptions link;
    link.client.socket_path = socket_path;
    link.client.hello = InstanceHello(geometry, NamespaceIdentity{3}, {source});
    link.startup_retry_interval = 10ms;
    std::unique_ptr<PoolLink> attached = PoolLink::AttachAtStartup(link);
    pool_link = attached.get();
    pooled = std::make_unique<PooledStore>(
        PooledTiers{.local = local,
                    .landing = landing.get(),
                    .intake = landing.get(),
                    .end_of_chain_tier = "disk",
                    .publish_from = chain == Chain::kPoolOnly ? landing.get() : nullptr},
        std::move(attached));
    if (disk_store) disk_store->SetEvictionSink(pooled.get());
    if (composite) composite->SetEvictionSink(pooled.get());
    runtime = std::make_unique<SyntheticRuntime>(planes, pooled.get(),
                                                 SyntheticRuntimeOptions{.seed = 1});
  }
  ~Instance() {
    runtime.reset();
    if (pooled) {
      EXPECT_TRUE(pooled->Close().ok());
    }
    if (disk_store) disk_store->SetEvictionSink(nullptr);
    if (composite) composite->SetEvictionSink(nullptr);
  }

  // Runs `conversations` one-turn conversations, then waits for the disk
  // tier's writes and handovers.
  void Compute(int conversations = kConversations) {
    for (int i = 0; i < conversations; ++i) {
      EXPECT_TRUE(runtime->Turn(runtime->NewConversation(), kConversationTokens).ok());
      EXPECT_TRUE(runtime->WaitForStores().ok());
    }
    if (disk_store) {
      EXPECT_TRUE(disk_store->WaitIdle(10s));
    }
    if (composite) {
      EXPECT_TRUE(composite->WaitIdle(1'000'000, 10s));
    }
    // Puts go on answers as they arrive: settle them (or their gates).
    (void)pooled->FlushPuts(10s);
  }
  uint64_t disk_evictions() const {
    return local != nullptr ? local->Stats().disk.evicted_total : 0;
  }

  Status open;
  CacheGeometry geometry;
  HostPlanes planes;
  std::unique_ptr<LocalDisk> disk;
  std::unique_ptr<DiskStore> disk_store;
  std::unique_ptr<CompositeStore> composite;
  HostStore* local = nullptr;
  std::unique_ptr<MemoryStore> landing;
  PoolLink* pool_link = nullptr;  // owned by `pooled`
  std::unique_ptr<PooledStore> pooled;
  std::unique_ptr<SyntheticRuntime> runtime;
};

#define SKIP_WITHOUT_DIRECT_IO(instance)                                 \
  if ((instance).open.code() == StatusCode::kFailedPrecondition &&       \
      (instance).open.message().find("O_DIRECT") != std::string::npos) { \
    GTEST_SKIP() << (instance).open.message();                           \
  }                                                                      \
  ASSERT_TRUE((instance).open.ok()) << (instance).open.ToString()

class PooledDiskTest : public ::testing::TestWithParam<Chain> {
 protected:
  // A manager on a socket in a scratch directory; `slot_count` slots of 64 KiB.
  void StartManager(uint32_t slot_count) {
    PoolServerOptions options;
    options.name = "shared";
    options.socket_path = socket_path();
    options.slot_bytes = 64 * 1024;
    options.slot_count = slot_count;
    options.huge_pages = HugePages::kNever;
    auto server = PoolServer::Start(options, 5);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }
  std::string socket_path() const { return sockets_.path() + "/pool.sock"; }

  // B (a disk instance, or one with no local tier) turns conversation 0, the
  // first A evicted off its disk, by five tokens.
  TurnReport TurnFirst(Instance& b) {
    std::vector<uint32_t> convs(kConversations);
    for (uint32_t& c : convs) c = b.runtime->NewConversation();
    Result<TurnReport> t = b.runtime->Turn(convs[0], kConversationTokens + 5);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? *t : TurnReport{};
  }

  testing::ScratchDir sockets_;
  testing::ScratchDir dir_a_;
  testing::ScratchDir dir_b_;
  std::unique_ptr<PoolServer> server_;
};

TEST_P(PooledDiskTest, RecordsEvictedOffTheDiskReachThePoolAndAnotherInstanceRestoresThem) {
  StartManager(512);
  Instance a(socket_path(), "host-a", GetParam(), dir_a_.path());
  SKIP_WITHOUT_DIRECT_IO(a);
  ASSERT_TRUE(a.pooled->link().sharing());
  a.Compute();
  const PoolInstanceStats put = a.pooled->pool_stats();
  EXPECT_GT(a.disk_evictions(), 0u);
  EXPECT_GT(put.puts, 0u) << "records evicted off the disk went to the manager";
  EXPECT_EQ(put.dropped_end_of_chain, 0u);
  EXPECT_EQ(put.end_of_chain_tier, "disk");

  for (Chain b_chain : {Chain::kDisk, Chain::kPoolOnly}) {
    SCOPED_TRACE(b_chain == Chain::kDisk ? "B with a disk tier" : "B with the pool only");
    testing::ScratchDir dir_b;
    Instance b(socket_path(), "host-b", b_chain, dir_b.path());
    ASSERT_TRUE(b.open.ok()) << b.open.ToString();
    const TurnReport t = TurnFirst(b);
    EXPECT_TRUE(t.host_hit);
    EXPECT_EQ(t.host_reused_tokens, kConversationTokens);
    EXPECT_EQ(t.computed_tokens, 5u);
    EXPECT_EQ(b.runtime->stats().mismatches, 0u);
    EXPECT_GT(b.runtime->stats().restored_bytes, 0u);
    const PoolInstanceStats claimed = b.pooled->pool_stats();
    EXPECT_EQ(claimed.claims, 1u);
    EXPECT_EQ(claimed.claim_failures, 0u);
    EXPECT_GT(b.pooled->Stats().memory.stored_total, 0u) << "the claim landed in DRAM";
  }
}

TEST_P(PooledDiskTest, ARefusedPutDropsTheRecordAtTheEndOfTheChainCounted) {
  StartManager(1);  // one 64 KiB slot: every 10-page record exceeds the arena
  Instance a(socket_path(), "host-a", GetParam(), dir_a_.path());
  SKIP_WITHOUT_DIRECT_IO(a);
  ASSERT_TRUE(a.pooled->link().sharing());
  a.Compute();
  const PoolInstanceStats put = a.pooled->pool_stats();
  EXPECT_GT(a.disk_evictions(), 0u);
  EXPECT_EQ(put.puts, 0u);
  EXPECT_FALSE(put.put_refusals.empty());
  EXPECT_EQ(put.dropped_end_of_chain, a.disk_evictions());
  // Larger than the manager's arena: given up at once, not parked.
  EXPECT_EQ(put.put_abandoned.at("oversize"), a.disk_evictions());
  EXPECT_EQ(put.parked_records, 0u);
  // The disk keeps what fits (a composite also indexes its parked records).
  EXPECT_GE(a.local->Stats().disk.records, kRecordsOnDisk);

  Instance b(socket_path(), "host-b", Chain::kPoolOnly, dir_b_.path());
  const TurnReport t = TurnFirst(b);
  EXPECT_FALSE(t.host_hit) << "the pool holds nothing";
  EXPECT_EQ(b.pooled->pool_stats().claims, 0u);
}

TEST_P(PooledDiskTest, ACorruptPooledRecordIsRefusedNotRestored) {
  StartManager(512);
  Instance a(socket_path(), "host-a", GetParam(), dir_a_.path());
  SKIP_WITHOUT_DIRECT_IO(a);
  a.Compute();
  ASSERT_GT(a.pooled->pool_stats().puts, 0u);
  // Every slot of the shared arena gets one flipped byte.
  const Arena& arena = a.pool_link->client()->arena();
  for (uint32_t s = 0; s < arena.slot_count(); ++s) {
    std::span<std::byte> slot = arena.Slot(SlotId(s));
    slot[slot.size() / 2] ^= std::byte{0x5a};
  }
  Instance b(socket_path(), "host-b", Chain::kDisk, dir_b_.path());
  ASSERT_TRUE(b.open.ok()) << b.open.ToString();
  const TurnReport t = TurnFirst(b);
  EXPECT_FALSE(t.host_hit) << "a record failing its checksum is not restored";
  EXPECT_EQ(t.computed_tokens, kConversationTokens + 5);
  EXPECT_EQ(b.runtime->stats().mismatches, 0u);
  const PoolInstanceStats claimed = b.pooled->pool_stats();
  EXPECT_EQ(claimed.claims, 0u);
  EXPECT_EQ(claimed.claim_failures, 1u);
  EXPECT_EQ(b.pooled->Stats().memory.records, 0u) << "nothing corrupt landed";
}

TEST_P(PooledDiskTest, TheDiskDemotesItsColdestRecordToThePoolBeforeItFills) {
  StartManager(512);
  Instance a(socket_path(), "host-a", GetParam(), dir_a_.path());
  SKIP_WITHOUT_DIRECT_IO(a);
  ASSERT_TRUE(a.pooled->link().sharing());
  // As many records as the disk holds: no store needs room, but the charge
  // is above the headroom floor, so the coldest record is demoted.
  a.Compute(static_cast<int>(kRecordsOnDisk) + (GetParam() == Chain::kMemoryAndDisk ? 2 : 0));
  // The put's outcome reaches the tier at a poll; a scan that found every
  // leaf still being written waits DiskFiles::kDemotionIdleMs.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (a.local->Stats().disk.demoted_total == 0 && std::chrono::steady_clock::now() < deadline) {
    a.runtime->PollOnce();
    (void)a.pooled->FlushPuts(10s);
    std::this_thread::sleep_for(10ms);
  }
  const StoreStats local = a.local->Stats();
  EXPECT_GT(local.disk.demoted_total, 0u);
  // Records on disk (a composite's count also has those parked in DRAM).
  EXPECT_LT(local.disk.records - local.parked_records, kRecordsOnDisk)
      << "let go once the manager accepted it";
  const PoolInstanceStats put = a.pooled->pool_stats();
  EXPECT_GE(put.puts, local.disk.demoted_total);
  EXPECT_EQ(put.dropped_end_of_chain, 0u);
  EXPECT_EQ(put.demotions_given_up, 0u);

  Instance b(socket_path(), "host-b", Chain::kPoolOnly, dir_b_.path());
  ASSERT_TRUE(b.open.ok()) << b.open.ToString();
  const TurnReport t = TurnFirst(b);
  EXPECT_TRUE(t.host_hit) << "the demoted record is restored from the pool";
  EXPECT_EQ(t.host_reused_tokens, kConversationTokens);
  EXPECT_EQ(b.runtime->stats().mismatches, 0u);
}

// The pool-only instance's own tests (the fixture's parameter is unused).
class PoolOnlyTest : public PooledDiskTest {};

TEST_F(PoolOnlyTest, PublishedCheckpointsReachThePoolAndStayAfterTheSessionEnds) {
  StartManager(512);
  uint64_t puts = 0;
  {
    Instance a(socket_path(), "host-a", Chain::kPoolOnly, dir_a_.path());
    ASSERT_TRUE(a.open.ok()) << a.open.ToString();
    ASSERT_TRUE(a.pooled->link().sharing());
    a.Compute();
    const PoolInstanceStats s = a.pooled->pool_stats();
    EXPECT_EQ(s.published, static_cast<uint64_t>(kConversations));
    EXPECT_EQ(s.puts, static_cast<uint64_t>(kConversations)) << "each stored record, once";
    EXPECT_EQ(s.parked_records, 0u);
    EXPECT_EQ(s.dropped_end_of_chain, 0u);
    EXPECT_TRUE(s.put_refusals.empty());
    puts = s.puts;
  }
  // A's session ended: what it published was put as cascaded, so it stays.
  EXPECT_EQ(server_->Stats().catalog.records, puts);

  Instance b(socket_path(), "host-b", Chain::kPoolOnly, dir_b_.path());
  ASSERT_TRUE(b.open.ok()) << b.open.ToString();
  const TurnReport t = TurnFirst(b);
  EXPECT_TRUE(t.host_hit);
  EXPECT_EQ(t.host_reused_tokens, kConversationTokens);
  EXPECT_EQ(t.computed_tokens, 5u);
  EXPECT_EQ(b.runtime->stats().mismatches, 0u) << "restored byte for byte";
  EXPECT_GT(b.runtime->stats().restored_bytes, 0u);
  EXPECT_EQ(b.pooled->pool_stats().claims, 1u);
}

TEST_F(PoolOnlyTest, AMultiTurnChainIsPutParentFirstAndRestoredWhole) {
  StartManager(512);
  {
    Instance a(socket_path(), "host-a", Chain::kPoolOnly, dir_a_.path());
    ASSERT_TRUE(a.open.ok()) << a.open.ToString();
    const uint32_t c = a.runtime->NewConversation();
    for (int turn = 0; turn < 3; ++turn) {  // a root, then two records under it
      ASSERT_TRUE(a.runtime->Turn(c, kConversationTokens).ok());
    }
    ASSERT_TRUE(a.runtime->WaitForStores().ok());
    (void)a.pooled->FlushPuts(10s);
    const PoolInstanceStats s = a.pooled->pool_stats();
    EXPECT_EQ(s.published, 3u);
    EXPECT_EQ(s.puts, 3u);
    EXPECT_TRUE(s.put_refusals.empty()) << "every parent was pooled before its child";
  }
  EXPECT_EQ(server_->Stats().catalog.records, 3u);

  Instance b(socket_path(), "host-b", Chain::kPoolOnly, dir_b_.path());
  ASSERT_TRUE(b.open.ok()) << b.open.ToString();
  const uint32_t c = b.runtime->NewConversation();
  Result<TurnReport> t = b.runtime->Turn(c, 3 * kConversationTokens + 5);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->host_hit);
  EXPECT_EQ(t->host_reused_tokens, 3 * kConversationTokens) << "the whole chain, claimed";
  EXPECT_EQ(b.runtime->stats().mismatches, 0u);
}

INSTANTIATE_TEST_SUITE_P(EndOfChain, PooledDiskTest,
                         ::testing::Values(Chain::kDisk, Chain::kMemoryAndDisk),
                         [](const ::testing::TestParamInfo<Chain>& info) {
                           return info.param == Chain::kDisk ? "DiskAndPool" : "MemoryDiskAndPool";
                         });

}  // namespace
}  // namespace strata::pool
