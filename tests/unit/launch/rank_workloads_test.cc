// The peer workload against a scripted PeerRank: what ends it, and that it
// waits on the agent's end (bounded) rather than sleeping.
#include "launch/rank/workloads.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata {
namespace {

using Clock = std::chrono::steady_clock;

// A peer whose agent state the test scripts. WaitEnded never blocks: it
// records its deadline and runs `on_wait`.
class ScriptedPeer final : public PeerRank {
 public:
  HostStore* store() override { return nullptr; }
  std::string Summary() const override { return "scripted peer"; }
  Status Close() override { return Status::Ok(); }
  bool Serving() const override { return serving; }
  bool Joining() const override { return joining; }
  bool WaitEnded(Clock::time_point deadline) override {
    deadlines.push_back(deadline);
    if (on_wait) on_wait(*this);
    return !serving;
  }

  bool serving = true;
  bool joining = false;
  std::function<void(ScriptedPeer&)> on_wait;
  std::vector<Clock::time_point> deadlines;
};

TEST(RankWorkloadsTest, PeerEndsWhenItsAgentEnds) {
  ScriptedPeer peer;
  int waits_left = 3;
  peer.on_wait = [&waits_left](ScriptedPeer& p) { p.serving = --waits_left > 0; };
  StopRequest stop;
  int published = 0;
  EXPECT_EQ(ServeAsPeer(peer, stop, [&] { ++published; }), 0);
  const Clock::time_point after = Clock::now();
  ASSERT_EQ(peer.deadlines.size(), 3u);
  // Each wait is bounded by the publish interval (taken before `after`), and
  // the snapshot is republished before every wait and once more at the end.
  for (Clock::time_point d : peer.deadlines) EXPECT_LE(d, after + kPeerPublishInterval);
  EXPECT_EQ(published, 4);
}

TEST(RankWorkloadsTest, PeerStillJoiningStopsAtOnceOnAStopRequest) {
  ScriptedPeer peer;
  peer.joining = true;
  StopRequest stop;
  stop.Request();
  int published = 0;
  EXPECT_EQ(ServeAsPeer(peer, stop, [&] { ++published; }), 0);
  EXPECT_TRUE(peer.deadlines.empty()) << "a joining peer must not wait for rank zero";
  EXPECT_EQ(published, 1);
}

TEST(RankWorkloadsTest, SignalledServingPeerKeepsServingUntilRankZeroClosesTheSession) {
  ScriptedPeer peer;
  StopRequest stop;
  stop.Request();
  // Rank zero drains and closes the session during the grace.
  peer.on_wait = [](ScriptedPeer& p) { p.serving = p.deadlines.size() < 2; };
  EXPECT_EQ(ServeAsPeer(peer, stop, [] {}), 0);
  const Clock::time_point after = Clock::now();
  // It waited twice (it did not stop at the signal), each wait bounded.
  ASSERT_EQ(peer.deadlines.size(), 2u);
  for (Clock::time_point d : peer.deadlines) EXPECT_LE(d, after + kPeerPublishInterval);
}

}  // namespace
}  // namespace strata
