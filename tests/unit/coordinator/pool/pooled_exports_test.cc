// Exports end to end (seed 2.15, "Exports"; docs/pool.md): a manager and
// two instances in one process, over the manager's real socket and arena.
// Instance A announces what its runtime holds; instance B restores a prefix
// only A's planes hold, through an export: the manager asks A, A's runtime
// pins the chain, A copies it out of its planes into the slots the manager
// granted and commits, and B's claim is granted as any claim (the synthetic
// runtime checks every restored byte). A that goes away mid-export fails
// B's claim cleanly and B recomputes. Each runs twice: through the arena on
// the manager's host, and over TCP with the data channel forced.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "coordinator/pool/pool_server.h"
#include "coordinator/pool/pooled_store.h"
#include "tests/unit/coordinator/pool/pooled_test_instance.h"

namespace strata::pool {
namespace {

using pooled_test::Instance;
using pooled_test::InstanceOptions;
using pooled_test::kConversationTokens;

JobSecret Secret() { return *JobSecret::FromText(std::string(40, 'x'), "test"); }

// How the instances reach the manager: its Unix socket and arena, or TCP
// with the data channel forced (an instance on another host).
enum class Reach : uint8_t { kArena, kDataChannel };

class PooledExportsTest : public ::testing::TestWithParam<Reach> {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/strata-exports-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    PoolServerOptions o = pooled_test::ManagerOptions(dir_);
    if (GetParam() == Reach::kDataChannel) {
      o.tcp_host = "127.0.0.1";
      o.job_secret = Secret();
    }
    auto server = PoolServer::Start(o, /*generation=*/7);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }
  // Stops the manager and starts a new one on the same addresses.
  void RestartManager() {
    const uint16_t port = server_->tcp_port();
    server_.reset();
    PoolServerOptions o = pooled_test::ManagerOptions(dir_);
    if (GetParam() == Reach::kDataChannel) {
      o.tcp_host = "127.0.0.1";
      o.tcp_port = port;
      o.job_secret = Secret();
    }
    auto server = PoolServer::Start(o, /*generation=*/8);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }
  void TearDown() override {
    server_.reset();
    ::rmdir(dir_.c_str());
  }
  // Over either reach, admission waits for the manager's lookup answer up
  // to the answer bound: the tests count exports, which start only from a
  // pool hit, so a loaded machine must not turn the hit into a miss. (Over
  // TCP the link's own grace is the network one, as little as 2 ms, past
  // which admission goes local and no claim or export follows.)
  InstanceOptions Options(std::string source) const {
    InstanceOptions o{.socket_path = dir_ + "/pool.sock",
                      .source = std::move(source),
                      .lookup_grace = PoolClientOptions{}.answer_bound,
                      .exports = true};
    if (GetParam() == Reach::kDataChannel) {
      o.socket_path = "tcp://127.0.0.1:" + std::to_string(server_->tcp_port());
      o.job_secret = Secret();
      o.data_path = PoolDataPath::kChannel;
    }
    return o;
  }
  // Polls `a`'s runtime until the manager counts `holdings` holdings.
  void WaitForHoldings(Instance& a, uint64_t holdings) {
    for (int i = 0; i < 2000 && server_->Stats().catalog.holdings != holdings; ++i) {
      a.runtime->PollOnce();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(server_->Stats().catalog.holdings, holdings);
  }

  std::string dir_;
  std::unique_ptr<PoolServer> server_;
};

// Runs `instance`'s runtime loop on a thread of its own until destroyed.
class Serving {
 public:
  explicit Serving(Instance& instance)
      : thread_([this, &instance] {
          while (!stop_) {
            instance.runtime->PollOnce();
            std::this_thread::sleep_for(std::chrono::microseconds(200));
          }
        }) {}
  ~Serving() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// `requester`'s turn on a new conversation of kConversationTokens + 5
// tokens while `holder`'s runtime loop serves its exports.
TurnReport TurnServedBy(Instance& holder, Instance& requester) {
  Serving serving(holder);
  Result<TurnReport> t =
      requester.runtime->Turn(requester.runtime->NewConversation(), kConversationTokens + 5);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? *t : TurnReport{};
}

TEST_P(PooledExportsTest, AnotherInstanceRestoresAPrefixOnlyAHoldsThroughAnExport) {
  Instance a(Options("host-a"));
  ASSERT_TRUE(a.pooled->link().sharing());
  const uint32_t conv = a.runtime->NewConversation();
  ASSERT_TRUE(a.runtime->Turn(conv, kConversationTokens).ok());
  ASSERT_TRUE(a.runtime->WaitForStores().ok());
  WaitForHoldings(a, 1);
  ASSERT_EQ(server_->Stats().catalog.records, 0u) << "nothing pooled: only A holds it";

  Instance b(Options("host-b"));
  const TurnReport t = TurnServedBy(a, b);
  EXPECT_TRUE(t.host_hit);
  EXPECT_EQ(t.host_reused_tokens, kConversationTokens);
  EXPECT_EQ(t.computed_tokens, 5u);
  EXPECT_EQ(b.runtime->stats().mismatches, 0u);
  EXPECT_GT(b.runtime->stats().restored_bytes, 0u);
  EXPECT_EQ(b.pooled->pool_stats().claims, 1u);
  EXPECT_EQ(b.pooled->pool_stats().claim_failures, 0u);

  const PoolInstanceStats exported = a.pooled->pool_stats();
  EXPECT_EQ(exported.exports.requested, 1u);
  EXPECT_EQ(exported.exports.pinned, 1u);
  EXPECT_EQ(exported.exports.ended, 1u);
  EXPECT_EQ(exported.exports_served, 1u);
  EXPECT_EQ(exported.exports_aborted, 0u);
  a.runtime->PollOnce();
  EXPECT_EQ(a.runtime->export_pins(), 0u) << "the end handed the pin back";

  const PoolManagerStats m = server_->Stats();
  EXPECT_EQ(m.exports.started, 1u);
  EXPECT_EQ(m.exports.relayed, 1u);
  EXPECT_EQ(m.exports.waiting, 0u);
  EXPECT_EQ(m.catalog.records, 1u) << "the exported record stays pooled";
}

TEST_P(PooledExportsTest, AnEvictionNoticeWithdrawsTheHolding) {
  Instance a(Options("host-a"));
  ASSERT_TRUE(a.runtime->Turn(a.runtime->NewConversation(), kConversationTokens).ok());
  ASSERT_TRUE(a.runtime->WaitForStores().ok());
  WaitForHoldings(a, 1);
  a.runtime->EvictGpu();
  WaitForHoldings(a, 0);

  Instance b(Options("host-b"));
  const TurnReport t = *b.runtime->Turn(b.runtime->NewConversation(), kConversationTokens + 5);
  EXPECT_FALSE(t.host_hit) << "A's planes no longer hold it, and nothing asked A";
  EXPECT_EQ(server_->Stats().exports.started, 0u);
}

TEST_P(PooledExportsTest, AHolderThatGoesAwayMidExportFailsTheClaimAndBRecomputes) {
  auto a = std::make_unique<Instance>(Options("host-a"));
  ASSERT_TRUE(a->runtime->Turn(a->runtime->NewConversation(), kConversationTokens).ok());
  ASSERT_TRUE(a->runtime->WaitForStores().ok());
  WaitForHoldings(*a, 1);

  Instance b(Options("host-b"));
  // A never answers the ask: it goes away while B's claim waits for it.
  std::thread exit_a([&] {
    for (int i = 0; i < 5000 && server_->Stats().exports.started == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    a.reset();
  });
  const TurnReport t = *b.runtime->Turn(b.runtime->NewConversation(), kConversationTokens + 5);
  exit_a.join();
  EXPECT_FALSE(t.host_hit);
  EXPECT_EQ(t.computed_tokens, kConversationTokens + 5);
  EXPECT_EQ(b.runtime->stats().mismatches, 0u);
  EXPECT_EQ(b.pooled->pool_stats().claim_failures, 1u);
  const PoolManagerStats m = server_->Stats();
  EXPECT_EQ(m.exports.started, 1u);
  EXPECT_EQ(m.exports.lost, 1u);
  EXPECT_EQ(m.catalog.records, 0u) << "the export's pending record went with A's session";
  // A's went with its session (B's own turn may be announced by now).
  EXPECT_LE(m.catalog.holdings, 1u);
}

TEST_P(PooledExportsTest, AStaleHoldingsRefusalFailsTheClaimAndTheManagerForgetsIt) {
  // A's runtime drops the oldest eviction notices: conversations 0 and 1
  // stay announced (EvictionsLost announces the whole book again) though its
  // planes no longer hold them.
  InstanceOptions o = Options("host-a");
  o.eviction_notices_max = 1;
  Instance a(o);
  std::vector<uint32_t> convs(3);
  for (uint32_t& c : convs) {
    c = a.runtime->NewConversation();
    ASSERT_TRUE(a.runtime->Turn(c, kConversationTokens).ok());
    ASSERT_TRUE(a.runtime->WaitForStores().ok());
  }
  WaitForHoldings(a, 3);
  a.runtime->EvictGpu();
  WaitForHoldings(a, 2);
  ASSERT_EQ(a.pooled->pool_stats().evictions_lost, 1u);

  Instance b(Options("host-b"));
  const TurnReport t = TurnServedBy(a, b);
  EXPECT_FALSE(t.host_hit);
  EXPECT_EQ(t.computed_tokens, kConversationTokens + 5);
  EXPECT_EQ(b.pooled->pool_stats().claim_failures, 1u);
  EXPECT_EQ(a.runtime->stats().exports_refused[static_cast<size_t>(ExportRefusal::kNotFound)], 1u);
  EXPECT_EQ(a.pooled->pool_stats().exports_aborted, 1u);
  const PoolManagerStats m = server_->Stats();
  EXPECT_EQ(m.exports.refused, 1u);
  EXPECT_EQ(m.catalog.records, 0u) << "the aborted export left no record";
}

TEST_P(PooledExportsTest, AfterAManagerRestartTheHolderAnnouncesAgainAndExports) {
  Instance a(Options("host-a"));
  const uint32_t conv = a.runtime->NewConversation();
  ASSERT_TRUE(a.runtime->Turn(conv, kConversationTokens).ok());
  ASSERT_TRUE(a.runtime->WaitForStores().ok());
  WaitForHoldings(a, 1);
  Instance b(Options("host-b"));
  const uint32_t b_conv = b.runtime->NewConversation();
  // The claim waits for A, which does not answer before the manager goes.
  std::thread restart([&] {
    for (int i = 0; i < 5000 && server_->Stats().exports.started == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    RestartManager();
  });
  const TurnReport lost = *b.runtime->Turn(b_conv, kConversationTokens + 5);
  restart.join();
  EXPECT_FALSE(lost.host_hit) << "the claim failed with the manager: B recomputed";
  EXPECT_EQ(b.runtime->stats().mismatches, 0u);
  a.runtime->PollOnce();  // A may take the old manager's ask now: it goes nowhere

  // A's next lookup reconnects it; the new session starts with its whole book.
  std::this_thread::sleep_for(std::chrono::milliseconds(1'100));  // the reconnect interval
  ASSERT_TRUE(a.runtime->Turn(a.runtime->NewConversation(), kConversationTokens).ok());
  ASSERT_TRUE(a.runtime->WaitForStores().ok());
  WaitForHoldings(a, 2);
  Instance c(Options("host-c"));
  const TurnReport t = TurnServedBy(a, c);
  EXPECT_TRUE(t.host_hit);
  EXPECT_EQ(t.host_reused_tokens, kConversationTokens);
  EXPECT_EQ(c.runtime->stats().mismatches, 0u);
  EXPECT_EQ(server_->Stats().exports.relayed, 1u);
  a.runtime->PollOnce();
  EXPECT_EQ(a.runtime->export_pins(), 0u) << "every pin, the old manager's too, went back";
}

INSTANTIATE_TEST_SUITE_P(Reaches, PooledExportsTest,
                         ::testing::Values(Reach::kArena, Reach::kDataChannel),
                         [](const ::testing::TestParamInfo<Reach>& info) {
                           return info.param == Reach::kArena ? "Arena" : "DataChannel";
                         });

}  // namespace
}  // namespace strata::pool
