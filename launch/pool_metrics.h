// The pool's metric families (docs/pool.md, "Metrics"), as the ops
// endpoint renders them: the manager's `strata_pool_*` and a pooled
// instance's `strata_pool_client_*` and retention counters. Pure.
#pragma once

#include <vector>

#include "coordinator/pool/pool_traffic.h"
#include "coordinator/pool/pooled_store.h"
#include "launch/ops/ops_snapshot.h"

namespace strata {

// What `strata pool --metrics-port` serves.
std::vector<MetricFamily> PoolManagerMetrics(const pool::PoolManagerStats& stats);

// A pooled instance's families beyond the store's: strata_pool_client_*, and
// strata_host_cache_dropped_total{tier,reason="end_of_chain"} (tier: the end
// of the local chain, memory or disk),
// which the ops renderer merges into the rank's own dropped_total family.
std::vector<MetricFamily> PoolClientMetrics(const pool::PoolInstanceStats& pool);

// strata_host_cache_dropped_total{tier,reason="end_of_chain"}: records the
// end of the local chain (`tier`: memory, or disk where there is one) let go
// for good. A pooled rank counts those the manager did not take; an unpooled
// one every record that tier's LRU evicted (EndOfChainTier).
MetricFamily EndOfChainDrops(const std::string& tier, uint64_t dropped);
// The end of an unpooled rank's chain and its evictions, from its stats:
// the disk tier where the rank has one (a composite's memory evicts only
// records the disk holds), else the memory tier.
MetricFamily UnpooledEndOfChainDrops(const StoreStats& stats, bool has_disk);

}  // namespace strata
