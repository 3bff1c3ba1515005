// The join on rank zero: Hellos that are refused (wrong nonce, rank or
// address, a rank joined twice) while the real ranks still join; mismatches
// that fail startup (fingerprint, disk settings); garbage and oversized
// frames from connections that never say Hello.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/write.hpp>
#include <future>

#include "store/record/fingerprint.h"
#include "tests/unit/coordinator/multi_rank_test_support.h"
#include "tests/unit/coordinator/scripted_rank.h"
#include "tests/unit/wire/wire_test_util.h"

namespace strata {
namespace {

using testing::Cluster;
using testing::ClusterOptions;
using testing::FixedTicket;
using ::testing::HasSubstr;
using testing::HelloFor;
using testing::ScratchDir;
using testing::ScriptedRank;
using testing::Soon;

// Rank zero starting on another thread, and tickets the test takes itself.
struct Join {
  explicit Join(Cluster& c, CoordinatorOptions options) : cluster(c) {
    coordinator = std::async(std::launch::async,
                             [this, options] { return cluster.StartCoordinator(options); });
  }
  JoinTicket TicketFor(uint32_t rank) {
    Result<JoinTicket> t = cluster.rendezvous().Join(RankId(rank), cluster.world_size(), Soon());
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? *t : JoinTicket{};
  }
  // Tickets for ranks 1 .. N-1, taken at once (the rendezvous needs all).
  std::vector<JoinTicket> Tickets() {
    std::vector<std::future<JoinTicket>> pending;
    for (uint32_t r = 1; r < cluster.world_size(); ++r) {
      pending.push_back(std::async(std::launch::async, [this, r] { return TicketFor(r); }));
    }
    std::vector<JoinTicket> out(1);
    for (auto& f : pending) out.push_back(f.get());
    return out;
  }
  Status Started() { return coordinator.get(); }

  Cluster& cluster;
  std::future<Status> coordinator;
};

TEST(JoinTest, AWrongNonceIsRefusedAndTheRealRankStillJoins) {
  ScratchDir dir;
  ClusterOptions o;
  o.world_size = 2;
  Cluster c(dir.path(), o);
  Join join(c, c.CoordinatorOptionsFor());
  const std::vector<JoinTicket> t = join.Tickets();
  ScriptedRank impostor(t[1]);
  wire::Hello h = HelloFor(t[1], 1);
  h.nonce[3] ^= 1;
  impostor.Send(h);
  EXPECT_THAT(impostor.Rejection(), HasSubstr("claiming rank 1: wrong nonce"));
  STRATA_OK_OR_SKIP_DIRECT_IO(c.StartAgent(1, c.AgentOptionsFor(1), FixedTicket(t[1])));
  STRATA_OK_OR_SKIP_DIRECT_IO(join.Started());
  EXPECT_EQ(c.coordinator().join_stats().rejected_hellos, 1u);
  EXPECT_THAT(c.coordinator().join_stats().last_rejection, HasSubstr("wrong nonce"));
  ASSERT_TRUE(c.Close().ok());
}

TEST(JoinTest, WrongRanksAreRefusedAndTheRealRanksStillJoin) {
  ScratchDir dir;
  Cluster c(dir.path());
  Join join(c, c.CoordinatorOptionsFor());
  const std::vector<JoinTicket> t = join.Tickets();
  {
    ScriptedRank zero(t[1]);
    zero.Send(HelloFor(t[1], 0));
    EXPECT_THAT(zero.Rejection(), HasSubstr("rank 0 is rank zero itself"));
  }
  {
    ScriptedRank beyond(t[1]);
    wire::Hello h = HelloFor(t[1], 5);
    h.world_size = 8;
    beyond.Send(h);
    EXPECT_THAT(beyond.Rejection(),
                HasSubstr("claiming rank 5: out of range for rank zero's world size 3"));
  }
  {
    ScriptedRank swapped(t[1]);
    swapped.Send(HelloFor(t[1], 2));  // rank 1's nonce, claiming rank 2
    EXPECT_THAT(swapped.Rejection(), HasSubstr("claiming rank 2: wrong nonce"));
  }
  for (uint32_t r = 1; r < 3; ++r) {
    STRATA_OK_OR_SKIP_DIRECT_IO(c.StartAgent(r, c.AgentOptionsFor(r), FixedTicket(t[r])));
  }
  STRATA_OK_OR_SKIP_DIRECT_IO(join.Started());
  EXPECT_EQ(c.coordinator().join_stats().rejected_hellos, 3u);
  ASSERT_TRUE(c.Close().ok());
}

TEST(JoinTest, ARankThatJoinsTwiceIsRefusedTheSecondTime) {
  ScratchDir dir;
  Cluster c(dir.path());
  Join join(c, c.CoordinatorOptionsFor());
  const std::vector<JoinTicket> t = join.Tickets();
  ScriptedRank first(t[1]);  // plays rank 1 through the whole session
  first.Send(HelloFor(t[1], 1));
  wire::Message accepted = first.Next();
  ASSERT_TRUE(std::holds_alternative<wire::HelloAccept>(accepted)) << wire::MessageName(accepted);
  {
    ScriptedRank second(t[1]);
    second.Send(HelloFor(t[1], 1));
    EXPECT_THAT(second.Rejection(), HasSubstr("rank 1 has already joined"));
  }
  first.Send(wire::ScanSummary{});
  STRATA_OK_OR_SKIP_DIRECT_IO(c.StartAgent(2, c.AgentOptionsFor(2), FixedTicket(t[2])));
  wire::Message agreement = first.Next();
  ASSERT_TRUE(std::holds_alternative<wire::Agreement>(agreement)) << wire::MessageName(agreement);
  EXPECT_TRUE(std::get<wire::Agreement>(agreement).last);
  first.Send(wire::AgreementApplied{});
  STRATA_OK_OR_SKIP_DIRECT_IO(join.Started());
  EXPECT_EQ(c.coordinator().join_stats().rejected_hellos, 1u);

  auto closing = std::async(std::launch::async, [&] { return c.Close(); });
  ASSERT_TRUE(std::holds_alternative<wire::Drain>(first.Next()));
  first.Send(wire::Drained{});
  ASSERT_TRUE(std::holds_alternative<wire::Close>(first.Next()));
  first.link().Close();
  EXPECT_TRUE(closing.get().ok());
}

TEST(JoinTest, AConnectionFromAnotherAddressIsRefused) {
  ScratchDir dir;
  ClusterOptions o;
  o.world_size = 2;
  o.rendezvous_peer_address = "10.9.8.7";  // where rank 1's rendezvous came from
  o.join_timeout = std::chrono::milliseconds(1500);
  Cluster c(dir.path(), o);
  STRATA_OK_OR_SKIP_DIRECT_IO(c.StartAgent(1));
  Status started = c.StartCoordinator(c.CoordinatorOptionsFor());
  ASSERT_FALSE(started.ok());
  EXPECT_THAT(started.message(), HasSubstr("join deadline passed: ranks not joined: 1"));
  EXPECT_THAT(started.message(),
              HasSubstr("wrong address (rank 1's rendezvous connection came from 10.9.8.7)"));
  std::optional<Status> agent = c.agent(1).Wait(Soon());
  ASSERT_TRUE(agent.has_value());
  EXPECT_THAT(agent->message(), HasSubstr("rank zero rejected rank 1"));
  EXPECT_THAT(agent->message(), HasSubstr("Hello from 127.0.0.1 claiming rank 1: wrong address"));
}

TEST(JoinTest, ADifferentLayoutFingerprintFailsStartup) {
  ScratchDir dir;
  Cluster c(dir.path());
  STRATA_OK_OR_SKIP_DIRECT_IO(c.StartAgent(1));
  RankAgentOptions odd = c.AgentOptionsFor(2);
  odd.geometry.ranks[0].row.unit_bytes += 4096;  // rank 2's rows are larger
  STRATA_OK_OR_SKIP_DIRECT_IO(
      c.StartAgent(2, odd, JoinThroughRendezvous(c.rendezvous(), RankId(2), 3)));
  Status started = c.StartCoordinator(c.CoordinatorOptionsFor());
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(started.message(), HasSubstr("rank 2's layout fingerprint"));
  EXPECT_THAT(started.message(), HasSubstr("page planes or row sizes differ"));
  std::optional<Status> two = c.agent(2).Wait(Soon());
  ASSERT_TRUE(two.has_value());
  EXPECT_THAT(two->message(), HasSubstr("rank zero rejected rank 2: rank 2's layout fingerprint"));
  std::optional<Status> one = c.agent(1).Wait(Soon());
  ASSERT_TRUE(one.has_value());
  EXPECT_FALSE(one->ok());  // rank zero never started: rank 1 fails too
}

TEST(JoinTest, DiskSettingsThatDifferFailStartup) {
  ScratchDir dir;
  ClusterOptions o;
  o.world_size = 2;
  Cluster c(dir.path(), o);
  Join join(c, c.CoordinatorOptionsFor());
  const std::vector<JoinTicket> t = join.Tickets();
  ScriptedRank diskless(t[1]);
  wire::Hello h = HelloFor(t[1], 1);
  h.has_disk_store = false;
  h.disk_limit_bytes = 0;
  diskless.Send(h);
  EXPECT_THAT(diskless.Rejection(),
              HasSubstr("rank 1 has no disk store but rank zero has one: every rank must have a "
                        "disk store, or none"));
  Status started = join.Started();
  ASSERT_FALSE(started.ok());
  EXPECT_THAT(started.message(), HasSubstr("rank 1 has no disk store"));
}

TEST(JoinTest, GarbageAndOversizedFramesBeforeHelloAreDroppedAndTheJoinGoesOn) {
  ScratchDir dir;
  ClusterOptions o;
  o.world_size = 2;
  Cluster c(dir.path(), o);
  Join join(c, c.CoordinatorOptionsFor());
  const std::vector<JoinTicket> t = join.Tickets();
  asio::io_context io;
  const asio::ip::tcp::endpoint at(asio::ip::make_address(t[1].record_host), t[1].record_port);
  auto send_and_see_close = [&](const std::vector<uint64_t>& words) {
    asio::ip::tcp::socket s(io);
    s.connect(at);
    asio::write(s, asio::buffer(words.data(), words.size() * 8));
    std::array<char, 64> sink;
    std::error_code error;
    while (!error) s.read_some(asio::buffer(sink), error);  // until rank zero closes it
    EXPECT_TRUE(error == asio::error::eof || error == asio::error::connection_reset)
        << error.message();
  };
  send_and_see_close({uint64_t{2} << 32, 0xdeadbeefdeadbeefULL, 0x0123456789abcdefULL});
  send_and_see_close({uint64_t{0xffffff} << 32});  // one segment of 128 MiB
  STRATA_OK_OR_SKIP_DIRECT_IO(c.StartAgent(1, c.AgentOptionsFor(1), FixedTicket(t[1])));
  STRATA_OK_OR_SKIP_DIRECT_IO(join.Started());
  EXPECT_EQ(c.coordinator().join_stats().dropped_links, 2u);
  EXPECT_EQ(c.coordinator().join_stats().rejected_hellos, 0u);
  ASSERT_TRUE(c.Close().ok());
}

}  // namespace
}  // namespace strata
