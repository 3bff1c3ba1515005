// The composite's fan-out on store over the direct transport (seed 2.6,
// options.direct): a new record's file is written straight from the GPU
// pages while its memory copy runs, so it is clean once both finish and
// survives a stop without a shutdown drain; the checkpoint's event waits for
// both copies; a write that fails (out of space, an I/O error) leaves the
// record in memory to spill later. Here over the
// staged transport, which serves the same device store job through its
// staging slots.
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

class FanOutTest : public ::testing::Test {
 protected:
  // A store with the drain off: a stop loses every memory-only record.
  void Open(bool direct) {
    o.store.direct = direct;
    o.store.drain.mode = ShutdownDrain::Mode::kOff;
    o.store.spill_retry_ms = 100;
    rig = std::make_unique<CompositeRig>(dir.path(), planes, fs, o);
    if (rig->status.code() == StatusCode::kFailedPrecondition)
      GTEST_SKIP() << rig->status.message();
    ASSERT_TRUE(rig->status.ok()) << rig->status.ToString();
    SyntheticRuntimeOptions ro;
    ro.wait_bound = 30s;
    rt = std::make_unique<SyntheticRuntime>(planes, rig->store.get(), ro);
  }
  // One turn of a new conversation, its store finished and the store idle.
  void StoreOneRecord() {
    const uint32_t c = rt->NewConversation();
    ASSERT_TRUE(rt->Turn(c, 640).ok());
    ASSERT_TRUE(rt->WaitForStores().ok());
    ASSERT_TRUE(rig->store->WaitIdle(NowMs(), kBound));
    ASSERT_EQ(Entries(*rig->store).size(), 1u);
  }
  // Closes the store (no drain) and reopens it over the same directory.
  size_t RecordsAfterRestart() {
    rt.reset();
    rig.reset();
    rig = std::make_unique<CompositeRig>(dir.path(), planes, fs, o);
    EXPECT_TRUE(rig->status.ok()) << rig->status.ToString();
    return rig->status.ok() ? rig->store->disk().index().size() : 0;
  }
  ScratchDir dir;
  HostPlanes planes{*PresetGeometry("tiny", 2, 512, 16)};
  RigOptions o;
  FaultFileSystem fs;
  std::unique_ptr<CompositeRig> rig;
  std::unique_ptr<SyntheticRuntime> rt;
};

TEST_F(FanOutTest, WithoutTheDirectPathANewRecordIsParkedAndAStopLosesIt) {
  ASSERT_NO_FATAL_FAILURE(Open(/*direct=*/false));
  if (IsSkipped()) return;
  ASSERT_NO_FATAL_FAILURE(StoreOneRecord());
  const IndexEntry e = Entries(*rig->store)[0];
  EXPECT_EQ(e.state, TransferState::kParked);
  EXPECT_FALSE(rig->store->durable(e.key));
  const StoreStats s = rig->store->Stats();
  EXPECT_EQ(s.fanout_writes, 0u);
  EXPECT_EQ(s.disk.stored_total, 0u);
  EXPECT_EQ(RecordsAfterRestart(), 0u);
}

TEST_F(FanOutTest, ANewRecordIsWrittenFromTheGpuBesideItsMemoryCopyAndSurvivesAStop) {
  ASSERT_NO_FATAL_FAILURE(Open(/*direct=*/true));
  if (IsSkipped()) return;
  ASSERT_NO_FATAL_FAILURE(StoreOneRecord());
  const IndexEntry e = Entries(*rig->store)[0];
  EXPECT_EQ(e.state, TransferState::kReady);
  EXPECT_TRUE(rig->store->durable(e.key)) << "in memory and on disk: clean";
  const StoreStats s = rig->store->Stats();
  EXPECT_EQ(s.fanout_writes, 1u);
  EXPECT_EQ(s.disk.stored_total, 1u);
  EXPECT_EQ(s.memory.stored_total, 1u);
  EXPECT_EQ(s.parked_records, 0u);
  EXPECT_TRUE(rig->store->CheckInvariants().ok()) << rig->store->CheckInvariants().ToString();
  // The file is whole: a restart without a drain keeps the record, and it
  // restores byte-exact from disk.
  ASSERT_EQ(RecordsAfterRestart(), 1u);
  SyntheticRuntime again(planes, rig->store.get());
  const uint32_t c = again.NewConversation();
  TurnReport t = *again.Turn(c, 640);
  EXPECT_TRUE(t.host_hit);
  EXPECT_EQ(again.stats().mismatches, 0u);
  ASSERT_TRUE(again.WaitForStores().ok());
}

// Both the memory copy and the write read the checkpoint's GPU pages, so
// the runtime keeps its pin until both finished: the event waits for the
// write held in preallocation, while the memory copy is complete.
TEST_F(FanOutTest, TheStoredEventWaitsForTheWrite) {
  ASSERT_NO_FATAL_FAILURE(Open(/*direct=*/true));
  if (IsSkipped()) return;
  SyntheticRuntimeOptions ro;
  ro.wait_bound = 300ms;  // a bound the held write outlasts
  rt = std::make_unique<SyntheticRuntime>(planes, rig->store.get(), ro);
  fs.Hold();
  const uint32_t c = rt->NewConversation();
  ASSERT_TRUE(rt->Turn(c, 640).ok());
  // The staged stand-in submits the write once its copy-out is polled.
  const auto until = std::chrono::steady_clock::now() + kBound;
  while (!fs.WaitUntilHeld(10ms) && std::chrono::steady_clock::now() < until) {
    (void)rig->store->WaitIdle(NowMs(), 10ms);
  }
  ASSERT_TRUE(fs.WaitUntilHeld(0ms));
  EXPECT_FALSE(rt->WaitForStores().ok()) << "the event came while the write still ran";
  EXPECT_EQ(rt->stats().stored, 0u);
  const IndexEntry e = Entries(*rig->store)[0];
  EXPECT_FALSE(rig->store->durable(e.key));
  fs.Release();
  ASSERT_TRUE(rig->store->WaitIdle(NowMs(), kBound));
  ASSERT_TRUE(rt->WaitForStores().ok());
  EXPECT_EQ(rt->stats().stored, 1u);
  EXPECT_TRUE(rig->store->durable(e.key));
  EXPECT_TRUE(rig->store->CheckInvariants().ok()) << rig->store->CheckInvariants().ToString();
}

// Out of space, the record stays in memory (parked, not lost) and is
// written from there once space returns (write-behind after the backoff).
TEST_F(FanOutTest, AWriteOutOfSpaceParksTheRecordToSpillLater) {
  o.warm_slots = 16;  // one 11-slot record leaves free < 2 x intake: write-behind runs
  o.intake_slots = 16;
  ASSERT_NO_FATAL_FAILURE(Open(/*direct=*/true));
  if (IsSkipped()) return;
  fs.fail_errno = ENOSPC;
  ASSERT_NO_FATAL_FAILURE(StoreOneRecord());
  const IndexEntry e = Entries(*rig->store)[0];
  EXPECT_TRUE(rig->store->resident(e.key));
  EXPECT_EQ(rig->store->Stats().fanout_writes, 1u);
  EXPECT_EQ(rig->store->Stats().fanout_write_failures, 1u);
  EXPECT_GE(rig->store->Stats().fs_full_retries, 1u);
  EXPECT_EQ(rt->stats().stored, 1u) << "the memory copy stands: stored";
  EXPECT_TRUE(rig->store->CheckInvariants().ok()) << rig->store->CheckInvariants().ToString();
  fs.fail_errno = 0;
  ASSERT_TRUE(rig->store->WaitIdle(NowMs() + 1000, kBound));
  const StoreStats s = rig->store->Stats();
  EXPECT_TRUE(rig->store->durable(e.key))
      << "spilled from memory after the backoff; disk state "
      << TransferStateName(rig->store->disk().index().Find(e.key)->state) << ", limit "
      << s.disk_limit_bytes << ", slots " << s.slots_in_use << "/" << s.slots_total;
  EXPECT_TRUE(rig->store->CheckInvariants().ok()) << rig->store->CheckInvariants().ToString();
}

// A fan-out write that fails outright (an I/O error) loses nothing either,
// unlike a failed spill: the memory copy does not depend on it, so the
// record stays in memory and is written from there once the disk works.
TEST_F(FanOutTest, AFailedWriteKeepsTheRecordInMemoryToSpillLater) {
  o.warm_slots = 16;  // as above: write-behind runs
  o.intake_slots = 16;
  ASSERT_NO_FATAL_FAILURE(Open(/*direct=*/true));
  if (IsSkipped()) return;
  fs.fail_errno = EIO;
  ASSERT_NO_FATAL_FAILURE(StoreOneRecord());
  const IndexEntry e = Entries(*rig->store)[0];
  EXPECT_TRUE(rig->store->resident(e.key));
  StoreStats s = rig->store->Stats();
  EXPECT_EQ(s.fanout_writes, 1u);
  EXPECT_EQ(s.fanout_write_failures, 1u);
  EXPECT_EQ(s.disk.dropped_io_total, 0u);
  EXPECT_EQ(rt->stats().stored, 1u);
  EXPECT_TRUE(rig->store->CheckInvariants().ok()) << rig->store->CheckInvariants().ToString();
  fs.fail_errno = 0;
  ASSERT_TRUE(rig->store->WaitIdle(NowMs() + 1000, kBound));
  EXPECT_TRUE(rig->store->durable(e.key)) << "spilled from memory after the backoff";
  s = rig->store->Stats();
  EXPECT_EQ(s.disk.stored_total, 1u);
  EXPECT_TRUE(rig->store->CheckInvariants().ok()) << rig->store->CheckInvariants().ToString();
}

}  // namespace
}  // namespace strata
