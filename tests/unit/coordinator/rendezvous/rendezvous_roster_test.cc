#include "coordinator/rendezvous/rendezvous_roster.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

Nonce N(uint8_t b) {
  Nonce n;
  n.bytes.fill(b);
  return n;
}

TEST(RendezvousRosterTest, CompletesWhenEveryPeerJoined) {
  RendezvousRoster roster(3);
  EXPECT_FALSE(roster.complete());
  ASSERT_TRUE(roster.Admit(RankId(2), 3, "10.0.0.2", N(2)).ok());
  EXPECT_EQ(roster.Missing(), std::vector<RankId>{RankId(1)});
  ASSERT_TRUE(roster.Admit(RankId(1), 3, "10.0.0.1", N(1)).ok());
  ASSERT_TRUE(roster.complete());
  PeerTable t = roster.Table();
  EXPECT_EQ(t.world_size, 3u);
  ASSERT_EQ(t.peers.size(), 2u);
  EXPECT_EQ(t.peers[0].rank, RankId(1));
  EXPECT_EQ(t.peers[0].address, "10.0.0.1");
  EXPECT_EQ(t.peers[0].nonce, N(1));
  EXPECT_EQ(t.Find(RankId(2))->address, "10.0.0.2");
  EXPECT_EQ(t.Find(RankId(0)), nullptr);
  EXPECT_EQ(t.Find(RankId(3)), nullptr);
}

TEST(RendezvousRosterTest, WorldOfOneIsCompleteAtOnce) {
  RendezvousRoster roster(1);
  EXPECT_TRUE(roster.complete());
  EXPECT_TRUE(roster.Table().peers.empty());
}

TEST(RendezvousRosterTest, WorldSizeMismatch) {
  RendezvousRoster roster(3);
  Status s = roster.Admit(RankId(1), 4, "10.0.0.1", N(1));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "rank 1 (from 10.0.0.1) has world size 4 but rank zero has world size 3 (every rank "
            "must be started with the same world size)");
  EXPECT_EQ(roster.Find(RankId(1)), nullptr);
}

TEST(RendezvousRosterTest, RankZeroAndOutOfRange) {
  RendezvousRoster roster(3);
  Status s = roster.Admit(RankId(0), 3, "10.0.0.9", N(0));
  EXPECT_NE(s.message().find("claimed rank 0"), std::string::npos);
  s = roster.Admit(RankId(3), 3, "10.0.0.9", N(0));
  EXPECT_EQ(s.message(),
            "rank 3 (from 10.0.0.9) is out of range for world size 3 (peers are ranks 1..2)");
}

TEST(RendezvousRosterTest, DuplicateRankNamesBothAddresses) {
  RendezvousRoster roster(3);
  ASSERT_TRUE(roster.Admit(RankId(1), 3, "10.0.0.1", N(1)).ok());
  Status s = roster.Admit(RankId(1), 3, "10.0.0.5", N(5));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "rank 1 joined twice: from 10.0.0.1 and from 10.0.0.5 (two processes were started as "
            "rank 1)");
  EXPECT_EQ(roster.Find(RankId(1))->nonce, N(1));  // unchanged
}

TEST(RendezvousRosterTest, WithdrawnRankMayJoinAgain) {
  RendezvousRoster roster(2);
  ASSERT_TRUE(roster.Admit(RankId(1), 2, "10.0.0.1", N(1)).ok());
  roster.Withdraw(RankId(1));
  EXPECT_FALSE(roster.complete());
  ASSERT_TRUE(roster.Admit(RankId(1), 2, "10.0.0.1", N(7)).ok());
  EXPECT_EQ(roster.Table().peers[0].nonce, N(7));
  roster.Withdraw(RankId(9));  // out of range: no-op
}

TEST(RendezvousRosterTest, MissingSummaryNamesRanks) {
  RendezvousRoster roster(4);
  EXPECT_EQ(roster.MissingSummary(), "ranks 1, 2, 3 of 4 did not join (joined: none)");
  ASSERT_TRUE(roster.Admit(RankId(2), 4, "h", N(2)).ok());
  ASSERT_TRUE(roster.Admit(RankId(3), 4, "h", N(3)).ok());
  EXPECT_EQ(roster.MissingSummary(), "rank 1 of 4 did not join (joined: 2, 3)");
}

TEST(NonceTest, SeededSourceIsDeterministicAndOsSourceVaries) {
  NonceSource a = SeededNonceSource(7);
  NonceSource b = SeededNonceSource(7);
  Nonce a1 = *a();
  EXPECT_EQ(a1, *b());
  EXPECT_NE(a1, *a());
  EXPECT_EQ(NonceHex(a1).size(), 32u);
  NonceSource os = OsNonceSource();
  Nonce o1 = *os();
  Nonce o2 = *os();
  EXPECT_NE(o1, o2);  // 2^-128 chance of a false failure
  Nonce zero;
  EXPECT_EQ(NonceHex(zero), std::string(32, '0'));
}

}  // namespace
}  // namespace strata
