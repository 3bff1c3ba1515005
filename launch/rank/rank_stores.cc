#include "launch/rank/rank_stores.h"

#include "launch/config/disk_space.h"
#include "launch/rank/multi_process_stores.h"
#include "launch/rank/single_process_stores.h"

namespace strata {

PhaseReport RankStores::CompositePhase() {
  PhaseReport r;
  r.name = "composite: drain to disk, read-through, memory hit";
  r.detail = "needs memory and disk tiers in one process";
  return r;
}

std::vector<JobLatency> RankStores::JobLatencies() const {
  return {{"store", latencies_->store.Snapshot()},
          {"fetch", latencies_->fetch.Snapshot()},
          {"truncate", latencies_->truncate.Snapshot()},
          {"unlink", latencies_->unlink.Snapshot()}};
}

Result<std::unique_ptr<RankStores>> OpenRankStores(const RankConfig& config, uint64_t seed) {
  RankConfig resolved = config;
  PrefixCacheConfig& pc = resolved.prefix_cache;
  if (pc.disk_dir.has_value() && !pc.disk_limit_bytes.has_value()) {
    Result<uint64_t> free_bytes = FilesystemFreeBytes(*pc.disk_dir);
    if (!free_bytes.ok()) return free_bytes.status().WithContext("prefix_cache.disk_limit default");
    pc.disk_limit_bytes = ResolveDiskLimit(pc, *free_bytes);
  }
  if (resolved.cluster.world_size == 1 || resolved.cluster.single_process) {
    return OpenSingleProcessStores(resolved, seed);
  }
  return OpenMultiProcessStores(resolved, seed);
}

}  // namespace strata
