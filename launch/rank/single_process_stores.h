// One process holding every rank (world size 1, or cluster.single_process):
// a MemoryStore, a DiskStore, or both tiers as a CompositeStore.
#pragma once

#include <memory>

#include "launch/rank/rank_stores.h"

namespace strata {

// `config.prefix_cache.disk_limit_bytes` must be resolved (OpenRankStores).
Result<std::unique_ptr<RuntimeDriver>> OpenSingleProcessStores(const RankConfig& config,
                                                               uint64_t seed);

}  // namespace strata
