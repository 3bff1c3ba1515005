// A peer rank's record service on its own: it opens everything before it
// joins, and keeps its staging alive when its drain is not confirmed.
#include "rank_agent/rank_agent.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>

#include "store/record/fingerprint.h"
#include "tests/unit/coordinator/multi_rank_test_support.h"

namespace strata {
namespace {

using testing::AwaitEvent;
using testing::Cluster;
using testing::ClusterOptions;
using testing::FaultyTransfers;
using ::testing::HasSubstr;
using testing::RootCheckpoint;
using testing::ScratchDir;

TEST(RankAgentTest, ARankThatCannotOpenItsRecordDirectoryFailsBeforeJoining) {
  ScratchDir dir;
  ClusterOptions o;
  o.world_size = 2;
  Cluster c(dir.path(), o);
  RankAgentOptions options = c.AgentOptionsFor(1);
  // Another process owns rank 1's record directory.
  Result<std::unique_ptr<LocalDisk>> owner = LocalDisk::Open(
      options.geometry, options.identity,
      ComputeRankLayoutFingerprint(options.geometry.ranks[0], options.geometry.page_tokens, 1, 2),
      options.disk);
  if (!owner.ok() && owner.status().message().find("O_DIRECT") != std::string::npos) {
    GTEST_SKIP() << owner.status().message();
  }
  ASSERT_TRUE(owner.ok()) << owner.status().ToString();
  std::atomic<bool> joined{false};
  RankJoin join = [&joined](std::chrono::steady_clock::time_point) -> Result<RecordLinkTicket> {
    joined = true;
    return Status::Unavailable("not reached");
  };
  Status started = c.StartAgent(1, options, join);
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.code(), StatusCode::kBusy);
  EXPECT_THAT(started.message(), HasSubstr("rank 1 cannot open its record service"));
  EXPECT_THAT(started.message(), HasSubstr("in use by"));
  EXPECT_FALSE(joined.load()) << "a rank that cannot serve must never join";
}

TEST(RankAgentTest, OptionsThatCannotWorkAreRefused) {
  ScratchDir dir;
  Cluster c(dir.path());
  RankAgentOptions zero = c.AgentOptionsFor(1);
  zero.rank = RankId(0);
  EXPECT_EQ(c.StartAgent(1, zero, testing::FixedTicket({})).code(), StatusCode::kInvalidArgument);
  RankAgentOptions two_ranks = c.AgentOptionsFor(1);
  two_ranks.geometry.ranks.push_back(two_ranks.geometry.ranks[0]);
  EXPECT_EQ(c.StartAgent(1, two_ranks, testing::FixedTicket({})).code(),
            StatusCode::kInvalidArgument);
  RankAgentOptions no_limit = c.AgentOptionsFor(1);
  no_limit.disk_limit_bytes = 0;
  EXPECT_EQ(c.StartAgent(1, no_limit, testing::FixedTicket({})).code(),
            StatusCode::kInvalidArgument);
}

TEST(RankAgentTest, AnUnconfirmedDrainKeepsTheStagingAliveAndEndsWithTheError) {
  ScratchDir dir;
  ClusterOptions o;
  o.world_size = 2;
  Cluster c(dir.path(), o);
  RankAgentOptions options = c.AgentOptionsFor(1);
  options.drain_timeout = std::chrono::milliseconds(200);
  STRATA_OK_OR_SKIP_DIRECT_IO(
      c.StartAgent(1, options, JoinThroughRendezvous(c.rendezvous(), RankId(1), o.world_size)));
  CoordinatorOptions co = c.CoordinatorOptionsFor();
  co.store.close_deadline = std::chrono::milliseconds(300);
  STRATA_OK_OR_SKIP_DIRECT_IO(c.StartCoordinator(co));
  c.transfers(1).set_mode(FaultyTransfers::Mode::kHoldCopyOut);  // rank 1's copy never ends
  ASSERT_EQ(c.store().Store(RootCheckpoint(1, 1, 10, 0, StateSlot(0))), StoreOutcome::kQueued);
  ASSERT_TRUE(c.transfers(1).WaitHeld());
  EXPECT_FALSE(c.coordinator().Close().ok());  // rank 1 never confirms its drain
  std::optional<Status> ended = c.agent(1).Wait(testing::Soon());
  ASSERT_TRUE(ended.has_value());
  EXPECT_FALSE(ended->ok());
  EXPECT_THAT(ended->message(), HasSubstr("rank 1 did not confirm its drain"));
  EXPECT_THAT(ended->message(), HasSubstr("keep device memory allocated"));
  EXPECT_EQ(c.agent(1).state(), AgentState::kFailed);
  // The held copy is never let go: its staging and planes stay untouched.
}

}  // namespace
}  // namespace strata
