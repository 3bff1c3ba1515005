#include "coordinator/pool/pool_scope.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace strata::pool {
namespace {

PoolScope BaseScope() {
  PoolScope s;
  s.pool_name = "pool-a";
  s.model_identity[0] = 1;
  s.layout[0] = 2;
  s.rank_plane_bytes = {{4096, 8192}};
  return s;
}

TEST(PoolScopeTest, EveryFieldSeparatesScopes) {
  const ScopeId base = ComputeScopeId(BaseScope());
  EXPECT_EQ(ComputeScopeId(BaseScope()), base) << "stable";
  PoolScope renamed = BaseScope();
  renamed.pool_name = "pool-b";
  PoolScope model = BaseScope();
  model.model_identity[0] = 9;
  PoolScope layout = BaseScope();
  layout.layout[15] = 1;
  PoolScope planes = BaseScope();
  planes.rank_plane_bytes = {{4096, 8192}, {4096, 8192}};
  PoolScope sizes = BaseScope();
  sizes.rank_plane_bytes = {{4096, 8193}};
  for (const PoolScope& other : {renamed, model, layout, planes, sizes}) {
    EXPECT_NE(ComputeScopeId(other), base);
  }
}

TEST(PoolScopeTest, PlaneBytesFollowGeometryOrder) {
  CacheGeometry g;
  g.page_tokens = 64;
  RankGeometry r;
  r.row = {.name = "row", .unit_bytes = 100};
  r.page_planes = {{.name = "k", .unit_bytes = 200}, {.name = "v", .unit_bytes = 300}};
  g.ranks = {r, r};
  const std::vector<std::vector<uint64_t>> want{{100, 200, 300}, {100, 200, 300}};
  EXPECT_EQ(RankPlaneBytes(g), want);
}

TEST(PoolScopeTest, InstanceIdStableAndSaltedByPoolName) {
  const std::vector<std::string> gpus{"GPU-b", "GPU-a"};
  const std::vector<std::string> reordered{"GPU-a", "GPU-b"};
  const InstanceId id = ComputeInstanceId("pool-a", gpus);
  EXPECT_EQ(ComputeInstanceId("pool-a", reordered), id) << "GPU order does not matter";
  EXPECT_NE(ComputeInstanceId("pool-b", gpus), id) << "a renamed pool";
  const std::vector<std::string> other{"GPU-a"};
  EXPECT_NE(ComputeInstanceId("pool-a", other), id);
}

}  // namespace
}  // namespace strata::pool
