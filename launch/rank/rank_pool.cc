#include "launch/rank/rank_pool.h"

#include <string>

#include "coordinator/pool/pool_socket.h"
#include "coordinator/rendezvous/job_secret.h"
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
  STRATA_ASSIGN_OR_RETURN(const pool::PoolAddress address,
                          pool::ParsePoolAddress(*config.prefix_cache.pool));
  // Over TCP the Hello proves the job's secret, under the [tls] settings of
  // the record links when they are set.
  std::optional<JobSecret> secret;
  std::shared_ptr<const wire::TlsContext> tls;
  if (address.tcp()) {
    STRATA_ASSIGN_OR_RETURN(JobSecret read, ReadJobSecret(config.cluster.job_secret_file));
    secret = std::move(read);
    STRATA_ASSIGN_OR_RETURN(tls, RankTls(config));
  }
  const pool::InstancePoolOptions options{
      .socket_path = *config.prefix_cache.pool,
      .job_secret = std::move(secret),
      .tls = std::move(tls),
      .sources = PoolInstanceSources(config, registration.gpu_uuids),
      .model_identity = ComputeNamespaceIdentity(RankModelIdentity(config), StateMode::kOrdinary),
      .registrar = registration.registrar,
      .supply = registration.supply,
      .lookup_bound = std::nullopt,
      .data_path = config.prefix_cache.pool_data};
  return pool::InstancePool::Attach(options, geometry, chain, landing_transfers);
}

}  // namespace strata
