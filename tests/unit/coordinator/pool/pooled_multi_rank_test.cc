// Instances whose ranks run in separate processes share through a pool
// (docs/pool.md, "Multi-process instances"): two three-rank instances (rank
// zero's coordinator and two rank agents each, over loopback, as in
// multi_rank_test_support.h) and a manager in one process, over the
// manager's real socket and arena. A record evicted off A's disk tier is
// read back from every rank and put as one record; B, which never computed
// it, claims it, every one of its ranks writes its share to its own disk, and
// the synthetic runtime restores it byte-exact on every rank.
#include <gtest/gtest.h>

#include <optional>

#include "coordinator/pool/instance_pool.h"
#include "coordinator/pool/pool_server.h"
#include "launch/runtime/synthetic_runtime.h"
#include "store/record/fingerprint.h"
#include "tests/unit/coordinator/multi_rank_test_support.h"

namespace strata::pool {
namespace {

using namespace std::chrono_literals;
using strata::testing::Cluster;
using strata::testing::ClusterOptions;
using strata::testing::ScratchDir;

constexpr uint64_t kConversationTokens = 640;  // one 10-page record each
constexpr int kConversations = 6;

// One instance of three ranks joined to the pool at `socket`, its disk
// holding three and a half records.
class PooledCluster {
 public:
  PooledCluster(const std::string& base, const std::string& socket, const std::string& source) {
    const uint64_t one =
        RecordFileBytes(RecordLayout(strata::testing::RankGeometryOf()), {.tail_pages = 10});
    ClusterOptions options;
    options.world_size = 3;
    options.disk_limit_bytes = 3 * one + one / 2;
    cluster_.emplace(base, options);
    started_ = cluster_->Start();
    if (!started_.ok()) return;
    const InstancePoolOptions o{.socket_path = socket,
                                .job_secret = std::nullopt,
                                .tls = nullptr,
                                .sources = {source},
                                .model_identity = NamespaceIdentity{3},
                                .registrar = nullptr,
                                .supply = nullptr,
                                // A slow answer must not turn the hit into a miss.
                                .lookup_bound = 5s};
    Result<std::unique_ptr<InstancePool>> pool =
        InstancePool::Attach(o, cluster_->all_planes().geometry(), &cluster_->store(), {});
    started_ = pool.status();
    if (!pool.ok()) return;
    pool_ = std::move(*pool);
    runtime_.emplace(cluster_->all_planes(), &pool_->store(), SyntheticRuntimeOptions{.seed = 1});
  }
  ~PooledCluster() {
    runtime_.reset();
    if (pool_) {
      EXPECT_TRUE(pool_->store().Close().ok());
    }
    pool_.reset();
    if (cluster_ && started_.ok()) {
      EXPECT_TRUE(cluster_->Close().ok());
    }
  }

  // Runs kConversations one-turn conversations, then settles the disk
  // tier's writes and handovers and the puts.
  void Compute() {
    for (int i = 0; i < kConversations; ++i) {
      EXPECT_TRUE(runtime_->Turn(runtime_->NewConversation(), kConversationTokens).ok());
      EXPECT_TRUE(runtime_->WaitForStores().ok());
    }
    EXPECT_TRUE(cluster_->store().WaitIdle(10s));
    (void)pool_->store().FlushPuts(10s);
  }

  Status started() const { return started_; }
  Cluster& cluster() { return *cluster_; }
  PooledStore& pooled() { return pool_->store(); }
  SyntheticRuntime& runtime() { return *runtime_; }

 private:
  Status started_;
  std::optional<Cluster> cluster_;
  std::unique_ptr<InstancePool> pool_;
  std::optional<SyntheticRuntime> runtime_;
};

TEST(PooledMultiRankTest, ARecordEvictedOffEveryRankIsPutAndAnotherInstanceRestoresItOnEveryRank) {
  ScratchDir sockets;
  const std::string socket = sockets.path() + "/pool.sock";
  PoolServerOptions options;
  options.name = "shared";
  options.socket_path = socket;
  options.slot_bytes = 64 * 1024;
  options.slot_count = 512;
  options.huge_pages = HugePages::kNever;
  Result<std::unique_ptr<PoolServer>> server = PoolServer::Start(options, 5);
  ASSERT_TRUE(server.ok()) << server.status().ToString();

  ScratchDir dir_a;
  PooledCluster a(dir_a.path(), socket, "host-a");
  STRATA_OK_OR_SKIP_DIRECT_IO(a.started());
  ASSERT_TRUE(a.pooled().link().sharing());
  a.Compute();
  const PoolInstanceStats put = a.pooled().pool_stats();
  const uint64_t evicted = a.cluster().store().Stats().disk.evicted_total;
  EXPECT_GT(evicted, 0u);
  EXPECT_GT(put.puts, 0u) << "records evicted off every rank's disk went to the manager";
  EXPECT_EQ(put.dropped_end_of_chain, 0u);
  EXPECT_EQ(put.end_of_chain_tier, "disk");
  a.cluster().ExpectSameFilesEverywhere();

  ScratchDir dir_b;
  PooledCluster b(dir_b.path(), socket, "host-b");
  ASSERT_TRUE(b.started().ok()) << b.started().ToString();
  std::vector<uint32_t> convs(kConversations);
  for (uint32_t& c : convs) c = b.runtime().NewConversation();
  // Conversation 0 was the first A evicted: B has it only from the pool.
  Result<TurnReport> t = b.runtime().Turn(convs[0], kConversationTokens + 5);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->host_hit);
  EXPECT_EQ(t->host_reused_tokens, kConversationTokens);
  EXPECT_EQ(t->computed_tokens, 5u);
  EXPECT_EQ(b.runtime().stats().mismatches, 0u);
  EXPECT_GT(b.runtime().stats().restored_bytes, 0u);
  const PoolInstanceStats claimed = b.pooled().pool_stats();
  EXPECT_EQ(claimed.claims, 1u);
  EXPECT_EQ(claimed.claim_failures, 0u);
  EXPECT_EQ(claimed.claimed_records, 1u);
  // The claim landed on every rank's disk: B holds the record locally now.
  ASSERT_TRUE(b.runtime().WaitForStores().ok());
  ASSERT_TRUE(b.cluster().store().WaitIdle(10s));
  b.cluster().ExpectSameFilesEverywhere();
  EXPECT_GE(b.cluster().Files(0).size(), 1u);
  for (PooledCluster* i : {&a, &b}) {
    for (const PeerLinkReport& p : i->cluster().coordinator().PeerLinks()) {
      EXPECT_TRUE(p.errors_by_reason.empty()) << "rank " << p.peer.value;
    }
  }
}

}  // namespace
}  // namespace strata::pool
