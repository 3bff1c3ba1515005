// The manager's TCP control address (docs/pool.md, "Protocol"): an instance
// over TCP proves the job secret over the manager's Challenge and maps the
// named arena by path, then puts and claims byte-exact like one on the Unix
// socket; a wrong or missing secret is rejected with its reason and counted;
// a manager refuses to listen on TCP without a secret.
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "coordinator/pool/instance_pool.h"
#include "coordinator/pool/lookup_grace.h"
#include "coordinator/pool/pool_client.h"
#include "coordinator/pool/pool_hello_proof.h"
#include "coordinator/pool/pool_server.h"
#include "coordinator/pool/pool_socket.h"
#include "launch/presets.h"
#include "tests/unit/coordinator/pool/pool_test_data.h"
#include "tests/unit/coordinator/pool/pooled_test_instance.h"

namespace strata::pool {
namespace {

constexpr uint64_t kSlotBytes = 64 * 1024;

using testing::Pattern;
using testing::Tokens;

JobSecret Secret(char fill) { return *JobSecret::FromText(std::string(40, fill), "test"); }

class PoolTcpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTestDir("strata-pool-tcp");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    server_.reset();
    (void)::unlink(arena_path().c_str());
    (void)::unlink((arena_path() + ".generation").c_str());
    ::rmdir(dir_.c_str());
  }
  std::string arena_path() const { return dir_ + "/arena"; }
  // The pooled-store tests' manager (64 KiB slots), on a named arena and TCP.
  PoolServerOptions ManagerOptions() const {
    PoolServerOptions o = pooled_test::ManagerOptions(dir_);
    o.arena_path = arena_path();
    o.tcp_host = "127.0.0.1";
    o.tcp_port = 0;
    o.job_secret = Secret('s');
    return o;
  }
  void StartManager() {
    auto server = PoolServer::Start(ManagerOptions(), /*generation=*/5);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    ASSERT_NE(server_->tcp_port(), 0);
  }
  PoolClientOptions TcpClient(const std::string& gpu, std::optional<JobSecret> secret) const {
    PoolClientOptions o =
        testing::ClientOptions("tcp://127.0.0.1:" + std::to_string(server_->tcp_port()), gpu);
    o.job_secret = std::move(secret);
    return o;
  }

  std::string dir_;
  std::unique_ptr<PoolServer> server_;
};

TEST_F(PoolTcpTest, AnInstanceOverTcpPutsAndAnotherOnTheUnixSocketClaimsByteExact) {
  StartManager();
  auto a = PoolClient::Connect(TcpClient("GPU-a", Secret('s')));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ((*a)->accepted().arena_path, arena_path());
  EXPECT_EQ((*a)->accepted().generation, server_->generation());
  auto b = PoolClient::Connect(testing::ClientOptions(dir_ + "/pool.sock", "GPU-b"));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_TRUE((*b)->accepted().arena_path.empty()) << "the Unix socket passes the fd";

  const std::vector<Token> tokens = Tokens(300, 11);
  const PrefixHistory history(tokens);
  const std::vector<std::byte> record = Pattern(3 * kSlotBytes + 123, 5);
  ASSERT_TRUE((*a)->Put(history.key_at(256), std::nullopt, history.bucket_digest(256), record,
                        PutKind::kCascade)
                  .ok());
  auto chain = (*b)->Lookup(tokens, 0, tokens.size());
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  ASSERT_TRUE(chain->has_value());
  auto copied = (*b)->ClaimCopy(**chain);
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  ASSERT_EQ(copied->size(), 1u);
  EXPECT_EQ(copied->front(), record);

  // And the other way: the TCP instance claims what it put, through its
  // mapping of the file.
  auto again = (*a)->ClaimCopy(**chain);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->front(), record);
}

TEST_F(PoolTcpTest, ATcpConnectionsLookupGraceIsFourOfItsMeasuredRoundTrips) {
  StartManager();
  auto tcp = PoolClient::Connect(TcpClient("GPU-a", Secret('s')));
  ASSERT_TRUE(tcp.ok()) << tcp.status().ToString();
  const uint64_t rtt = (*tcp)->control_round_trip_us();
  EXPECT_LT(rtt, 10'000'000u) << "the connect's or the Hello's, never the unset bound";
  EXPECT_EQ((*tcp)->lookup_grace_us(), LookupGraceUs(ManagerPlace::kNetwork, rtt)) << rtt;
  EXPECT_GE((*tcp)->lookup_grace_us(), kNetworkGraceMinUs);
  // A bound set by hand wins; over the Unix socket the default is the answer bound.
  PoolClientOptions bound = TcpClient("GPU-b", Secret('s'));
  bound.lookup_bound = std::chrono::milliseconds(7);
  auto set = PoolClient::Connect(bound);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ((*set)->lookup_grace_us(), 7'000u);
  PoolClientOptions unix_socket = testing::ClientOptions(dir_ + "/pool.sock", "GPU-c");
  unix_socket.answer_bound = std::chrono::milliseconds(40);
  auto local = PoolClient::Connect(unix_socket);
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_EQ((*local)->lookup_grace_us(), 40'000u);

  // An instance's link options: the seed's 2 ms on this host's socket, and
  // nothing fixed over TCP (each connection measures its own).
  InstancePoolOptions instance;
  instance.socket_path = dir_ + "/pool.sock";
  const CacheGeometry geometry = *PresetGeometry("tiny", 1, 512, 16);
  EXPECT_EQ(InstanceLinkOptions(instance, geometry).client.lookup_bound,
            std::chrono::milliseconds(kLocalGraceUs / 1000));
  instance.socket_path = "tcp://127.0.0.1:" + std::to_string(server_->tcp_port());
  EXPECT_FALSE(InstanceLinkOptions(instance, geometry).client.lookup_bound.has_value());
}

TEST_F(PoolTcpTest, AHelloWithAnotherSecretIsRejectedWithItsReasonAndCounted) {
  StartManager();
  auto wrong = PoolClient::Connect(TcpClient("GPU-a", Secret('x')));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(wrong.status().message().find("job's secret"), std::string::npos)
      << wrong.status().ToString();
  const PoolManagerStats s = server_->Stats();
  ASSERT_EQ(s.traffic.hellos_rejected.count("job_secret"), 1u);
  EXPECT_EQ(s.traffic.hellos_rejected.at("job_secret"), 1u);
  EXPECT_EQ(s.catalog.sessions, 0u) << "no session was opened";

  // The same instance with the right secret is accepted after it.
  auto right = PoolClient::Connect(TcpClient("GPU-a", Secret('s')));
  EXPECT_TRUE(right.ok()) << right.status().ToString();
}

TEST_F(PoolTcpTest, AConnectionThatSaysNoHelloIsClosedAndCounted) {
  PoolServerOptions o = ManagerOptions();
  o.hello_bound_ms = 50;
  auto server = PoolServer::Start(o, 5);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  server_ = std::move(*server);
  auto fd = ConnectTcp("127.0.0.1", server_->tcp_port(), std::chrono::seconds(5));
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  PoolSocket silent(std::move(*fd));
  auto challenge = silent.Receive(std::chrono::seconds(5));
  ASSERT_TRUE(challenge.ok()) << challenge.status().ToString();
  EXPECT_TRUE(std::holds_alternative<PoolChallenge>(challenge->message));
  // Nothing more comes: the manager closes the connection (EOF), within
  // the bound of this wait.
  auto closed = silent.Receive(std::chrono::seconds(10));
  ASSERT_FALSE(closed.ok());
  EXPECT_NE(closed.status().message().find("closed"), std::string::npos)
      << closed.status().ToString();
  EXPECT_EQ(testing::RejectionsWithin(*server_, "no_hello", 1), 1u);
  const PoolManagerStats stats = server_->Stats();
  EXPECT_EQ(stats.connections, 0u);
}

// A raw TCP connection to the manager that has read its Challenge.
PoolSocket Stranger(uint16_t port) {
  auto fd = ConnectTcp("127.0.0.1", port, std::chrono::seconds(5));
  EXPECT_TRUE(fd.ok()) << fd.status().ToString();
  PoolSocket s(fd.ok() ? std::move(*fd) : wire::UniqueFd());
  auto challenge = s.Receive(std::chrono::seconds(5));
  EXPECT_TRUE(challenge.ok() && std::holds_alternative<PoolChallenge>(challenge->message));
  return s;
}

TEST_F(PoolTcpTest, AStrangersOversizedFirstFrameIsRefusedBeforeItIsAllocated) {
  StartManager();
  PoolSocket s = Stranger(server_->tcp_port());
  // A segment table declaring one segment of 2 MiB: past the 1 MiB cap on
  // frames before a session, so the manager drops the connection.
  const uint32_t header[2] = {0, (2u << 20) / 8};
  ASSERT_EQ(::send(s.fd(), header, sizeof header, MSG_NOSIGNAL),
            static_cast<ssize_t>(sizeof header));
  auto closed = s.Receive(std::chrono::seconds(10));
  ASSERT_FALSE(closed.ok());
  EXPECT_NE(closed.status().message().find("closed"), std::string::npos)
      << closed.status().ToString();
}

TEST_F(PoolTcpTest, NewStrangersCrowdOutTheOldestWithoutASession) {
  PoolServerOptions o = ManagerOptions();
  o.tcp_sessionless_max = 2;
  auto server = PoolServer::Start(o, 5);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  server_ = std::move(*server);
  PoolSocket first = Stranger(server_->tcp_port());
  PoolSocket second = Stranger(server_->tcp_port());
  PoolSocket third = Stranger(server_->tcp_port());
  auto closed = first.Receive(std::chrono::seconds(10));
  ASSERT_FALSE(closed.ok()) << "the oldest stranger is closed";
  EXPECT_GE(testing::RejectionsWithin(*server_, "crowded_out", 1), 1u);
  // An instance with the secret still gets in (and crowds out another).
  auto proven = PoolClient::Connect(TcpClient("GPU-a", Secret('s')));
  EXPECT_TRUE(proven.ok()) << proven.status().ToString();
}

TEST_F(PoolTcpTest, AnInstanceMapsNothingAnUnprovenManagerNames) {
  // A process on the port while the manager is down: it answers with a
  // HelloAccept naming a file of this user, without the manager's proof.
  const std::string victim = dir_ + "/victim";
  {
    std::vector<char> zeros(64 * 1024 * 4, 'v');
    FILE* f = std::fopen(victim.c_str(), "w");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(zeros.data(), 1, zeros.size(), f), zeros.size());
    std::fclose(f);
    ::chmod(victim.c_str(), 0600);
  }
  uint16_t port = 0;
  auto listener = ListenTcp("127.0.0.1", 0, &port);
  ASSERT_TRUE(listener.ok()) << listener.status().ToString();
  std::thread squatter([&] {
    pollfd p{listener->get(), POLLIN, 0};
    (void)::poll(&p, 1, 10'000);
    PoolSocket s(wire::UniqueFd(::accept4(listener->get(), nullptr, nullptr, SOCK_CLOEXEC)));
    if (!s.Send(PoolChallenge{}).ok()) return;
    if (!s.Receive(std::chrono::seconds(10)).ok()) return;
    PoolHelloAccept accept;
    accept.pool_name = "shared";
    accept.slot_bytes = 64 * 1024;
    accept.slot_count = 4;
    accept.arena_path = victim;
    accept.proof = HelloProof{};  // not the secret's
    (void)s.Send(accept);
    (void)s.Receive(std::chrono::seconds(2));  // until the instance hangs up
  });
  PoolClientOptions o = testing::ClientOptions("tcp://127.0.0.1:" + std::to_string(port), "GPU-a");
  o.job_secret = Secret('s');
  auto c = PoolClient::Connect(o);
  squatter.join();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable) << c.status().ToString();
  EXPECT_NE(c.status().message().find("did not prove"), std::string::npos);
}

TEST_F(PoolTcpTest, AClientWithoutASecretRefusesTcpBeforeConnecting) {
  StartManager();
  auto none = PoolClient::Connect(TcpClient("GPU-a", std::nullopt));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find("job secret"), std::string::npos);
}

TEST_F(PoolTcpTest, AManagerListensOnTcpOnlyWithASecret) {
  PoolServerOptions no_secret = ManagerOptions();
  no_secret.job_secret.reset();
  auto a = PoolServer::Start(no_secret, 5);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(a.status().message().find("job secret"), std::string::npos);
  // Without --arena-file it listens, and serves TCP instances through the
  // data channel only (pool_data_channel_test.cc).
}

TEST(PoolHelloProofTest, TheProofBindsTheSecretTheChallengeAndTheScope) {
  PoolHello hello = testing::ClientOptions("unused", "GPU-a").hello;
  Nonce challenge;
  challenge.bytes[0] = 1;
  hello.proof = ProvePoolHello(Secret('s'), challenge, hello);
  EXPECT_TRUE(PoolHelloProven(Secret('s'), challenge, hello));
  EXPECT_FALSE(PoolHelloProven(Secret('t'), challenge, hello)) << "another secret";
  Nonce other = challenge;
  other.bytes[0] = 2;
  EXPECT_FALSE(PoolHelloProven(Secret('s'), other, hello)) << "a replay on another connection";
  PoolHello scoped = hello;
  scoped.layout[0] ^= 1;
  EXPECT_FALSE(PoolHelloProven(Secret('s'), challenge, scoped)) << "another scope";
  PoolHello bare = hello;
  bare.proof.reset();
  EXPECT_FALSE(PoolHelloProven(Secret('s'), challenge, bare)) << "no proof at all";
}

TEST(PoolHelloProofTest, TheManagersProofBindsBothNoncesAndTheArenaItNames) {
  PoolHelloAccept accept;
  accept.generation = 7;
  accept.slot_bytes = 4096;
  accept.slot_count = 8;
  accept.arena_path = "/dev/shm/arena";
  Nonce client;
  client.bytes[1] = 1;
  Nonce challenge;
  challenge.bytes[2] = 2;
  accept.proof = ProvePoolAccept(Secret('s'), client, challenge, accept);
  EXPECT_TRUE(PoolAcceptProven(Secret('s'), client, challenge, accept));
  EXPECT_FALSE(PoolAcceptProven(Secret('t'), client, challenge, accept)) << "another secret";
  EXPECT_FALSE(PoolAcceptProven(Secret('s'), challenge, client, accept)) << "nonces swapped";
  PoolHelloAccept elsewhere = accept;
  elsewhere.arena_path = "/home/user/model.bin";
  EXPECT_FALSE(PoolAcceptProven(Secret('s'), client, challenge, elsewhere)) << "another file";
  PoolHelloAccept larger = accept;
  larger.slot_count = 9;
  EXPECT_FALSE(PoolAcceptProven(Secret('s'), client, challenge, larger)) << "other sizes";
}

TEST(PoolAddressTest, ParsesUnixPathsAndTcpHostPort) {
  struct Case {
    std::string text;
    bool ok;
    bool tcp;
    std::string host;
    uint16_t port;
  };
  const std::vector<Case> cases = {
      {"/run/strata/pool.sock", true, false, "", 0},
      {"tcp://127.0.0.1:7000", true, true, "127.0.0.1", 7000},
      {"tcp://pool-host:65535", true, true, "pool-host", 65535},
      {"tcp://[::1]:7000", true, true, "::1", 7000},
      {"", false, false, "", 0},
      {"tcp://127.0.0.1", false, false, "", 0},
      {"tcp://:7000", false, false, "", 0},
      {"tcp://h:0", false, false, "", 0},
      {"tcp://h:65536", false, false, "", 0},
      {"tcp://h:70x", false, false, "", 0},
  };
  for (const Case& c : cases) {
    Result<PoolAddress> a = ParsePoolAddress(c.text);
    ASSERT_EQ(a.ok(), c.ok) << c.text;
    if (!a.ok()) {
      EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument) << c.text;
      continue;
    }
    EXPECT_EQ(a->tcp(), c.tcp) << c.text;
    if (c.tcp) {
      EXPECT_EQ(a->host, c.host) << c.text;
      EXPECT_EQ(a->port, c.port) << c.text;
    } else {
      EXPECT_EQ(a->unix_path, c.text);
    }
  }
  // A listening address (strata pool --tcp) may ask the kernel for a port.
  Result<PoolAddress> any_port = ParsePoolAddress("tcp://127.0.0.1:0", /*listening=*/true);
  ASSERT_TRUE(any_port.ok()) << any_port.status().ToString();
  EXPECT_EQ(any_port->port, 0);
  EXPECT_FALSE(ParsePoolAddress("tcp://127.0.0.1:65536", /*listening=*/true).ok());
}

}  // namespace
}  // namespace strata::pool
