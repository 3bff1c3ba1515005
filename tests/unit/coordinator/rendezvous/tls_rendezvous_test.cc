// The TCP rendezvous over mutual TLS: ranks with certificates of the
// cluster CA join; a plaintext peer is refused and counted while the real
// ranks still join; a peer with a certificate of another CA, or facing a
// rank zero of another CA, stops at once instead of retrying to the deadline.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>

#include "coordinator/rendezvous/tcp_rendezvous.h"
#include "tests/unit/coordinator/rendezvous/tcp_rendezvous_test_support.h"
#include "tests/unit/store/record/record_test_support.h"
#include "tests/unit/wire/tls_test_certs.h"

namespace strata {
namespace {

using namespace std::chrono_literals;
using testing::ContextOf;
using ::testing::HasSubstr;
using testing::Issue;
using testing::Issued;
using testing::ScratchDir;

constexpr auto kTestDeadline = 30s;
RendezvousDeadline Soon() { return RendezvousClock::now() + kTestDeadline; }

struct Pki {
  ScratchDir dir;
  Issued ca = Issue(dir.path(), "ca", nullptr);
  Issued rank = Issue(dir.path(), "rank", &ca);
  std::shared_ptr<const wire::TlsContext> tls = ContextOf(rank, ca);
};

std::unique_ptr<TcpRendezvousServer> Listen(std::shared_ptr<const wire::TlsContext> tls,
                                            TcpRendezvousServer::ProblemObserver obs = {}) {
  Result<std::unique_ptr<TcpRendezvousServer>> s =
      TcpRendezvousServer::Listen("127.0.0.1", 0, testing::TestJobSecret(), SeededNonceSource(7),
                                  {}, std::move(obs), std::move(tls));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

std::future<Result<JoinTicket>> JoinAsync(uint16_t port, uint32_t rank, uint32_t world,
                                          std::shared_ptr<const wire::TlsContext> tls,
                                          RendezvousDeadline deadline = Soon()) {
  return std::async(std::launch::async, [=] {
    TcpRendezvousClient client("127.0.0.1", port, testing::TestJobSecret(), {}, {}, tls);
    return client.Join(RankId(rank), world, deadline);
  });
}

TEST(TlsRendezvous, ThreeRanksJoinOverTls) {
  Pki pki;
  auto server = Listen(pki.tls);
  std::vector<std::future<Result<JoinTicket>>> peers;
  for (uint32_t r = 1; r < 3; ++r) peers.push_back(JoinAsync(server->port(), r, 3, pki.tls));
  Result<PeerTable> table = server->AwaitPeers(3, 45678, Soon());
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  for (uint32_t r = 1; r < 3; ++r) {
    Result<JoinTicket> t = peers[r - 1].get();
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(t->record_port, 45678);
    EXPECT_EQ(t->nonce, table->Find(RankId(r))->nonce);
  }
  EXPECT_EQ(server->stats().tls_handshake_failures, 0u);
}

TEST(TlsRendezvous, APlaintextPeerIsRefusedAndCountedAndTheRanksStillJoin) {
  Pki pki;
  std::promise<Status> problem;
  bool reported = false;
  auto server = Listen(pki.tls, [&](const Status& s) {
    if (!reported) problem.set_value(s);
    reported = true;
  });
  // The plaintext peer's hello fails the handshake; it retries until its
  // (short) deadline and then gives up.
  auto plaintext = JoinAsync(server->port(), 1, 2, nullptr, RendezvousClock::now() + 2s);
  std::future<Status> first_problem = problem.get_future();
  auto awaited =
      std::async(std::launch::async, [&] { return server->AwaitPeers(2, 45678, Soon()); });
  // The real rank joins only once the plaintext one was refused.
  ASSERT_EQ(first_problem.wait_for(kTestDeadline), std::future_status::ready);
  EXPECT_THAT(first_problem.get().ToString(), HasSubstr("TLS handshake failed"));
  auto real = JoinAsync(server->port(), 1, 2, pki.tls);
  Result<PeerTable> table = awaited.get();
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_TRUE(real.get().ok());
  EXPECT_FALSE(plaintext.get().ok());
  EXPECT_GE(server->stats().tls_handshake_failures, 1u);
}

TEST(TlsRendezvous, APeerOfAnotherCaStopsAtOnce) {
  Pki pki;
  Issued other_ca = Issue(pki.dir.path(), "other-ca", nullptr);
  Issued stranger = Issue(pki.dir.path(), "stranger", &other_ca);
  auto server = Listen(pki.tls);
  // Its certificate is refused by rank zero: no retry until the deadline.
  auto refused = JoinAsync(server->port(), 1, 2, ContextOf(stranger, pki.ca));
  auto awaited =
      std::async(std::launch::async, [&] { return server->AwaitPeers(2, 45678, Soon()); });
  Result<JoinTicket> t = refused.get();  // long before its deadline
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().ToString(), HasSubstr("refused this rank's TLS certificate"));
  auto real = JoinAsync(server->port(), 1, 2, pki.tls);
  Result<PeerTable> table = awaited.get();
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_TRUE(real.get().ok());
  EXPECT_GE(server->stats().tls_handshake_failures, 1u);
}

TEST(TlsRendezvous, ARankZeroOfAnotherCaIsRefusedByThePeer) {
  Pki pki;
  Issued other_ca = Issue(pki.dir.path(), "other-ca", nullptr);
  Issued impostor = Issue(pki.dir.path(), "impostor", &other_ca);
  auto server = Listen(ContextOf(impostor, other_ca));
  auto peer = JoinAsync(server->port(), 1, 2, pki.tls);
  Result<PeerTable> table = server->AwaitPeers(2, 45678, RendezvousClock::now() + 5s);
  EXPECT_FALSE(table.ok());
  Result<JoinTicket> t = peer.get();
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().ToString(), HasSubstr("TLS handshake failed"));
  EXPECT_THAT(t.status().ToString(), HasSubstr("peer certificate"));
}

}  // namespace
}  // namespace strata
