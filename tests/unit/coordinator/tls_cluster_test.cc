// Ranks joined over mutual TLS record links, end to end over loopback: a
// 3-rank cluster stores and restores byte-exact; peers with a certificate
// of another CA or no TLS at all never reach the join (counted), while the
// real ranks still join; the nonce and rank checks still apply over TLS.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "launch/runtime/synthetic_runtime.h"
#include "store/record/fingerprint.h"
#include "tests/unit/coordinator/multi_rank_test_support.h"
#include "tests/unit/coordinator/scripted_rank.h"
#include "tests/unit/wire/tls_test_certs.h"
#include "tests/unit/wire/wire_test_util.h"

namespace strata {
namespace {

using testing::Cluster;
using testing::ClusterOptions;
using testing::ContextOf;
using testing::FixedTicket;
using ::testing::HasSubstr;
using testing::HelloFor;
using testing::Issue;
using testing::Issued;
using testing::ScratchDir;
using testing::ScriptedRank;
using testing::Soon;

constexpr auto kIdleBound = std::chrono::seconds(30);

// The cluster's CA and one certificate per rank, in its own scratch dir.
struct ClusterPki {
  ScratchDir dir;
  Issued ca = Issue(dir.path(), "ca", nullptr);
  Issued rank = Issue(dir.path(), "rank", &ca);
  std::shared_ptr<const wire::TlsContext> tls = ContextOf(rank, ca);
};

// Rank zero joining on another thread; the test takes the peers' tickets.
struct Join {
  explicit Join(Cluster& c) : cluster(c) {
    coordinator = std::async(std::launch::async, [this] {
      return cluster.StartCoordinator(cluster.CoordinatorOptionsFor());
    });
  }
  std::vector<JoinTicket> Tickets() {
    std::vector<std::future<Result<JoinTicket>>> pending;
    for (uint32_t r = 1; r < cluster.world_size(); ++r) {
      pending.push_back(std::async(std::launch::async, [this, r] {
        return cluster.rendezvous().Join(RankId(r), cluster.world_size(), Soon());
      }));
    }
    std::vector<JoinTicket> out(1);
    for (auto& f : pending) {
      Result<JoinTicket> t = f.get();
      EXPECT_TRUE(t.ok()) << t.status().ToString();
      out.push_back(t.ok() ? *t : JoinTicket{});
    }
    return out;
  }
  Cluster& cluster;
  std::future<Status> coordinator;
};

TEST(TlsCluster, ThreeRanksStoreAndRestoreByteExactOverTls) {
  ClusterPki pki;
  ScratchDir dir;
  ClusterOptions options;
  options.world_size = 3;
  options.tls = pki.tls;
  Cluster c(dir.path(), options);
  STRATA_OK_OR_SKIP_DIRECT_IO(c.Start());
  SyntheticRuntime rt(c.all_planes(), &c.store());
  const uint32_t a = rt.NewConversation();
  ASSERT_TRUE(rt.Turn(a, 1000).ok());
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(rt.Turn(a, 600).ok());
  const uint32_t b = rt.Branch(a, 500);
  ASSERT_TRUE(rt.Turn(b, 300).ok());
  ASSERT_TRUE(rt.WaitForStores().ok());
  ASSERT_TRUE(c.store().WaitIdle(kIdleBound));
  EXPECT_EQ(rt.stats().store_failed, 0u);
  EXPECT_GE(rt.stats().stored, 3u);
  c.ExpectSameFilesEverywhere();

  rt.EvictGpu();  // every restored byte comes back through the record links
  TurnReport ta = *rt.Turn(a, 10);
  EXPECT_TRUE(ta.host_hit);
  EXPECT_EQ(ta.host_reused_tokens, 1600u);
  TurnReport tb = *rt.Turn(b, 10);
  EXPECT_TRUE(tb.host_hit);
  EXPECT_EQ(rt.stats().mismatches, 0u);
  EXPECT_GT(rt.stats().restored_bytes, 0u);
  ASSERT_TRUE(rt.WaitForStores().ok());
  for (const PeerLinkReport& p : c.coordinator().PeerLinks()) {
    EXPECT_EQ(p.state, "up") << "rank " << p.peer.value;
    EXPECT_TRUE(p.errors_by_reason.empty()) << "rank " << p.peer.value;
    EXPECT_GT(p.jobs_sent, 0u);
    EXPECT_EQ(p.link.tls_handshake_failures, 0u);
  }
  EXPECT_EQ(c.coordinator().join_stats().tls_refused, 0u);
  ASSERT_TRUE(c.Close().ok());
}

// Strangers that dial rank zero with the real nonce: one with a certificate
// of another CA, one without TLS. Neither Hello is ever read.
TEST(TlsCluster, PeersOfAnotherCaOrWithoutTlsAreRefusedAndTheRealRanksJoin) {
  ClusterPki pki;
  Issued other_ca = Issue(pki.dir.path(), "other-ca", nullptr);
  Issued stranger = Issue(pki.dir.path(), "stranger", &other_ca);
  ScratchDir dir;
  ClusterOptions options;
  options.world_size = 2;
  options.tls = pki.tls;
  Cluster c(dir.path(), options);
  Join join(c);
  const std::vector<JoinTicket> t = join.Tickets();
  {
    ScriptedRank foreign(t[1], ContextOf(stranger, pki.ca));
    foreign.Send(HelloFor(t[1], 1));
    foreign.ExpectClosedUnanswered();
  }
  {
    ScriptedRank plaintext(t[1], nullptr);
    plaintext.Send(HelloFor(t[1], 1));
    plaintext.ExpectClosedUnanswered();
  }
  STRATA_OK_OR_SKIP_DIRECT_IO(c.StartAgent(1, c.AgentOptionsFor(1), FixedTicket(t[1])));
  STRATA_OK_OR_SKIP_DIRECT_IO(join.coordinator.get());
  const JoinStats& stats = c.coordinator().join_stats();
  EXPECT_EQ(stats.tls_refused, 2u);
  EXPECT_EQ(stats.rejected_hellos, 0u);
  ASSERT_TRUE(c.Close().ok());
}

TEST(TlsCluster, NonceAndRankChecksStillApplyOverTls) {
  ClusterPki pki;
  ScratchDir dir;
  ClusterOptions options;
  options.world_size = 3;
  options.tls = pki.tls;
  Cluster c(dir.path(), options);
  Join join(c);
  const std::vector<JoinTicket> t = join.Tickets();
  {
    ScriptedRank impostor(t[1], pki.tls);  // a member's certificate, a wrong nonce
    wire::Hello h = HelloFor(t[1], 1);
    h.nonce[3] ^= 1;
    impostor.Send(h);
    EXPECT_THAT(impostor.Rejection(), HasSubstr("claiming rank 1: wrong nonce"));
  }
  {
    ScriptedRank zero(t[1], pki.tls);
    zero.Send(HelloFor(t[1], 0));
    EXPECT_THAT(zero.Rejection(), HasSubstr("rank 0 is rank zero itself"));
  }
  {
    ScriptedRank swapped(t[1], pki.tls);
    swapped.Send(HelloFor(t[1], 2));  // rank 1's nonce, claiming rank 2
    EXPECT_THAT(swapped.Rejection(), HasSubstr("claiming rank 2: wrong nonce"));
  }
  for (uint32_t r = 1; r < 3; ++r) {
    STRATA_OK_OR_SKIP_DIRECT_IO(c.StartAgent(r, c.AgentOptionsFor(r), FixedTicket(t[r])));
  }
  STRATA_OK_OR_SKIP_DIRECT_IO(join.coordinator.get());
  EXPECT_EQ(c.coordinator().join_stats().rejected_hellos, 3u);
  EXPECT_EQ(c.coordinator().join_stats().tls_refused, 0u);
  ASSERT_TRUE(c.Close().ok());
}

}  // namespace
}  // namespace strata
