// Ranks in separate processes (seed 2.14; disk tier only), each serving an
// attached runtime at attach.socket (required): rank zero runs the
// coordinator and the one DiskStore over the sharded transport; every other
// rank runs a rank agent, and serves until rank zero closes the session.
#pragma once

#include <memory>

#include "launch/rank/rank_stores.h"

namespace strata {

// `config.prefix_cache.disk_limit_bytes` must be resolved (OpenRankStores).

// Rank zero (config.cluster.rank == 0): blocks until every peer joined
// (cluster.connect_timeout).
Result<std::unique_ptr<RuntimeDriver>> OpenRankZeroStores(const RankConfig& config);
// A peer (config.cluster.rank > 0): returns once its agent started; it joins
// in the background.
Result<std::unique_ptr<PeerRank>> OpenPeerStores(const RankConfig& config);

}  // namespace strata
