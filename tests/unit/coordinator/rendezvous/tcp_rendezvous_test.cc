#include "coordinator/rendezvous/tcp_rendezvous.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "coordinator/rendezvous/rendezvous_protocol.h"
#include "tests/unit/coordinator/rendezvous/tcp_rendezvous_test_support.h"

namespace strata {
namespace {

using namespace std::chrono_literals;
using testing::JoinAsync;
using testing::kEventBound;
using testing::ListenLoopback;
using testing::RawConnect;
using testing::RawReceive;
using testing::RawSend;
using testing::Soon;
using testing::TestJobSecret;

TEST(TcpRendezvousTest, FourRanksOverLoopback) {
  auto server = ListenLoopback(1);
  const uint16_t port = server->port();
  ASSERT_NE(port, 0);
  std::vector<std::future<Result<JoinTicket>>> peers;
  for (uint32_t r = 1; r < 4; ++r) peers.push_back(JoinAsync(port, r, 4));
  Result<PeerTable> table = server->AwaitPeers(4, 45678, Soon());
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->world_size, 4u);
  ASSERT_EQ(table->peers.size(), 3u);
  for (uint32_t r = 1; r < 4; ++r) {
    Result<JoinTicket> t = peers[r - 1].get();
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(t->world_size, 4u);
    EXPECT_EQ(t->record_host, "127.0.0.1");
    EXPECT_EQ(t->record_port, 45678);
    const RendezvousPeer* p = table->Find(RankId(r));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->address, "127.0.0.1");
    EXPECT_EQ(t->nonce, p->nonce);
  }
  EXPECT_NE(table->peers[0].nonce, table->peers[2].nonce);
  EXPECT_EQ(server->stats().connections, 3u);
}

TEST(TcpRendezvousTest, WorldOfOneNeedsNoPeers) {
  auto server = ListenLoopback(2);
  Result<PeerTable> table = server->AwaitPeers(1, 1, Soon());
  ASSERT_TRUE(table.ok());
  EXPECT_TRUE(table->peers.empty());
}

TEST(TcpRendezvousTest, PeerStartingBeforeRankZeroRetries) {
  // Learn a free port, then close it so the peer's first attempts are refused.
  uint16_t port = 0;
  {
    auto probe = ListenLoopback(6);
    port = probe->port();
  }
  std::promise<Status> first_failure;
  std::once_flag once;
  auto peer = std::async(std::launch::async, [&] {
    TcpRendezvousClient client("127.0.0.1", port, TestJobSecret(), {}, [&](const Status& s) {
      std::call_once(once, [&] { first_failure.set_value(s); });
    });
    return client.Join(RankId(1), 2, Soon());
  });
  std::future<Status> failed = first_failure.get_future();
  ASSERT_EQ(failed.wait_for(kEventBound), std::future_status::ready);
  EXPECT_NE(failed.get().message().find("connect"), std::string::npos);
  auto server = ListenLoopback(6, {}, port);
  Result<PeerTable> table = server->AwaitPeers(2, 999, Soon());
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  Result<JoinTicket> t = peer.get();
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->record_port, 999);
  EXPECT_EQ(t->nonce, table->peers[0].nonce);
}

TEST(TcpRendezvousTest, DeadlineNamesTheMissingRanks) {
  auto server = ListenLoopback(7);
  Result<PeerTable> table = server->AwaitPeers(3, 1, RendezvousClock::now() + 50ms);
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(table.status().message(),
            "rendezvous deadline passed: ranks 1, 2 of 3 did not join (joined: none)");
}

TEST(TcpRendezvousTest, PeerDeadlineWithoutRankZeroSaysWhatFailed) {
  uint16_t port = 0;
  {
    auto probe = ListenLoopback(8);
    port = probe->port();
  }
  TcpRendezvousClient client("127.0.0.1", port, TestJobSecret());
  Result<JoinTicket> t = client.Join(RankId(1), 2, RendezvousClock::now() + 200ms);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(t.status().message().find("rank 1: no rendezvous with rank zero at 127.0.0.1:" +
                                      std::to_string(port) + " by the deadline"),
            std::string::npos)
      << t.status().message();
  EXPECT_NE(t.status().message().find("last: connect"), std::string::npos);
}

// A rank asked to stop while it still waits for rank zero ends its join
// at once: retrying a dead rank zero, or waiting for an answer from a live
// one. (A regression waits out the hour-long deadline: the ctest timeout.)
TEST(TcpRendezvousTest, CancelEndsAJoinThatWaitsForRankZero) {
  uint16_t dead_port = 0;
  {
    auto probe = ListenLoopback(9);
    dead_port = probe->port();
  }
  auto silent = ListenLoopback(10);  // listening, never answering (no AwaitPeers)
  for (uint16_t port : {dead_port, silent->port()}) {
    TcpRendezvousClient client("127.0.0.1", port, TestJobSecret());
    std::future<Result<JoinTicket>> join = std::async(std::launch::async, [&client] {
      return client.Join(RankId(1), 2, RendezvousClock::now() + std::chrono::hours(1));
    });
    std::this_thread::sleep_for(100ms);  // let it start waiting; not a correctness wait
    client.Cancel();
    Result<JoinTicket> t = join.get();
    ASSERT_FALSE(t.ok()) << "port " << port;
    EXPECT_EQ(t.status().code(), StatusCode::kAborted) << t.status().ToString();
    EXPECT_NE(t.status().message().find("cancelled"), std::string::npos);
  }
}

TEST(TcpRendezvousTest, GarbageAndOversizedFramesAreCountedAndSurvived) {
  std::promise<void> two_problems;
  int problems = 0;
  auto server = ListenLoopback(9, [&](const Status&) {
    if (++problems == 2) two_problems.set_value();
  });
  const uint16_t port = server->port();
  auto rank_zero = std::async(std::launch::async, [&] { return server->AwaitPeers(2, 5, Soon()); });
  int garbage = RawConnect(port);
  RawSend(garbage,
          {20, 0, 0, 0, 'H', 'T', 'T', 'P', 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0});
  int oversized = RawConnect(port);
  RawSend(oversized, {0, 0, 1, 0});  // 65536-byte payload announced
  ASSERT_EQ(two_problems.get_future().wait_for(kEventBound), std::future_status::ready);
  auto peer = JoinAsync(port, 1, 2);
  Result<PeerTable> table = rank_zero.get();
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_TRUE(peer.get().ok());
  EXPECT_EQ(server->stats().bad_frames, 2u);
  // Each bad connection got its challenge, then a reject naming the problem
  // before it closed.
  Result<RendezvousMessage> m = RawReceive(garbage);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(std::holds_alternative<RendezvousChallenge>(*m));
  m = RawReceive(garbage);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_NE(std::get<RendezvousReject>(*m).reason.find("wrong magic"), std::string::npos);
  close(garbage);
  close(oversized);
}

TEST(TcpRendezvousTest, PeerThatDisconnectsIsWithdrawnAndMayRejoin) {
  std::promise<Status> withdrawn;
  auto server = ListenLoopback(10, [&](const Status& s) { withdrawn.set_value(s); });
  const uint16_t port = server->port();
  auto rank_zero = std::async(std::launch::async, [&] { return server->AwaitPeers(3, 5, Soon()); });
  int early = RawConnect(port);
  Result<RendezvousMessage> challenge = RawReceive(early);
  ASSERT_TRUE(challenge.ok()) << challenge.status().ToString();
  const Nonce& c = std::get<RendezvousChallenge>(*challenge).challenge;
  RawSend(early, EncodeRendezvousFrame(
                     RendezvousHello{RankId(1), 3, ProveHello(TestJobSecret(), c, RankId(1), 3)}));
  close(early);
  std::future<Status> w = withdrawn.get_future();
  ASSERT_EQ(w.wait_for(kEventBound), std::future_status::ready);
  EXPECT_NE(w.get().message().find("rank 1 (from 127.0.0.1) disconnected before its ticket"),
            std::string::npos);
  auto p1 = JoinAsync(port, 1, 3);
  auto p2 = JoinAsync(port, 2, 3);
  Result<PeerTable> table = rank_zero.get();
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_TRUE(p1.get().ok());
  EXPECT_TRUE(p2.get().ok());
  EXPECT_EQ(server->stats().withdrawn, 1u);
}

TEST(TcpRendezvousTest, ListenOnAnAddressNotOfThisHostFails) {
  Result<std::unique_ptr<TcpRendezvousServer>> s = TcpRendezvousServer::Listen(
      "192.0.2.1", 0, TestJobSecret(), SeededNonceSource(1));  // TEST-NET-1
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("cannot listen on 192.0.2.1:0"), std::string::npos)
      << s.status().message();
}

}  // namespace
}  // namespace strata
