#include "launch/rank/rank_pool.h"

#include <string>

#include "launch/rank/rank_stores.h"
#include "store/record/fingerprint.h"

namespace strata {

std::vector<std::string> PoolInstanceSources(const RankConfig& config,
                                             const std::vector<std::string>& gpu_uuids) {
  return pool::InstanceSources(config.prefix_cache.pool_instance, gpu_uuids);
}

Result<std::unique_ptr<pool::InstancePool>> AttachRankPool(
    const RankConfig& config, const CacheGeometry& geometry, pool::LocalChain chain,
    const std::function<Result<std::unique_ptr<Transfers>>()>& landing_transfers,
    const RankPoolRegistration& registration) {
  if (!config.prefix_cache.pool) return std::unique_ptr<pool::InstancePool>();
  const pool::InstancePoolOptions options{
      .socket_path = *config.prefix_cache.pool,
      .sources = PoolInstanceSources(config, registration.gpu_uuids),
      .model_identity = ComputeNamespaceIdentity(RankModelIdentity(config), StateMode::kOrdinary),
      .registrar = registration.registrar,
      .supply = registration.supply,
      .lookup_bound = std::nullopt};
  return pool::InstancePool::Attach(options, geometry, chain, landing_transfers);
}

}  // namespace strata
