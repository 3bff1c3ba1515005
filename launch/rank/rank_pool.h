// A rank's attachment to its pool manager (prefix_cache.pool, docs/pool.md):
// the local chain joined to the manager as a PooledStore, the end of the
// chain's evictions going to the manager. Every memory / disk / pool
// configuration of one process: memory + pool (the memory tier lands claims
// and ends the chain), disk + pool and memory + disk + pool (the disk tier
// ends the chain; claims land in a small memory tier of the pool's own), and
// pool only (claims land there; nothing is published).
#pragma once

#include <functional>
#include <memory>
#include <variant>

#include "coordinator/pool/pooled_store.h"
#include "launch/config/config.h"
#include "store/record/geometry.h"
#include "store/tier/composite/composite_store.h"
#include "store/tier/disk_store.h"
#include "store/tier/memory_store.h"

namespace strata {

// Host memory of the pool's own landing tier (claims restored from the pool
// when the local chain is not a memory tier), at least kPoolLandingSlotsMin
// page records.
inline constexpr uint64_t kPoolLandingBytes = uint64_t{64} << 20;
inline constexpr uint64_t kPoolLandingSlotsMin = 16;

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

// With prefix_cache.pool set: attaches (waiting up to 10 s at startup, then
// one warning and local tiers only), makes the store `memory`'s eviction
// sink and returns it; `memory` must outlive it. Without: null.
std::unique_ptr<pool::PooledStore> AttachRankPool(const RankConfig& config,
                                                  const CacheGeometry& geometry,
                                                  MemoryStore& memory,
                                                  const RankPoolRegistration& registration = {});

// The local chain when it ends in a disk tier, or is empty.
using DiskChainEnd = std::variant<std::monostate, DiskStore*, CompositeStore*>;

// The pool's part of a store whose local chain is not a memory tier alone.
// Destroy (or close) it before the local chain; the store goes first.
struct RankPool {
  std::unique_ptr<MemoryStore> landing;  // where claims land
  std::unique_ptr<pool::PooledStore> store;
};

// With prefix_cache.pool set: attaches like the above, makes the store the
// disk tier's eviction sink (none with the monostate: pool only), and lands
// claims in a MemoryStore of kPoolLandingBytes over `registrar` and
// `transfers`. Without prefix_cache.pool: null.
Result<std::unique_ptr<RankPool>> AttachRankPoolWithDisk(
    const RankConfig& config, const CacheGeometry& geometry, DiskChainEnd end,
    HostRegistrar* registrar, std::unique_ptr<Transfers> transfers,
    const RankPoolRegistration& registration = {});

}  // namespace strata
