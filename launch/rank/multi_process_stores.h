// Ranks in separate processes (seed 2.14; disk tier only): rank zero runs the
// coordinator, the one DiskStore over the sharded transport and the synthetic
// runtime; every other rank runs a rank agent and a runtime service
// (launch/runtime/runtime_service.h), and serves until rank zero closes the session.
#pragma once

#include <memory>

#include "launch/rank/rank_stores.h"

namespace strata {

// Rank zero blocks until every peer joined (cluster.connect_timeout); a peer
// returns once its agent started and joins in the background.
// `config.prefix_cache.disk_limit_bytes` must be resolved (OpenRankStores).
Result<std::unique_ptr<RankStores>> OpenMultiProcessStores(const RankConfig& config, uint64_t seed);

}  // namespace strata
