// An export between two instances on one GPU (issue 22: "one GPU is enough:
// two instances each with their own planes on it"): a pool manager in this
// process and two single-process ranks (`strata rank`'s own stores, TP 2,
// their synthetic runtimes' planes in GPU memory, a memory tier each, the
// pool over the manager's Unix socket). A computes a conversation; the pool
// lacks it, only A's GPU planes (and A's own memory tier) hold it. B's turn
// on the same tokens restores it through an export: the manager asks A, A's
// runtime pins the chain, A's export copier copies the pages and rows out
// of A's GPU planes, and B's claim lands them in B's GPU planes, where its
// runtime checks every restored byte.
//
// Opt-in like the other GPU tests: STRATA_GPU_TESTS=1 (STRATA_GPU_DEVICE
// picks the device, default 0).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>

#include "coordinator/pool/pool_server.h"
#include "launch/rank/rank_stores.h"

namespace strata {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kTokens = 4096;  // 64 pages of the preset's 64 tokens

class GpuPoolExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* opt_in = std::getenv("STRATA_GPU_TESTS");
    if (opt_in == nullptr || std::string(opt_in) != "1") {
      GTEST_SKIP() << "GPU tests are opt-in: set STRATA_GPU_TESTS=1 on a machine with an NVIDIA "
                      "driver";
    }
    dir_ = "/tmp/strata-gpu-export-" + std::to_string(::getpid());
    ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
    pool::PoolServerOptions o;
    o.name = "gpu-export";
    o.socket_path = dir_ + "/pool.sock";
    o.slot_bytes = 2 << 20;
    o.slot_count = 256;
    auto server = pool::PoolServer::Start(o, /*generation=*/3);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }
  void TearDown() override {
    server_.reset();
    ::rmdir(dir_.c_str());
  }
  RankConfig Config(const std::string& instance) const {
    const char* device = std::getenv("STRATA_GPU_DEVICE");
    RankConfig c;
    c.cluster.world_size = 2;
    c.cluster.single_process = true;
    c.runtime.preset = "tiny";
    c.runtime.gpus = {device != nullptr ? static_cast<int>(std::strtol(device, nullptr, 10)) : 0};
    c.prefix_cache.memory_bytes = uint64_t{256} << 20;
    c.prefix_cache.pool = dir_ + "/pool.sock";
    c.prefix_cache.pool_instance = instance;  // both on one GPU: its UUID names neither
    return c;
  }

  std::string dir_;
  std::unique_ptr<pool::PoolServer> server_;
};

TEST_F(GpuPoolExportTest, AnExportFromOneInstancesGpuPlanesRestoresByteExactIntoAnothers) {
  Result<RankRole> a_role = OpenRankStores(Config("gpu-export-a"), /*seed=*/5);
  ASSERT_TRUE(a_role.ok()) << a_role.status().ToString();
  RuntimeDriver* a = DriverOf(*a_role);
  ASSERT_NE(a, nullptr);
  Result<RankRole> b_role = OpenRankStores(Config("gpu-export-b"), /*seed=*/5);
  ASSERT_TRUE(b_role.ok()) << b_role.status().ToString();
  RuntimeDriver* b = DriverOf(*b_role);
  ASSERT_NE(b, nullptr);

  SyntheticRuntime& ra = a->runtime();
  ASSERT_TRUE(ra.Turn(ra.NewConversation(), kTokens).ok());
  ASSERT_TRUE(ra.WaitForStores().ok());
  for (int i = 0; i < 5000 && server_->Stats().catalog.holdings == 0; ++i) {
    ra.PollOnce();
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(server_->Stats().catalog.holdings, 1u);
  ASSERT_EQ(server_->Stats().catalog.records, 0u) << "only A's planes and tiers hold it";

  TurnReport t;
  {
    std::atomic<bool> stop{false};
    std::thread serving([&] {
      while (!stop) {
        ra.PollOnce();
        std::this_thread::sleep_for(100us);
      }
    });
    SyntheticRuntime& rb = b->runtime();
    Result<TurnReport> turn = rb.Turn(rb.NewConversation(), kTokens + 7);
    stop = true;
    serving.join();
    ASSERT_TRUE(turn.ok()) << turn.status().ToString();
    t = *turn;
  }
  EXPECT_TRUE(t.host_hit);
  EXPECT_EQ(t.host_reused_tokens, kTokens);
  EXPECT_EQ(b->runtime().stats().mismatches, 0u);
  EXPECT_GT(b->runtime().stats().restored_bytes, 0u);
  const pool::PoolManagerStats m = server_->Stats();
  EXPECT_EQ(m.exports.started, 1u);
  EXPECT_EQ(m.exports.relayed, 1u);
  std::fprintf(stderr, "export: %llu bytes restored into B's GPU planes, %llu mismatches\n",
               static_cast<unsigned long long>(b->runtime().stats().restored_bytes),
               static_cast<unsigned long long>(b->runtime().stats().mismatches));
  ra.PollOnce();
  EXPECT_EQ(ra.export_pins(), 0u);
  ASSERT_TRUE(b->Close().ok());
  ASSERT_TRUE(a->Close().ok());
}

}  // namespace
}  // namespace strata
