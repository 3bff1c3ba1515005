// A rank's attachment to its pool manager (prefix_cache.pool, docs/pool.md):
// the memory tier joined to the manager as a PooledStore, the tier's
// evictions going to the manager.
#pragma once

#include <memory>

#include "coordinator/pool/pooled_store.h"
#include "launch/config/config.h"
#include "store/record/geometry.h"
#include "store/tier/memory_store.h"

namespace strata {

// With prefix_cache.pool set: attaches (waiting up to 10 s at startup, then
// one warning and local tiers only), makes the store `memory`'s eviction
// sink and returns it; `memory` must outlive it. Without: null.
std::unique_ptr<pool::PooledStore> AttachRankPool(const RankConfig& config,
                                                  const CacheGeometry& geometry,
                                                  MemoryStore& memory);

}  // namespace strata
