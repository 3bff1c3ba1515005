#include "store/tier/memory_store.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "launch/presets.h"
#include "launch/runtime/synthetic_runtime.h"
#include "store/transfer/host_planes.h"

namespace strata {
namespace {

using namespace std::chrono_literals;

struct Fixture {
  Fixture(const char* preset, uint32_t ranks, uint64_t gpu_pages, uint64_t warm_slots,
          MemoryStoreOptions options = {})
      : geometry(*PresetGeometry(preset, ranks, gpu_pages, 16)), planes(geometry) {
    RecordLayout layout(geometry);
    pool = std::shared_ptr<SlabPool>(*SlabPool::Create(layout.page_record_bytes(), warm_slots, 0));
    store = std::make_unique<MemoryStore>(geometry, pool, *MakeHostTransfers(planes), options);
  }
  CacheGeometry geometry;
  HostPlanes planes;
  std::shared_ptr<SlabPool> pool;
  std::unique_ptr<MemoryStore> store;
};

// The checkpoint of `h`'s first `consumed` tokens (64-token pages 0, 1, ...,
// row slot 0), a root.
PublishedCheckpoint CheckpointAt(const PrefixHistory& h, uint64_t consumed, uint64_t id) {
  PublishedCheckpoint cp;
  cp.checkpoint_id = id;
  cp.key = h.key_at(consumed);
  cp.bucket = h.bucket_digest(consumed);
  for (uint32_t i = 0; i < consumed / 64; ++i) cp.chain.push_back(PageId(i));
  cp.row_slot = StateSlot(0);
  return cp;
}

TEST(MemoryStoreTest, HostRestoreAfterGpuEvictionIsByteExact) {
  for (uint32_t ranks : {1u, 2u}) {
    Fixture f("tiny", ranks, /*gpu_pages=*/256, /*warm_slots=*/2048);
    SyntheticRuntime rt(f.planes, f.store.get());
    uint32_t a = rt.NewConversation();
    ASSERT_TRUE(rt.Turn(a, 1000).ok());
    ASSERT_TRUE(rt.Turn(a, 500).ok());
    uint32_t b = rt.Branch(a, 1000);
    ASSERT_TRUE(rt.Turn(b, 300).ok());
    ASSERT_TRUE(rt.WaitForStores().ok());
    rt.EvictGpu();
    EXPECT_EQ(rt.gpu_checkpoints(), 0u);
    TurnReport t = *rt.Turn(a, 10);
    EXPECT_TRUE(t.host_hit);
    EXPECT_EQ(t.host_reused_tokens, 1500u);
    TurnReport u = *rt.Turn(b, 10);
    EXPECT_TRUE(u.host_hit);
    EXPECT_EQ(rt.stats().mismatches, 0u);
    EXPECT_GT(rt.stats().restored_bytes, 0u);
    EXPECT_TRUE(f.store->index().CheckInvariants().ok())
        << f.store->index().CheckInvariants().ToString();
  }
}

TEST(MemoryStoreTest, MultiWindowRecordsRoundTrip) {
  // 150 pages of 64 tokens: three transfer windows.
  Fixture f("tiny", 2, 400, 1024);
  SyntheticRuntime rt(f.planes, f.store.get());
  uint32_t a = rt.NewConversation();
  ASSERT_TRUE(rt.Turn(a, 150 * 64 + 17).ok());
  ASSERT_TRUE(rt.WaitForStores().ok());
  rt.EvictGpu();
  TurnReport t = *rt.Turn(a, 5);
  EXPECT_TRUE(t.host_hit);
  EXPECT_EQ(rt.stats().restored_pages, 150u);
  EXPECT_EQ(rt.stats().mismatches, 0u);
}

TEST(MemoryStoreTest, PoolPressureEvictsLeastRecentlyUsed) {
  // Room for about three 10-page records.
  Fixture f("tiny", 1, 512, 36);
  SyntheticRuntime rt(f.planes, f.store.get());
  std::vector<uint32_t> convs;
  for (int i = 0; i < 6; ++i) {
    convs.push_back(rt.NewConversation());
    ASSERT_TRUE(rt.Turn(convs.back(), 640).ok());
    ASSERT_TRUE(rt.WaitForStores().ok());
  }
  StoreStats s = f.store->Stats();
  EXPECT_GT(s.memory.evicted_total, 0u);
  EXPECT_LE(s.slots_in_use, 36u);
  rt.EvictGpu();
  EXPECT_FALSE(rt.Turn(convs[0], 5)->host_hit);  // evicted
  EXPECT_TRUE(rt.Turn(convs[5], 5)->host_hit);   // most recent
  EXPECT_EQ(rt.stats().mismatches, 0u);
}

TEST(MemoryStoreTest, OutcomesPresentOversizeDeferred) {
  Fixture f("tiny", 1, 512, 8);
  std::vector<Token> tokens(64 * 20, 7);
  PrefixHistory h(tokens);
  auto checkpoint = [&](uint64_t consumed, uint64_t id) { return CheckpointAt(h, consumed, id); };
  EXPECT_EQ(f.store->Store(checkpoint(64 * 20, 1)), StoreOutcome::kOversize);  // 20 pages > 8 slots
  EXPECT_EQ(f.store->Store(checkpoint(64 * 6, 2)), StoreOutcome::kQueued);     // 7 slots
  EXPECT_EQ(f.store->Store(checkpoint(64 * 6, 3)), StoreOutcome::kPresent);
  // The first copy is still pinned in flight: nothing can be evicted for this one.
  EXPECT_EQ(f.store->Store(checkpoint(64 * 3, 4)), StoreOutcome::kDeferred);
  StoreStats s = f.store->Stats();
  EXPECT_EQ(s.store_oversize, 1u);
  EXPECT_EQ(s.store_queued, 1u);
  EXPECT_EQ(s.store_present, 1u);
  EXPECT_EQ(s.store_deferred, 1u);
  ASSERT_TRUE(f.store->Close().ok());
}

TEST(MemoryStoreTest, AnEvictedCheckpointStillRefusedCountsAsAnAbandonedRetry) {
  Fixture f("tiny", 1, 512, 8);
  std::vector<Token> tokens(64 * 20, 7);
  PrefixHistory h(tokens);
  auto checkpoint = [&](uint64_t consumed, uint64_t id) { return CheckpointAt(h, consumed, id); };
  ASSERT_EQ(f.store->Store(checkpoint(64 * 6, 1)), StoreOutcome::kQueued);  // 7 of 8 slots
  // Pinned in flight, it cannot be evicted: both are refused for want of slots.
  ASSERT_EQ(f.store->Store(checkpoint(64 * 3, 2)), StoreOutcome::kDeferred);
  ASSERT_EQ(f.store->Store(checkpoint(64 * 2, 3)), StoreOutcome::kDeferred);
  std::vector<StoreEvent> events;
  for (int i = 0; i < 500 && events.empty(); ++i) {
    f.store->Poll(0, events);
    if (events.empty()) std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(events.size(), 1u);
  ASSERT_EQ(events[0].kind, StoreEvent::Kind::kStored);
  // The re-offer of the 2-page one is taken (it evicts the first): settled.
  ASSERT_EQ(f.store->Store(checkpoint(64 * 2, 4)), StoreOutcome::kQueued);
  const std::vector<EvictionNotice> notices = {{.key = h.key_at(64 * 3), .generation = 2},
                                               {.key = h.key_at(64 * 2), .generation = 3},
                                               {.key = h.key_at(64 * 6), .generation = 1}};
  f.store->Evicted(notices);
  const RetryCounts abandoned = f.store->Stats().retry_abandoned;
  EXPECT_EQ(abandoned[static_cast<size_t>(RetryCause::kSlabs)], 1u);
  EXPECT_EQ(abandoned[static_cast<size_t>(RetryCause::kQueue)], 0u);
  EXPECT_EQ(abandoned[static_cast<size_t>(RetryCause::kInflight)], 0u);
  EXPECT_EQ(abandoned[static_cast<size_t>(RetryCause::kBudget)], 0u);
  ASSERT_TRUE(f.store->Close().ok());
}

TEST(MemoryStoreTest, IdenticalRanksArePackedAndRestoredToEveryRank) {
  Fixture f("tiny", 2, 64, 64);
  const CacheGeometry& g = f.geometry;
  const uint32_t pages = 5;
  for (uint32_t r = 0; r < 2; ++r) {
    for (uint32_t p = 0; p < g.ranks[r].page_planes.size(); ++p) {
      for (uint32_t i = 0; i < pages; ++i)
        std::memset(f.planes.page(r, p, PageId(i)), 10 + i + p, 4096);
    }
    std::memset(f.planes.row(r, StateSlot(0)), 99, g.ranks[r].row.unit_bytes);
  }
  std::vector<Token> tokens(64 * pages, 3);
  PrefixHistory h(tokens);
  PublishedCheckpoint cp;
  cp.checkpoint_id = 1;
  cp.key = h.key_at(64 * pages);
  cp.bucket = h.bucket_digest(64 * pages);
  for (uint32_t i = 0; i < pages; ++i) cp.chain.push_back(PageId(i));
  cp.row_slot = StateSlot(0);
  ASSERT_EQ(f.store->Store(cp), StoreOutcome::kQueued);
  std::vector<StoreEvent> ev;
  for (int i = 0; i < 200 && ev.empty(); ++i) {
    std::this_thread::sleep_for(5ms);
    f.store->Poll(0, ev);
  }
  ASSERT_EQ(ev.size(), 1u);
  ASSERT_EQ(ev[0].kind, StoreEvent::Kind::kStored);
  StoreStats s = f.store->Stats();
  EXPECT_EQ(s.memory.packed_total, 1u);
  // 5 packed pages in 3 slots + 1 row slot (8 KiB row share < one 16 KiB slot).
  EXPECT_EQ(s.slots_in_use, 4u);
  for (uint32_t r = 0; r < 2; ++r) {
    std::memset(f.planes.page(r, 0, PageId(40)), 0, 4096);
  }
  std::optional<HostHit> hit = f.store->Lookup(h, 0, 64 * pages);
  ASSERT_TRUE(hit);
  InboundTicket t{
      JobId(7), {PageId(40), PageId(41), PageId(42), PageId(43), PageId(44)}, StateSlot(3)};
  ASSERT_TRUE(f.store->Fetch(*hit, t).ok());
  ev.clear();
  for (int i = 0; i < 200 && ev.empty(); ++i) {
    std::this_thread::sleep_for(5ms);
    f.store->Poll(0, ev);
  }
  ASSERT_EQ(ev.size(), 1u);
  ASSERT_EQ(ev[0].kind, StoreEvent::Kind::kFetched);
  for (uint32_t r = 0; r < 2; ++r) {
    for (uint32_t p = 0; p < g.ranks[r].page_planes.size(); ++p) {
      for (uint32_t i = 0; i < pages; ++i) {
        EXPECT_EQ(f.planes.page(r, p, PageId(40 + i))[100], 10 + i + p)
            << r << " " << p << " " << i;
      }
    }
    EXPECT_EQ(f.planes.row(r, StateSlot(3))[5], 99);
  }
}

}  // namespace
}  // namespace strata
