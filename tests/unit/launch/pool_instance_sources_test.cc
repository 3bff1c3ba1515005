// A pool instance's sources (its identity at the manager, rank_pool.h): the
// configured id wins, then the planes' GPU UUIDs (stable across restarts),
// then the host name and process id.
#include <gtest/gtest.h>
#include <unistd.h>

#include "coordinator/pool/pool_scope.h"
#include "launch/rank/rank_pool.h"

namespace strata {
namespace {

TEST(PoolInstanceSourcesTest, TheConfiguredIdThenTheGpuUuidsThenHostAndPid) {
  RankConfig config;
  const std::vector<std::string> gpus{"GPU-10111213-1415-1617-1819-1a1b1c1d1e1f",
                                      "GPU-20212223-2425-2627-2829-2a2b2c2d2e2f"};
  EXPECT_EQ(PoolInstanceSources(config, gpus), gpus);
  const std::vector<std::string> host = PoolInstanceSources(config, {});
  ASSERT_EQ(host.size(), 1u);
  EXPECT_TRUE(host[0].ends_with(":" + std::to_string(::getpid()))) << host[0];
  config.prefix_cache.pool_instance = "replica-7";
  EXPECT_EQ(PoolInstanceSources(config, gpus), std::vector<std::string>{"replica-7"});
}

TEST(PoolInstanceSourcesTest, GpuUuidsGiveTheSameInstanceInAnyOrderAcrossRestarts) {
  const RankConfig config;
  const std::vector<std::string> a{"GPU-a", "GPU-b"};
  const std::vector<std::string> b{"GPU-b", "GPU-a"};
  EXPECT_EQ(pool::ComputeInstanceId("shared", PoolInstanceSources(config, a)),
            pool::ComputeInstanceId("shared", PoolInstanceSources(config, b)));
  EXPECT_NE(pool::ComputeInstanceId("shared", PoolInstanceSources(config, a)),
            pool::ComputeInstanceId("shared", PoolInstanceSources(config, {"GPU-a"})));
}

}  // namespace
}  // namespace strata
