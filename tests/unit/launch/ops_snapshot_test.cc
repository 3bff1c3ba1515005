#include "launch/ops/ops_snapshot.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(OpsSnapshotTest, PublisherHandsOutTheNewest) {
  SnapshotPublisher p;
  EXPECT_EQ(p.Latest(), nullptr);
  OpsSnapshot a;
  a.rank = RankId(1);
  p.Publish(a);
  std::shared_ptr<const OpsSnapshot> first = p.Latest();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->rank, RankId(1));
  OpsSnapshot b;
  b.rank = RankId(2);
  p.Publish(b);
  EXPECT_EQ(p.Latest()->rank, RankId(2));
  EXPECT_EQ(first->rank, RankId(1));  // a reader's copy never changes under it
}

TEST(OpsSnapshotTest, Health) {
  const Clock::time_point t0 = Clock::time_point() + 1h;
  Health h = EvaluateHealth(nullptr, t0, 30s);
  EXPECT_FALSE(h.ok);
  EXPECT_NE(h.reason.find("starting"), std::string::npos);

  OpsSnapshot s;
  s.taken_at = t0;
  h = EvaluateHealth(&s, t0 + 30s, 30s);
  EXPECT_TRUE(h.ok);
  EXPECT_EQ(h.reason, "ok");

  h = EvaluateHealth(&s, t0 + 31s, 30s);
  EXPECT_FALSE(h.ok);
  EXPECT_EQ(h.reason,
            "state is 31000 ms old (limit 30000 ms): the owner thread stopped publishing");

  s.unhealthy_reason = "transport stopped: rank 2 link lost with job 7 outstanding";
  h = EvaluateHealth(&s, t0, 30s);
  EXPECT_FALSE(h.ok);
  EXPECT_EQ(h.reason, s.unhealthy_reason);
}

TEST(OpsSnapshotTest, DrainFailedSnapshotIsUnhealthyAndKeepsTheLastState) {
  const Clock::time_point t0 = Clock::time_point() + 1h;
  OpsSnapshot last;
  last.rank = RankId(3);
  last.store.lookups = 42;
  last.taken_at = t0;
  const Status drain = Status::Unavailable("rank 1 did not confirm its drain");
  const OpsSnapshot s = DrainFailedSnapshot(&last, drain, t0 + 5s);
  EXPECT_EQ(s.rank, RankId(3));
  EXPECT_EQ(s.store.lookups, 42u);
  EXPECT_EQ(s.taken_at, t0 + 5s);
  EXPECT_EQ(s.drain_failure, drain.ToString());
  const Health h = EvaluateHealth(&s, t0 + 5s, 30s);
  EXPECT_FALSE(h.ok);
  EXPECT_EQ(h.reason, "the drain at shutdown failed: " + drain.ToString());

  // No snapshot published before the Close: the failure is still reported.
  const OpsSnapshot bare = DrainFailedSnapshot(nullptr, drain, t0);
  EXPECT_EQ(bare.drain_failure, drain.ToString());
  EXPECT_FALSE(EvaluateHealth(&bare, t0, 30s).ok);
}

}  // namespace
}  // namespace strata
