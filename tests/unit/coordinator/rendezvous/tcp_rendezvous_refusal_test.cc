// Hellos rank zero refuses without failing the rendezvous (docs/wire.md: a
// stray or stale process cannot stop a healthy cluster): another job's
// secret, a proof made for another connection's challenge, a world size that
// differs, rank 0, a rank out of range, a rank already taken. Each refused
// peer learns why; the real peers still join; each refusal is counted.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>

#include "coordinator/rendezvous/tcp_rendezvous.h"
#include "tests/unit/coordinator/rendezvous/tcp_rendezvous_test_support.h"

namespace strata {
namespace {

using ::testing::HasSubstr;
using testing::JoinAsync;
using testing::kEventBound;
using testing::ListenLoopback;
using testing::RawConnect;
using testing::RawReceive;
using testing::RawSend;
using testing::Soon;
using testing::TestJobSecret;

// Rank zero of `world` ranks, running AwaitPeers on its own thread, with the
// problems it reported.
struct RankZero {
  explicit RankZero(uint32_t world, uint64_t seed) {
    server = ListenLoopback(seed, [this](const Status& s) {
      std::lock_guard lock(mu);
      problems.push_back(s.ToString());
      reported.notify_all();
    });
    awaited = std::async(std::launch::async,
                         [this, world] { return server->AwaitPeers(world, 4242, Soon()); });
  }
  uint16_t port() const { return server->port(); }
  // Waits (bounded) until `n` problems were reported.
  bool WaitForProblems(size_t n) {
    std::unique_lock lock(mu);
    return reported.wait_for(lock, kEventBound, [&] { return problems.size() >= n; });
  }
  // Joins ranks 1 .. world-1 as the job's own peers; expects every one and
  // rank zero to succeed.
  void RealPeersJoin(uint32_t world) {
    std::vector<std::future<Result<JoinTicket>>> peers;
    for (uint32_t r = 1; r < world; ++r) peers.push_back(JoinAsync(port(), r, world));
    Result<PeerTable> table = awaited.get();
    ASSERT_TRUE(table.ok()) << table.status().ToString();
    for (auto& p : peers) {
      Result<JoinTicket> t = p.get();
      EXPECT_TRUE(t.ok()) << t.status().ToString();
    }
  }

  // Declared before the server and the AwaitPeers thread, which report
  // into them, so they outlive both.
  std::mutex mu;
  std::condition_variable reported;
  std::vector<std::string> problems;  // guarded by mu
  std::unique_ptr<TcpRendezvousServer> server;
  std::future<Result<PeerTable>> awaited;  // destroyed first: waits for AwaitPeers
};

// A refused Join ends long before its deadline, with rank zero's reason.
Status RefusedJoin(std::future<Result<JoinTicket>>& join) {
  if (join.wait_for(kEventBound) != std::future_status::ready) {
    return Status::Internal("the refused join did not end");
  }
  Result<JoinTicket> t = join.get();
  return t.ok() ? Status::Internal("the join was admitted") : t.status();
}

TEST(TcpRendezvousRefusalTest, AStrangerWithAnotherSecretIsRefusedAndTheRealPeersJoin) {
  RankZero zero(3, 1);
  auto stranger = JoinAsync(zero.port(), 1, 3, Soon(), TestJobSecret('x'));
  Status refused = RefusedJoin(stranger);
  EXPECT_THAT(refused.message(),
              HasSubstr("rank zero refused rank 1: hello for rank 1 not proven"));
  zero.RealPeersJoin(3);
  EXPECT_EQ(zero.server->stats().hellos_unproven, 1u);
  EXPECT_EQ(zero.server->stats().hellos_refused, 0u);
  std::lock_guard lock(zero.mu);
  ASSERT_EQ(zero.problems.size(), 1u);
  EXPECT_THAT(zero.problems[0], HasSubstr("rendezvous connection from 127.0.0.1"));
}

TEST(TcpRendezvousRefusalTest, AProofForAnotherConnectionsChallengeIsRefused) {
  RankZero zero(2, 2);
  // The proof is right for connection a's challenge; b replays it.
  int a = RawConnect(zero.port());
  int b = RawConnect(zero.port());
  Result<RendezvousMessage> ca = RawReceive(a);
  Result<RendezvousMessage> cb = RawReceive(b);
  ASSERT_TRUE(ca.ok() && cb.ok());
  const Nonce& challenge_a = std::get<RendezvousChallenge>(*ca).challenge;
  ASSERT_NE(challenge_a, std::get<RendezvousChallenge>(*cb).challenge);
  RawSend(b, EncodeRendezvousFrame(RendezvousHello{
                 RankId(1), 2, ProveHello(TestJobSecret(), challenge_a, RankId(1), 2)}));
  Result<RendezvousMessage> answer = RawReceive(b);
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  ASSERT_TRUE(std::holds_alternative<RendezvousReject>(*answer));
  EXPECT_THAT(std::get<RendezvousReject>(*answer).reason, HasSubstr("not proven"));
  close(a);
  close(b);
  zero.RealPeersJoin(2);
  EXPECT_EQ(zero.server->stats().hellos_unproven, 1u);
}

TEST(TcpRendezvousRefusalTest, AHelloWithoutAProofIsRefused) {
  RankZero zero(2, 3);
  int raw = RawConnect(zero.port());
  ASSERT_TRUE(RawReceive(raw).ok());
  RawSend(raw, EncodeRendezvousFrame(RendezvousHello{RankId(1), 2, HelloProof{}}));
  Result<RendezvousMessage> answer = RawReceive(raw);
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  ASSERT_TRUE(std::holds_alternative<RendezvousReject>(*answer));
  close(raw);
  zero.RealPeersJoin(2);
  EXPECT_EQ(zero.server->stats().hellos_unproven, 1u);
}

TEST(TcpRendezvousRefusalTest, InadmissibleHellosAreRefusedWithoutFailingTheRendezvous) {
  struct Case {
    uint32_t rank;
    uint32_t world;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {0, 3, "claimed rank 0, which is rank zero's own"},
      {1, 4,
       "rank 1 (from 127.0.0.1) has world size 4 but rank zero has world size 3 (every rank "
       "must be started with the same world size)"},
      {3, 3, "rank 3 (from 127.0.0.1) is out of range for world size 3 (peers are ranks 1..2)"},
  };
  RankZero zero(3, 4);
  for (const Case& c : cases) {
    auto join = JoinAsync(zero.port(), c.rank, c.world);
    Status refused = RefusedJoin(join);
    EXPECT_THAT(refused.message(), HasSubstr("rank zero refused rank " + std::to_string(c.rank)))
        << c.reason;
    EXPECT_THAT(refused.message(), HasSubstr(c.reason));
  }
  zero.RealPeersJoin(3);
  EXPECT_EQ(zero.server->stats().hellos_refused, cases.size());
  EXPECT_EQ(zero.server->stats().hellos_unproven, 0u);
}

TEST(TcpRendezvousRefusalTest, ADuplicateRankIsRefusedAndTheFirstKeepsItsPlace) {
  RankZero zero(3, 5);
  auto first = JoinAsync(zero.port(), 2, 3);
  auto second = JoinAsync(zero.port(), 2, 3);
  // Whichever hello came second is refused; then rank 1 completes the job.
  ASSERT_TRUE(zero.WaitForProblems(1));
  auto rank1 = JoinAsync(zero.port(), 1, 3);
  Result<PeerTable> table = zero.awaited.get();
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_TRUE(rank1.get().ok());
  Result<JoinTicket> a = first.get();
  Result<JoinTicket> b = second.get();
  ASSERT_NE(a.ok(), b.ok()) << "exactly one of the two is rank 2";
  const Result<JoinTicket>& admitted = a.ok() ? a : b;
  const Result<JoinTicket>& refused = a.ok() ? b : a;
  EXPECT_EQ(admitted->nonce, table->Find(RankId(2))->nonce);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("rank 2 joined twice: from 127.0.0.1 and from 127.0.0.1"));
  EXPECT_EQ(zero.server->stats().hellos_refused, 1u);
}

}  // namespace
}  // namespace strata
