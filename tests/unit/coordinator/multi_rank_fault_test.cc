// Faults while ranks on separate hosts serve jobs: a peer lost mid-job, one
// rank whose write fails.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/coordinator/multi_rank_test_support.h"

namespace strata {
namespace {

using testing::AwaitEvent;
using testing::Cluster;
using testing::FaultyTransfers;
using ::testing::HasSubstr;
using testing::RootCheckpoint;
using testing::ScratchDir;

TEST(MultiRankFaultTest, APeerKilledMidJobStopsTheTransportAndNothingIsReported) {
  ScratchDir dir;
  Cluster c(dir.path());
  STRATA_OK_OR_SKIP_DIRECT_IO(c.Start());
  c.transfers(2).set_mode(FaultyTransfers::Mode::kHoldCopyOut);
  const PublishedCheckpoint cp = RootCheckpoint(1, 1, 10, 0, StateSlot(0));
  ASSERT_EQ(c.store().Store(cp), StoreOutcome::kQueued);
  ASSERT_TRUE(c.transfers(2).WaitHeld());  // rank 2 is copying out the job's ids
  c.agent(2).Stop();

  std::vector<StoreEvent> others;
  std::optional<StoreEvent> stopped = AwaitEvent(c.store(), StoreEvent::Kind::kStopped, &others);
  ASSERT_TRUE(stopped.has_value());
  EXPECT_THAT(stopped->status.message(), HasSubstr("the record link to rank 2 closed"));
  EXPECT_THAT(stopped->status.message(), HasSubstr("with jobs outstanding"));
  EXPECT_TRUE(others.empty()) << "the store reported the job of a lost peer";
  // Nothing new starts; the job's ids stay with the store (never reported).
  EXPECT_EQ(c.store().Store(RootCheckpoint(2, 2, 10, 20, StateSlot(1))), StoreOutcome::kDisabled);
  EXPECT_FALSE(c.store().idle());
  // Waiting for idleness ends at once: the stopped transport never finishes
  // the job (a regression waits out the hour, past the ctest timeout).
  EXPECT_FALSE(c.store().WaitIdle(std::chrono::hours(1)));
  std::vector<PeerLinkReport> links = c.coordinator().PeerLinks();
  EXPECT_EQ(links[1].state, "failed");
  EXPECT_EQ(links[1].errors_by_reason["link_lost"], 1u);
  EXPECT_EQ(links[0].state, "up");

  c.transfers(2).Release();  // the killed rank's copy finally lands
  std::optional<Status> ended = c.agent(2).Wait(testing::Soon());
  ASSERT_TRUE(ended.has_value());
  EXPECT_EQ(ended->code(), StatusCode::kAborted);
  Status closed = c.coordinator().Close();
  EXPECT_FALSE(closed.ok());
  EXPECT_THAT(closed.message(), HasSubstr("rank 2"));
  std::optional<Status> one = c.agent(1).Wait(testing::Soon());
  ASSERT_TRUE(one.has_value());
  EXPECT_TRUE(one->ok()) << one->ToString();  // rank 1 drained and closed cleanly
}

TEST(MultiRankFaultTest, OneRankFailsAWriteAndTheOthersAreUnlinkedBeforeTheFailure) {
  ScratchDir dir;
  Cluster c(dir.path());
  STRATA_OK_OR_SKIP_DIRECT_IO(c.Start());
  c.transfers(1).set_mode(FaultyTransfers::Mode::kFailCopyOut);
  ASSERT_EQ(c.store().Store(RootCheckpoint(1, 1, 10, 0, StateSlot(0))), StoreOutcome::kQueued);
  std::optional<StoreEvent> failed = AwaitEvent(c.store(), StoreEvent::Kind::kStoreFailed);
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->checkpoint_id, 1u);
  EXPECT_THAT(failed->status.message(), HasSubstr("rank 1: injected copy-out failure"));
  // Ranks 0 and 2 wrote the file; it was unlinked before the failure came.
  for (uint32_t r = 0; r < c.world_size(); ++r) {
    EXPECT_TRUE(c.Files(r).empty()) << "rank " << r;
  }
  EXPECT_EQ(c.store().index().size(), 0u);
  for (const PeerLinkReport& p : c.coordinator().PeerLinks()) EXPECT_EQ(p.state, "up");

  // The transport goes on: the next store lands on every rank.
  c.transfers(1).set_mode(FaultyTransfers::Mode::kPass);
  ASSERT_EQ(c.store().Store(RootCheckpoint(2, 2, 10, 20, StateSlot(1))), StoreOutcome::kQueued);
  std::optional<StoreEvent> stored = AwaitEvent(c.store(), StoreEvent::Kind::kStored);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(c.Files(0).size(), 1u);
  c.ExpectSameFilesEverywhere();
  ASSERT_TRUE(c.Close().ok());
}

}  // namespace
}  // namespace strata
