#include "launch/rank/rank_pool.h"

#include <unistd.h>

#include <array>
#include <string>

#include "coordinator/pool/lookup_grace.h"
#include "launch/presets.h"
#include "launch/rank/rank_stores.h"
#include "store/record/fingerprint.h"

namespace strata {

namespace {

// prefix_cache.pool_instance, or the host name and process id.
std::string InstanceSource(const RankConfig& config) {
  if (config.prefix_cache.pool_instance) return *config.prefix_cache.pool_instance;
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  return std::string(host.data()) + ":" + std::to_string(::getpid());
}

}  // namespace

std::unique_ptr<pool::PooledStore> AttachRankPool(const RankConfig& config,
                                                  const CacheGeometry& geometry,
                                                  MemoryStore& memory) {
  if (!config.prefix_cache.pool) return nullptr;
  pool::PoolLinkOptions o;
  o.client.socket_path = *config.prefix_cache.pool;
  o.client.hello = pool::InstanceHello(
      geometry, ComputeNamespaceIdentity(RankModelIdentity(config), StateMode::kOrdinary),
      {InstanceSource(config)});
  // The lookup grace of a manager on this host (lookup_grace.h).
  o.client.lookup_bound =
      std::chrono::milliseconds(pool::LookupGraceUs(pool::ManagerPlace::kLocalHost, 0) / 1000);
  // Claims copy through a local slab record, so the arena is only mapped.
  o.registration = pool::ArenaRegistration::kNone;
  auto pooled =
      std::make_unique<pool::PooledStore>(memory, memory, pool::PoolLink::AttachAtStartup(o));
  memory.SetEvictionSink(pooled.get());
  return pooled;
}

}  // namespace strata
