#include "store/tier/composite/composite_store.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>

#include "launch/presets.h"
#include "launch/runtime/synthetic_runtime.h"
#include "tests/unit/store/tier/composite/composite_test_support.h"

namespace strata {
namespace {

using namespace std::chrono_literals;
using testing::CompositeRig;
using testing::Entries;
using testing::FaultFileSystem;
using testing::NowMs;
using testing::RigOptions;
using testing::ScratchDir;

constexpr auto kBound = 30s;

// Slots a tiny-preset record of `pages` pages and its row takes (TP1: one
// 16 KiB page record per slot, the 8 KiB row in one slot).
constexpr uint64_t SlotsOf(uint64_t pages) { return pages + 1; }

size_t RecordFiles(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    n += e.path().extension() == ".ckpt";
  return n;
}

TEST(CompositeStoreTest, MemoryHitIsByteExactAndReadsNoDisk) {
  for (uint32_t ranks : {1u, 2u}) {
    ScratchDir dir;
    FaultFileSystem fs;
    HostPlanes planes(*PresetGeometry("tiny", ranks, 512, 16));
    OPEN_COMPOSITE(rig, dir.path(), planes, fs, RigOptions{});
    SyntheticRuntime rt(planes, rig.store.get());
    uint32_t a = rt.NewConversation();
    ASSERT_TRUE(rt.Turn(a, 1000).ok());
    ASSERT_TRUE(rt.Turn(a, 500).ok());
    ASSERT_TRUE(rt.WaitForStores().ok());
    ASSERT_TRUE(rig.store->WaitIdle(NowMs(), kBound));
    // A big warm tier under no pressure writes nothing ahead of need.
    for (const IndexEntry& e : Entries(*rig.store)) EXPECT_EQ(e.state, TransferState::kParked);
    rt.EvictGpu();
    TurnReport t = *rt.Turn(a, 10);
    EXPECT_TRUE(t.host_hit);
    EXPECT_EQ(t.host_reused_tokens, 1500u);
    EXPECT_EQ(rt.stats().mismatches, 0u);
    ASSERT_TRUE(rt.WaitForStores().ok());
    ASSERT_TRUE(rig.store->WaitIdle(NowMs(), kBound));
    StoreStats s = rig.store->Stats();
    EXPECT_GT(s.memory.bytes_out_total, 0u);
    EXPECT_EQ(s.disk.bytes_out_total, 0u);
    EXPECT_EQ(s.disk.bytes_in_total, 0u);
    EXPECT_EQ(s.parked_records, 3u);
    if (ranks == 2) {
      EXPECT_EQ(s.memory.packed_total, 0u);  // derived bytes differ per rank
    }
    EXPECT_TRUE(rig.store->CheckInvariants().ok()) << rig.store->CheckInvariants().ToString();
  }
}

TEST(CompositeStoreTest, PressureWritesColdestParkedRecordsAndMakesThemDurable) {
  ScratchDir dir;
  FaultFileSystem fs;
  HostPlanes planes(*PresetGeometry("tiny", 1, 512, 16));
  RigOptions o;
  o.warm_slots = 4 * SlotsOf(10);
  o.intake_slots = 16;  // free + clean below 32 slots starts writes
  OPEN_COMPOSITE(rig, dir.path(), planes, fs, o);
  SyntheticRuntime rt(planes, rig.store.get());
  std::vector<uint32_t> convs;
  for (int i = 0; i < 3; ++i) {
    convs.push_back(rt.NewConversation());
    ASSERT_TRUE(rt.Turn(convs.back(), 640).ok());
    ASSERT_TRUE(rt.WaitForStores().ok());
    ASSERT_TRUE(rig.store->WaitIdle(NowMs(), kBound));
  }
  // 60 slots: 27 free after three records, so the coldest are written
  // until free + clean reaches 32.
  std::vector<IndexEntry> e = Entries(*rig.store);
  ASSERT_EQ(e.size(), 3u);
  const StoreStats s = rig.store->Stats();
  EXPECT_GE(s.disk.stored_total, 1u);
  EXPECT_LE(s.disk.stored_total, 2u);  // not the whole warm tier
  EXPECT_GT(s.disk.bytes_in_total, 0u);
  EXPECT_EQ(RecordFiles(rig.path), s.disk.stored_total);
  size_t durable = 0;
  for (const IndexEntry& x : e) {
    EXPECT_TRUE(rig.store->resident(x.key));  // the memory copy stays, now clean
    durable += rig.store->durable(x.key);
    if (rig.store->durable(x.key)) {
      EXPECT_EQ(x.state, TransferState::kReady);
    }
  }
  EXPECT_EQ(durable, s.disk.stored_total);
  EXPECT_TRUE(rig.store->CheckInvariants().ok()) << rig.store->CheckInvariants().ToString();
}

TEST(CompositeStoreTest, FetchOfARecordWhoseWriteIsInFlightComesFromMemory) {
  ScratchDir dir;
  FaultFileSystem fs;
  HostPlanes planes(*PresetGeometry("tiny", 1, 512, 16));
  RigOptions o;
  o.warm_slots = 3 * SlotsOf(10);
  o.intake_slots = 16;
  OPEN_COMPOSITE(rig, dir.path(), planes, fs, o);
  SyntheticRuntime rt(planes, rig.store.get());
  fs.Hold();  // every write waits in preallocation
  uint32_t a = rt.NewConversation();
  ASSERT_TRUE(rt.Turn(a, 640).ok());
  uint32_t b = rt.NewConversation();
  ASSERT_TRUE(rt.Turn(b, 640).ok());  // 11 + 11 of 49 slots used: pressure
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(fs.WaitUntilHeld(kBound));
  std::vector<IndexEntry> e = Entries(*rig.store);
  ASSERT_EQ(e.size(), 2u);
  const IndexEntry& spilling = e[0].state == TransferState::kSpilling ? e[0] : e[1];
  ASSERT_EQ(spilling.state, TransferState::kSpilling);
  rt.EvictGpu();
  // Both records restore from memory while the write is held.
  TurnReport ta = *rt.Turn(a, 5);
  TurnReport tb = *rt.Turn(b, 5);
  EXPECT_TRUE(ta.host_hit);
  EXPECT_TRUE(tb.host_hit);
  EXPECT_EQ(rt.stats().mismatches, 0u);
  EXPECT_EQ(rig.store->disk().index().Find(spilling.key)->state, TransferState::kSpilling);
  EXPECT_EQ(rig.store->Stats().disk.bytes_out_total, 0u);
  fs.Release();
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(rig.store->WaitIdle(NowMs(), kBound));
  EXPECT_TRUE(rig.store->durable(spilling.key));
  EXPECT_TRUE(rig.store->CheckInvariants().ok()) << rig.store->CheckInvariants().ToString();
}

TEST(CompositeStoreTest, MemoryEvictsOnlyDurableRecords) {
  ScratchDir dir;
  FaultFileSystem fs;
  HostPlanes planes(*PresetGeometry("tiny", 1, 512, 16));
  RigOptions o;
  o.warm_slots = 3 * SlotsOf(10);
  o.intake_slots = 16;
  o.store.spill_retry_ms = 100;
  OPEN_COMPOSITE(rig, dir.path(), planes, fs, o);
  SyntheticRuntime rt(planes, rig.store.get());
  fs.fail_errno = ENOSPC;  // nothing becomes durable
  std::vector<uint32_t> convs;
  for (int i = 0; i < 3; ++i) {
    convs.push_back(rt.NewConversation());
    ASSERT_TRUE(rt.Turn(convs.back(), 640).ok());
    ASSERT_TRUE(rt.WaitForStores().ok());
    ASSERT_TRUE(rig.store->WaitIdle(NowMs(), kBound));
  }
  std::vector<IndexEntry> parked = Entries(*rig.store);
  ASSERT_EQ(parked.size(), 3u);
  // A fourth record finds only parked records: none is evicted; it streams to
  // disk instead, which is full too.
  convs.push_back(rt.NewConversation());
  ASSERT_TRUE(rt.Turn(convs.back(), 640).ok());
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(rig.store->WaitIdle(NowMs(), kBound));
  StoreStats s = rig.store->Stats();
  EXPECT_EQ(s.memory.evicted_total, 0u);
  EXPECT_GE(s.fs_full_retries, 1u);
  EXPECT_EQ(rt.stats().store_failed, 1u);
  for (const IndexEntry& p : parked) {
    EXPECT_TRUE(rig.store->resident(p.key));
    EXPECT_EQ(rig.store->disk().index().Find(p.key)->state, TransferState::kParked);
  }
  // Space returns: after the backoff the parked records are written, become
  // durable, and the next record evicts the coldest of them.
  fs.fail_errno = 0;
  ASSERT_TRUE(rig.store->WaitIdle(NowMs() + 1000, kBound));
  size_t durable = 0;
  for (const IndexEntry& p : parked) durable += rig.store->durable(p.key);
  EXPECT_GE(durable, 1u);
  convs.push_back(rt.NewConversation());
  ASSERT_TRUE(rt.Turn(convs.back(), 640).ok());
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(rig.store->WaitIdle(NowMs() + 2000, kBound));
  s = rig.store->Stats();
  EXPECT_EQ(s.memory.evicted_total, 1u);
  EXPECT_FALSE(rig.store->resident(parked[0].key) && rig.store->resident(parked[1].key) &&
               rig.store->resident(parked[2].key));
  // The evicted record is still on disk and restores byte-exact from it.
  rt.EvictGpu();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(rt.Turn(convs[i], 5)->host_hit) << i;
  EXPECT_EQ(rt.stats().mismatches, 0u);
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(rig.store->WaitIdle(NowMs() + 3000, kBound));
  EXPECT_TRUE(rig.store->CheckInvariants().ok()) << rig.store->CheckInvariants().ToString();
}

TEST(CompositeStoreTest, DiskEvictionRemovesTheMemoryCopy) {
  ScratchDir dir;
  FaultFileSystem fs;
  HostPlanes planes(*PresetGeometry("tiny", 1, 512, 16));
  RecordLayout layout(planes.geometry());
  const uint64_t one = RecordFileBytes(layout, {.tail_pages = 10});
  RigOptions o;
  o.warm_slots = 3 * SlotsOf(10);
  o.intake_slots = 16;
  o.store.disk_limit_bytes = 2 * one + one / 2;
  OPEN_COMPOSITE(rig, dir.path(), planes, fs, o);
  SyntheticRuntime rt(planes, rig.store.get());
  std::vector<uint32_t> convs;
  for (int i = 0; i < 6; ++i) {
    convs.push_back(rt.NewConversation());
    ASSERT_TRUE(rt.Turn(convs.back(), 640).ok());
    ASSERT_TRUE(rt.WaitForStores().ok());
    ASSERT_TRUE(rig.store->WaitIdle(NowMs(), kBound));
    ASSERT_TRUE(rig.store->CheckInvariants().ok()) << rig.store->CheckInvariants().ToString();
  }
  StoreStats s = rig.store->Stats();
  EXPECT_GT(s.disk.evicted_total, 0u);
  EXPECT_LE(rig.store->disk().used_bytes(), o.store.disk_limit_bytes);
  // Memory holds nothing the disk index lost.
  EXPECT_LE(s.memory.records, rig.store->disk().index().size());
  rt.EvictGpu();
  EXPECT_FALSE(rt.Turn(convs[0], 5)->host_hit);  // evicted from disk, so from memory too
  EXPECT_TRUE(rt.Turn(convs[5], 5)->host_hit);
  EXPECT_EQ(rt.stats().mismatches, 0u);
}

TEST(CompositeStoreTest, FullDiskKeepsTheRecordParkedAndRetriesAfterBackoff) {
  ScratchDir dir;
  FaultFileSystem fs;
  HostPlanes planes(*PresetGeometry("tiny", 1, 512, 16));
  RigOptions o;
  o.warm_slots = 2 * SlotsOf(10);
  o.intake_slots = 16;
  o.store.spill_retry_ms = 5'000;
  OPEN_COMPOSITE(rig, dir.path(), planes, fs, o);
  SyntheticRuntime rt(planes, rig.store.get());
  fs.fail_errno = ENOSPC;
  uint32_t a = rt.NewConversation();
  ASSERT_TRUE(rt.Turn(a, 640).ok());
  ASSERT_TRUE(rt.WaitForStores().ok());
  const uint64_t t0 = NowMs();
  ASSERT_TRUE(rig.store->WaitIdle(t0, kBound));
  const PrefixKey key = Entries(*rig.store).at(0).key;
  EXPECT_EQ(rig.store->disk().index().Find(key)->state, TransferState::kParked);
  EXPECT_TRUE(rig.store->resident(key));
  const uint64_t tries = fs.allocations;
  EXPECT_GE(tries, 1u);
  EXPECT_EQ(rig.store->Stats().fs_full_retries, 1u);
  EXPECT_EQ(rig.store->disk().used_bytes(), 0u);  // the refused write is uncharged
  // Within the backoff nothing is retried.
  ASSERT_TRUE(rig.store->WaitIdle(t0 + 1'000, kBound));
  EXPECT_EQ(fs.allocations, tries);
  // Still restorable (from memory) meanwhile.
  rt.EvictGpu();
  EXPECT_TRUE(rt.Turn(a, 5)->host_hit);
  ASSERT_TRUE(rt.WaitForStores().ok());
  fs.fail_errno = 0;
  ASSERT_TRUE(rig.store->WaitIdle(t0 + 6'000, kBound));
  EXPECT_GT(fs.allocations, tries);
  EXPECT_TRUE(rig.store->durable(key));
  EXPECT_TRUE(std::filesystem::exists(rig.path + "/" + key.ToFileStem() + ".ckpt"));
  EXPECT_TRUE(rig.store->CheckInvariants().ok()) << rig.store->CheckInvariants().ToString();
}

TEST(CompositeStoreTest, TerminalWriteErrorDiscardsTheRecordAndCountsIt) {
  ScratchDir dir;
  FaultFileSystem fs;
  HostPlanes planes(*PresetGeometry("tiny", 1, 512, 16));
  RigOptions o;
  o.warm_slots = 2 * SlotsOf(10);
  o.intake_slots = 16;
  OPEN_COMPOSITE(rig, dir.path(), planes, fs, o);
  SyntheticRuntime rt(planes, rig.store.get());
  fs.fail_errno = EIO;
  uint32_t a = rt.NewConversation();
  ASSERT_TRUE(rt.Turn(a, 640).ok());
  ASSERT_TRUE(rt.Turn(a, 640).ok());  // a child: discarded with its parent, or on its own
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(rig.store->WaitIdle(NowMs(), kBound));
  const StoreStats s = rig.store->Stats();
  EXPECT_GE(s.disk.dropped_io_total, 1u);
  EXPECT_EQ(rig.store->disk().index().size(), 0u);
  EXPECT_EQ(s.memory.records, 0u);
  EXPECT_EQ(s.slots_in_use, 0u);
  EXPECT_EQ(RecordFiles(rig.path), 0u);
  rt.EvictGpu();
  EXPECT_FALSE(rt.Turn(a, 5)->host_hit);
  ASSERT_TRUE(rt.WaitForStores().ok());
  EXPECT_TRUE(rig.store->CheckInvariants().ok()) << rig.store->CheckInvariants().ToString();
}

TEST(CompositeStoreTest, RestartRestoresTheSameBytesAndDrainOffLosesMemoryOnlyRecords) {
  ScratchDir dir;
  HostPlanes planes(*PresetGeometry("tiny", 1, 512, 16));
  RigOptions o;
  o.warm_slots = 3 * SlotsOf(10);
  o.intake_slots = 16;
  std::vector<PrefixKey> written;
  {
    FaultFileSystem fs;
    OPEN_COMPOSITE(rig, dir.path(), planes, fs, o);
    SyntheticRuntime rt(planes, rig.store.get());
    for (int i = 0; i < 3; ++i) {
      uint32_t c = rt.NewConversation();
      ASSERT_TRUE(rt.Turn(c, 640).ok());
      ASSERT_TRUE(rt.WaitForStores().ok());
      ASSERT_TRUE(rig.store->WaitIdle(NowMs(), kBound));
    }
    for (const IndexEntry& e : Entries(*rig.store)) {
      if (rig.store->durable(e.key)) written.push_back(e.key);
    }
    ASSERT_GE(written.size(), 1u);
    ASSERT_LT(written.size(), 3u);
  }  // drain off: the parked records are lost
  FaultFileSystem fs;
  OPEN_COMPOSITE(rig, dir.path(), planes, fs, o);
  EXPECT_EQ(rig.store->disk().index().size(), written.size());
  for (const PrefixKey& k : written) EXPECT_TRUE(rig.store->disk().index().Contains(k));
  SyntheticRuntime rt(planes, rig.store.get());
  size_t hits = 0;
  for (int i = 0; i < 3; ++i) {
    uint32_t c = rt.NewConversation();
    hits += rt.Turn(c, 640)->host_hit;
  }
  EXPECT_EQ(hits, written.size());
  EXPECT_EQ(rt.stats().mismatches, 0u);
  EXPECT_GT(rt.stats().restored_bytes, 0u);
}

TEST(CompositeStoreTest, BoundedDrainWritesRecentEndpointsAfterTheirAncestors) {
  ScratchDir dir;
  HostPlanes planes(*PresetGeometry("tiny", 1, 512, 16));
  RigOptions o;
  o.store.drain.mode = ShutdownDrain::Mode::kBounded;
  o.store.drain.write_limit = 60s;
  {
    FaultFileSystem fs;
    OPEN_COMPOSITE(rig, dir.path(), planes, fs, o);
    SyntheticRuntime rt(planes, rig.store.get());
    uint32_t a = rt.NewConversation();
    ASSERT_TRUE(rt.Turn(a, 640).ok());
    ASSERT_TRUE(rt.Turn(a, 640).ok());
    uint32_t b = rt.Branch(a, 640);
    ASSERT_TRUE(rt.Turn(b, 700).ok());
    ASSERT_TRUE(rt.WaitForStores().ok());
    ASSERT_TRUE(rig.store->WaitIdle(NowMs(), kBound));
    EXPECT_EQ(RecordFiles(rig.path), 0u);  // nothing written ahead of need
  }
  FaultFileSystem fs;
  OPEN_COMPOSITE(rig, dir.path(), planes, fs, o);
  EXPECT_EQ(rig.store->disk().index().size(), 3u);
  SyntheticRuntime rt(planes, rig.store.get());
  uint32_t a = rt.NewConversation();
  TurnReport t = *rt.Turn(a, 1280);
  EXPECT_TRUE(t.host_hit);
  EXPECT_EQ(t.host_reused_tokens, 1280u);
  EXPECT_EQ(rt.stats().mismatches, 0u);
}

TEST(CompositeStoreTest, AChainLargerThanMemoryStreamsFromDisk) {
  ScratchDir dir;
  HostPlanes planes(*PresetGeometry("tiny", 1, 1024, 16));
  RigOptions o;
  o.store.drain.mode = ShutdownDrain::Mode::kUntilDone;
  {
    FaultFileSystem fs;
    OPEN_COMPOSITE(rig, dir.path(), planes, fs, o);
    SyntheticRuntime rt(planes, rig.store.get());
    uint32_t a = rt.NewConversation();
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(rt.Turn(a, 20 * 64).ok());
    ASSERT_TRUE(rt.WaitForStores().ok());
  }
  // Memory for about one 20-page record beyond the intake.
  FaultFileSystem fs;
  o.warm_slots = SlotsOf(20) + 2;
  o.intake_slots = 64;
  OPEN_COMPOSITE(rig, dir.path(), planes, fs, o);
  SyntheticRuntime rt(planes, rig.store.get());
  uint32_t a = rt.NewConversation();
  TurnReport t = *rt.Turn(a, 60 * 64);
  EXPECT_TRUE(t.host_hit);
  EXPECT_EQ(t.host_reused_tokens, 60u * 64);
  EXPECT_EQ(rt.stats().mismatches, 0u);
  const StoreStats s = rig.store->Stats();
  EXPECT_GT(s.disk.bytes_out_total, 0u);
  EXPECT_EQ(s.memory.bytes_out_total, 0u);  // streamed, not read through memory
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(rig.store->WaitIdle(NowMs(), kBound));
  EXPECT_TRUE(rig.store->CheckInvariants().ok()) << rig.store->CheckInvariants().ToString();
}

TEST(CompositeStoreTest, ExpiryThroughTheIndexDropsBothTiers) {
  ScratchDir dir;
  FaultFileSystem fs;
  HostPlanes planes(*PresetGeometry("tiny", 1, 512, 16));
  RigOptions o;
  o.warm_slots = 2 * SlotsOf(10);
  o.intake_slots = 16;
  o.store.max_age_ms = 60'000;
  OPEN_COMPOSITE(rig, dir.path(), planes, fs, o);
  SyntheticRuntime rt(planes, rig.store.get());
  uint32_t a = rt.NewConversation();
  ASSERT_TRUE(rt.Turn(a, 640).ok());
  uint32_t b = rt.NewConversation();
  ASSERT_TRUE(rt.Turn(b, 640).ok());
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(rig.store->WaitIdle(NowMs(), kBound));
  ASSERT_EQ(rig.store->disk().index().size(), 2u);
  std::vector<StoreEvent> ev;
  rig.store->Poll(NowMs() + 10 * 60'000, ev);  // both long unused (one parked, one written)
  ASSERT_TRUE(rig.store->WaitIdle(NowMs() + 10 * 60'000, kBound));
  const StoreStats s = rig.store->Stats();
  EXPECT_EQ(s.disk.expired_total, 2u);
  EXPECT_EQ(rig.store->disk().index().size(), 0u);
  EXPECT_EQ(s.memory.records, 0u);
  EXPECT_EQ(s.slots_in_use, 0u);
  EXPECT_EQ(RecordFiles(rig.path), 0u);
  EXPECT_TRUE(rig.store->CheckInvariants().ok()) << rig.store->CheckInvariants().ToString();
}

}  // namespace
}  // namespace strata
