#include "coordinator/rendezvous/in_process_rendezvous.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

namespace strata {
namespace {

using namespace std::chrono_literals;

// Bound for a test's rendezvous; a correct run finishes far sooner.
constexpr auto kTestDeadline = 30s;

RendezvousDeadline Soon() { return RendezvousClock::now() + kTestDeadline; }

TEST(InProcessRendezvousTest, FourRanksJoin) {
  InProcessRendezvous rv(SeededNonceSource(1), "10.9.9.9", "10.0.0.1");
  std::vector<std::future<Result<JoinTicket>>> peers;
  for (uint32_t r = 1; r < 4; ++r) {
    peers.push_back(
        std::async(std::launch::async, [&rv, r] { return rv.Join(RankId(r), 4, Soon()); }));
  }
  Result<PeerTable> table = rv.AwaitPeers(4, 7777, Soon());
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  ASSERT_EQ(table->peers.size(), 3u);
  for (uint32_t r = 1; r < 4; ++r) {
    Result<JoinTicket> t = peers[r - 1].get();
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(t->world_size, 4u);
    EXPECT_EQ(t->record_host, "10.9.9.9");
    EXPECT_EQ(t->record_port, 7777);
    EXPECT_EQ(t->nonce, table->Find(RankId(r))->nonce);
    EXPECT_EQ(table->Find(RankId(r))->address, "10.0.0.1");
  }
  EXPECT_NE(table->peers[0].nonce, table->peers[1].nonce);
}

TEST(InProcessRendezvousTest, PeersMayJoinBeforeRankZeroStarts) {
  InProcessRendezvous rv(SeededNonceSource(2));
  auto peer = std::async(std::launch::async, [&rv] { return rv.Join(RankId(1), 2, Soon()); });
  Result<PeerTable> table = rv.AwaitPeers(2, 1234, Soon());
  ASSERT_TRUE(table.ok());
  EXPECT_TRUE(peer.get().ok());
}

TEST(InProcessRendezvousTest, WorldSizeMismatchFailsBothSides) {
  InProcessRendezvous rv(SeededNonceSource(3));
  auto good = std::async(std::launch::async, [&rv] { return rv.Join(RankId(1), 3, Soon()); });
  auto bad = std::async(std::launch::async, [&rv] { return rv.Join(RankId(2), 4, Soon()); });
  Result<PeerTable> table = rv.AwaitPeers(3, 1, Soon());
  ASSERT_FALSE(table.ok());
  EXPECT_NE(table.status().message().find("rank 2 (from 127.0.0.1) has world size 4 but rank "
                                          "zero has world size 3"),
            std::string::npos);
  Result<JoinTicket> b = bad.get();
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(), table.status().message());
  EXPECT_FALSE(good.get().ok());  // the rendezvous failed for everyone
}

TEST(InProcessRendezvousTest, DeadlineNamesTheMissingRanks) {
  InProcessRendezvous rv(SeededNonceSource(4));
  auto peer = std::async(std::launch::async, [&rv] { return rv.Join(RankId(2), 4, Soon()); });
  // Rank zero's deadline is already due: whoever has joined by now counts.
  Result<PeerTable> table = rv.AwaitPeers(4, 1, RendezvousClock::now());
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(table.status().message().find("rendezvous deadline passed: ranks 1, "),
            std::string::npos)
      << table.status().message();
  EXPECT_NE(table.status().message().find("3 of 4 did not join"), std::string::npos);
  EXPECT_FALSE(peer.get().ok());
}

TEST(InProcessRendezvousTest, PeerDeadlineWithoutRankZero) {
  InProcessRendezvous rv(SeededNonceSource(5));
  Result<JoinTicket> t = rv.Join(RankId(1), 2, RendezvousClock::now() + 1ms);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("rank zero never started it"), std::string::npos);
}

TEST(InProcessRendezvousTest, DuplicateRankFails) {
  InProcessRendezvous rv(SeededNonceSource(6));
  auto a = std::async(std::launch::async, [&rv] { return rv.Join(RankId(1), 3, Soon()); });
  auto b = std::async(std::launch::async, [&rv] { return rv.Join(RankId(1), 3, Soon()); });
  Result<PeerTable> table = rv.AwaitPeers(3, 1, Soon());
  ASSERT_FALSE(table.ok());
  EXPECT_NE(table.status().message().find("rank 1 joined twice"), std::string::npos);
  EXPECT_FALSE(a.get().ok());
  EXPECT_FALSE(b.get().ok());
}

TEST(InProcessRendezvousTest, RankOutOfRangeFails) {
  InProcessRendezvous rv(SeededNonceSource(7));
  auto a = std::async(std::launch::async, [&rv] { return rv.Join(RankId(5), 3, Soon()); });
  Result<PeerTable> table = rv.AwaitPeers(3, 1, Soon());
  ASSERT_FALSE(table.ok());
  EXPECT_NE(table.status().message().find("out of range"), std::string::npos);
  EXPECT_FALSE(a.get().ok());
  EXPECT_FALSE(rv.AwaitPeers(3, 1, Soon()).ok());  // once only
  EXPECT_NE(rv.Join(RankId(1), 3, Soon()).status().message().find("already finished"),
            std::string::npos);
}

}  // namespace
}  // namespace strata
