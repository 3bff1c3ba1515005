// The manager's TCP control address under mutual TLS (docs/pool.md,
// "Protocol"): an instance with a certificate of the cluster CA handshakes,
// proves the job secret and claims byte-exact; a plaintext client, or one
// whose certificate another CA signed, fails the handshake, which the
// manager counts (hellos_rejected{"tls"}) before any Challenge is sent. The
// data channel's connections run the same handshake.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "coordinator/pool/pool_client.h"
#include "coordinator/pool/pool_server.h"
#include "tests/unit/coordinator/pool/pool_test_data.h"
#include "tests/unit/coordinator/pool/pooled_test_instance.h"
#include "tests/unit/wire/tls_test_certs.h"

namespace strata::pool {
namespace {

using strata::testing::ContextOf;
using strata::testing::Issue;
using strata::testing::Issued;

JobSecret Secret() { return *JobSecret::FromText(std::string(40, 's'), "test"); }

class PoolTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTestDir("strata-pool-tls");
    ASSERT_FALSE(dir_.empty());
    ca_ = Issue(dir_, "ca", nullptr);
    manager_cert_ = Issue(dir_, "manager", &ca_);
    instance_cert_ = Issue(dir_, "instance", &ca_);
    PoolServerOptions o = pooled_test::ManagerOptions(dir_);
    o.arena_path = dir_ + "/arena";
    o.tcp_host = "127.0.0.1";
    o.job_secret = Secret();
    o.tls = ContextOf(manager_cert_, ca_);
    auto server = PoolServer::Start(o, 9);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  PoolClientOptions Client(std::shared_ptr<const wire::TlsContext> tls) const {
    PoolClientOptions o =
        testing::ClientOptions("tcp://127.0.0.1:" + std::to_string(server_->tcp_port()), "GPU-a");
    o.job_secret = Secret();
    o.tls = std::move(tls);
    o.answer_bound = std::chrono::seconds(5);
    // Not the measured network grace (2 ms on loopback): a loaded machine
    // must not turn the lookup into a miss.
    o.lookup_bound = std::chrono::seconds(5);
    return o;
  }
  // Failed handshakes counted, once `n` or after 10 s.
  uint64_t TlsRejections(uint64_t n) const { return testing::RejectionsWithin(*server_, "tls", n); }

  std::string dir_;
  Issued ca_, manager_cert_, instance_cert_;
  std::unique_ptr<PoolServer> server_;
};

TEST_F(PoolTlsTest, AnInstanceOfTheClusterCaPutsAndClaimsByteExact) {
  auto c = PoolClient::Connect(Client(ContextOf(instance_cert_, ca_)));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const std::vector<Token> tokens = testing::Tokens(300, 11);
  const PrefixHistory history(tokens);
  const std::vector<std::byte> record = testing::Pattern(3 * 64 * 1024 + 123, 5);
  ASSERT_TRUE((*c)->Put(history.key_at(256), std::nullopt, history.bucket_digest(256), record,
                        PutKind::kCascade)
                  .ok());
  auto chain = (*c)->Lookup(tokens, 0, tokens.size());
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  ASSERT_TRUE(chain->has_value());
  auto copied = (*c)->ClaimCopy(**chain);
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  EXPECT_EQ(copied->front(), record);
  EXPECT_EQ(TlsRejections(0), 0u);
}

TEST_F(PoolTlsTest, TheDataChannelRunsUnderTlsToo) {
  PoolClientOptions o = Client(ContextOf(instance_cert_, ca_));
  o.data_path = PoolDataPath::kChannel;
  auto c = PoolClient::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_FALSE((*c)->maps_arena());
  const std::vector<Token> tokens = testing::Tokens(300, 12);
  const PrefixHistory history(tokens);
  // Larger than the 64 KiB socket buffers: windows cross many TLS records.
  const std::vector<std::byte> record = testing::Pattern(9 * 64 * 1024 + 77, 6);
  ASSERT_TRUE((*c)->Put(history.key_at(256), std::nullopt, history.bucket_digest(256), record,
                        PutKind::kCascade)
                  .ok());
  auto chain = (*c)->Lookup(tokens, 0, tokens.size());
  ASSERT_TRUE(chain.ok() && chain->has_value()) << chain.status().ToString();
  auto copied = (*c)->ClaimCopy(**chain);
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  EXPECT_EQ(copied->front(), record);
  const PoolDataCounts d = server_->Stats().data;
  EXPECT_EQ(d.connections, 2u);
  EXPECT_EQ(d.bytes_written, record.size());
  EXPECT_EQ(d.bytes_read, record.size());
  // A data connection in plaintext never reaches the TLS address.
  PoolClientOptions plain = Client(nullptr);
  plain.answer_bound = std::chrono::milliseconds(300);
  plain.data_path = PoolDataPath::kChannel;
  EXPECT_FALSE(PoolClient::Connect(plain).ok());
}

TEST_F(PoolTlsTest, APlaintextClientGetsNoChallengeAndIsCounted) {
  PoolClientOptions plain = Client(nullptr);
  plain.answer_bound = std::chrono::milliseconds(300);  // it waits for a Challenge in vain
  auto c = PoolClient::Connect(plain);
  ASSERT_FALSE(c.ok()) << "a plaintext Hello never reaches a TLS address";
  EXPECT_EQ(TlsRejections(1), 1u);
  EXPECT_EQ(server_->Stats().catalog.sessions, 0u);
}

TEST_F(PoolTlsTest, ACertificateOfAnotherCaFailsTheHandshake) {
  Issued other_ca = Issue(dir_, "other-ca", nullptr);
  Issued stranger = Issue(dir_, "stranger", &other_ca);
  auto c = PoolClient::Connect(Client(ContextOf(stranger, other_ca)));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable) << c.status().ToString();
  EXPECT_EQ(TlsRejections(1), 1u);
  EXPECT_EQ(server_->Stats().catalog.sessions, 0u);
}

}  // namespace
}  // namespace strata::pool
