// A rank's attachment to its pool manager (prefix_cache.pool, docs/pool.md):
// the rank's configuration turned into the pool's InstancePoolOptions
// (coordinator/pool/instance_pool.h, which joins the local chain to the
// manager in every memory / disk / pool configuration of one process).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "coordinator/pool/instance_pool.h"
#include "launch/config/config.h"
#include "store/record/geometry.h"

namespace strata {

// How a rank with device planes registers the pool's arena (docs/pool.md,
// "Registration"): its registrar (CUDA host registration) and what the host
// and its GPUs can give, read before registering. No registrar: host planes,
// the arena is only mapped.
struct RankPoolRegistration {
  HostRegistrar* registrar = nullptr;  // not owned; outlives the pool
  std::function<pool::BudgetSupply()> supply;
  std::vector<std::string> gpu_uuids;  // the planes' GPUs; empty: host planes
};

// The instance's sources at the pool (its identity there, stable across
// restarts where the sources are): prefix_cache.pool_instance when set, else
// the planes' GPU UUIDs, else the host name and process id (which change).
std::vector<std::string> PoolInstanceSources(const RankConfig& config,
                                             const std::vector<std::string>& gpu_uuids);

// With prefix_cache.pool set: the rank's pool over `chain` (InstancePool::
// Attach). Without: null.
Result<std::unique_ptr<pool::InstancePool>> AttachRankPool(
    const RankConfig& config, const CacheGeometry& geometry, pool::LocalChain chain,
    const std::function<Result<std::unique_ptr<Transfers>>()>& landing_transfers,
    const RankPoolRegistration& registration = {});

}  // namespace strata
