// A composite store reopened over records an earlier life left on disk:
// disk hits read into memory, and with the direct transport
// (options.direct) restores straight from the files with memory
// warmed through the runtime's publication of the restored checkpoint.
#include <gtest/gtest.h>

#include <memory>

#include "launch/presets.h"
#include "launch/runtime/synthetic_runtime.h"
#include "store/tier/composite/composite_store.h"
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

// A first life that leaves two records on disk: a conversation's turns of
// 1000 and 5000 tokens (78 pages: a two-window record), written by the
// shutdown drain (`o` must drain until done).
void WriteTwoRecords(const std::string& dir, HostPlanes& planes, const RigOptions& o) {
  FaultFileSystem fs;
  OPEN_COMPOSITE(rig, dir, planes, fs, o);
  SyntheticRuntime rt(planes, rig.store.get());
  uint32_t a = rt.NewConversation();
  ASSERT_TRUE(rt.Turn(a, 1000).ok());
  ASSERT_TRUE(rt.Turn(a, 5000).ok());
  ASSERT_TRUE(rt.WaitForStores().ok());
}

// Two records on disk (WriteTwoRecords), then the composite reopened over
// them with `direct` as the test says.
class TwoRecordsOnDisk : public ::testing::Test {
 protected:
  void Reopen(bool direct) {
    o.store.drain.mode = ShutdownDrain::Mode::kUntilDone;
    o.store.direct = direct;
    ASSERT_NO_FATAL_FAILURE(WriteTwoRecords(dir.path(), planes, o));
    if (IsSkipped()) return;
    rig = std::make_unique<CompositeRig>(dir.path(), planes, fs, o);
    ASSERT_TRUE(rig->status.ok()) << rig->status.ToString();
    ASSERT_EQ(rig->store->disk().index().size(), 2u);
  }
  // The same restore again (another runtime, same conversation) comes from
  // memory only: no disk bytes beyond `before`'s.
  void ExpectTheSameRestoreFromMemoryOnly(const StoreStats& before) {
    SyntheticRuntime again(planes, rig->store.get());
    uint32_t b = again.NewConversation();
    TurnReport t = *again.Turn(b, 1000);
    EXPECT_TRUE(t.host_hit);
    EXPECT_EQ(again.stats().mismatches, 0u);
    const StoreStats after = rig->store->Stats();
    EXPECT_EQ(after.disk.bytes_out_total, before.disk.bytes_out_total);
    EXPECT_GT(after.memory.bytes_out_total, before.memory.bytes_out_total);
    ASSERT_TRUE(again.WaitForStores().ok());
    ASSERT_TRUE(rig->store->WaitIdle(NowMs(), kBound));
    EXPECT_TRUE(rig->store->CheckInvariants().ok()) << rig->store->CheckInvariants().ToString();
  }
  ScratchDir dir;
  HostPlanes planes{*PresetGeometry("tiny", 2, 512, 16)};
  RigOptions o;
  FaultFileSystem fs;
  std::unique_ptr<CompositeRig> rig;
};

TEST_F(TwoRecordsOnDisk, DiskHitIsReadIntoMemoryAndBecomesResident) {
  ASSERT_NO_FATAL_FAILURE(Reopen(/*direct=*/false));
  if (IsSkipped()) return;
  SyntheticRuntime rt(planes, rig->store.get());
  uint32_t a = rt.NewConversation();
  TurnReport first = *rt.Turn(a, 1000);
  EXPECT_TRUE(first.host_hit);
  TurnReport second = *rt.Turn(a, 5000);
  EXPECT_TRUE(second.host_hit);
  EXPECT_EQ(second.host_reused_tokens, 5000u);
  EXPECT_EQ(rt.stats().mismatches, 0u);
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(rig->store->WaitIdle(NowMs(), kBound));
  std::vector<IndexEntry> e = Entries(*rig->store);
  ASSERT_GE(e.size(), 2u);
  EXPECT_TRUE(rig->store->durable(e[0].key));  // read through, now a clean resident
  EXPECT_TRUE(rig->store->durable(e[1].key));
  const StoreStats before = rig->store->Stats();
  EXPECT_GT(before.disk.bytes_out_total, 0u);
  EXPECT_EQ(before.memory.stored_total, 2u);  // promotions count as memory stores
  ExpectTheSameRestoreFromMemoryOnly(before);
}

// With the direct transport (options.direct) a chain on disk goes
// straight from its files to the ticket, and memory warms through the
// runtime's publication of the restored checkpoint (here over the staged
// transport, which serves the same disk-tier fetch through staging).
TEST_F(TwoRecordsOnDisk, DirectFetchRestoresFromTheFilesAndWarmsMemoryThroughPublication) {
  ASSERT_NO_FATAL_FAILURE(Reopen(/*direct=*/true));
  if (IsSkipped()) return;
  SyntheticRuntime rt(planes, rig->store.get());
  uint32_t a = rt.NewConversation();
  TurnReport first = *rt.Turn(a, 1000);
  EXPECT_TRUE(first.host_hit);
  EXPECT_EQ(rt.stats().mismatches, 0u);
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(rig->store->WaitIdle(NowMs(), kBound));
  const StoreStats restored = rig->store->Stats();
  EXPECT_GT(restored.disk.bytes_out_total, 0u);  // from the file
  EXPECT_EQ(restored.memory.bytes_out_total, 0u) << "nothing uploaded from memory";
  EXPECT_EQ(restored.disk.bytes_in_total, 0u) << "nothing written again";
  std::vector<IndexEntry> e = Entries(*rig->store);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_TRUE(rig->store->durable(e[0].key)) << "warmed by the restored checkpoint's publication";
  EXPECT_FALSE(rig->store->resident(e[1].key)) << "not restored: not warmed";
  EXPECT_EQ(restored.memory.stored_total, 1u);
  EXPECT_TRUE(rig->store->CheckInvariants().ok()) << rig->store->CheckInvariants().ToString();
  ExpectTheSameRestoreFromMemoryOnly(restored);
  // The conversation's next turn: its record comes from its file (the chain
  // is not all in memory), and, its ancestor in memory now, warms too.
  TurnReport second = *rt.Turn(a, 5000);
  EXPECT_TRUE(second.host_hit);
  EXPECT_EQ(rt.stats().mismatches, 0u);
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(rig->store->WaitIdle(NowMs(), kBound));
  EXPECT_TRUE(rig->store->durable(e[1].key));
  EXPECT_TRUE(rig->store->CheckInvariants().ok()) << rig->store->CheckInvariants().ToString();
}

// A restored record whose ancestor memory does not hold is not warmed: its
// chain keeps restoring from its files, and no room is taken for it.
TEST_F(TwoRecordsOnDisk, DirectFetchDoesNotWarmARecordWhoseAncestorIsOnlyOnDisk) {
  ASSERT_NO_FATAL_FAILURE(Reopen(/*direct=*/true));
  if (IsSkipped()) return;
  SyntheticRuntime rt(planes, rig->store.get());
  uint32_t a = rt.NewConversation();
  TurnReport whole = *rt.Turn(a, 6000);  // both records' tokens in one turn
  EXPECT_TRUE(whole.host_hit);
  EXPECT_EQ(whole.host_reused_tokens, 6000u);
  EXPECT_EQ(rt.stats().mismatches, 0u);
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(rig->store->WaitIdle(NowMs(), kBound));
  for (const IndexEntry& e : Entries(*rig->store)) {
    EXPECT_FALSE(rig->store->resident(e.key)) << e.key.ToFileStem();
  }
  EXPECT_EQ(rig->store->Stats().memory.stored_total, 0u);
  EXPECT_TRUE(rig->store->CheckInvariants().ok()) << rig->store->CheckInvariants().ToString();
}

}  // namespace
}  // namespace strata
