#include "launch/rank/rank_stores.h"

#include "launch/config/disk_space.h"
#include "launch/rank/multi_process_stores.h"
#include "launch/rank/single_process_stores.h"

namespace strata {

PhaseReport RuntimeDriver::CompositePhase() {
  PhaseReport r;
  r.name = "composite: drain to disk, read-through, memory hit";
  r.detail = "needs memory and disk tiers in one process";
  return r;
}

std::vector<JobLatency> RankServices::JobLatencies() const {
  return {{"store", latencies_->store.Snapshot()},
          {"fetch", latencies_->fetch.Snapshot()},
          {"truncate", latencies_->truncate.Snapshot()},
          {"unlink", latencies_->unlink.Snapshot()}};
}

RankServices& ServicesOf(const RankRole& role) {
  return std::visit([](const auto& r) -> RankServices& { return *r; }, role);
}

RuntimeDriver* DriverOf(const RankRole& role) {
  const auto* driver = std::get_if<std::unique_ptr<RuntimeDriver>>(&role);
  return driver != nullptr ? driver->get() : nullptr;
}

PeerRank* PeerOf(const RankRole& role) {
  const auto* peer = std::get_if<std::unique_ptr<PeerRank>>(&role);
  return peer != nullptr ? peer->get() : nullptr;
}

Result<RankRole> OpenRankStores(const RankConfig& config, uint64_t seed) {
  RankConfig resolved = config;
  PrefixCacheConfig& pc = resolved.prefix_cache;
  if (pc.disk_dir.has_value() && !pc.disk_limit_bytes.has_value()) {
    Result<uint64_t> free_bytes = FilesystemFreeBytes(*pc.disk_dir);
    if (!free_bytes.ok()) return free_bytes.status().WithContext("prefix_cache.disk_limit default");
    pc.disk_limit_bytes = ResolveDiskLimit(pc, *free_bytes);
  }
  if (pc.disk_dir.has_value() && *pc.disk_limit_bytes > 0) {
    Result<uint64_t> fits = LimitForRecordDirectory(*pc.disk_dir, *pc.disk_limit_bytes);
    if (!fits.ok()) return fits.status().WithContext("prefix_cache.disk_limit");
    pc.disk_limit_bytes = *fits;
  }
  const ClusterConfig& cl = resolved.cluster;
  if (cl.world_size == 1 || cl.single_process) {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RuntimeDriver> one,
                            OpenSingleProcessStores(resolved, seed));
    return RankRole(std::move(one));
  }
  if (cl.rank == 0) {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RuntimeDriver> zero, OpenRankZeroStores(resolved));
    return RankRole(std::move(zero));
  }
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<PeerRank> peer, OpenPeerStores(resolved));
  return RankRole(std::move(peer));
}

std::string RankModelIdentity(const RankConfig& config) {
  return "synthetic/" + config.runtime.preset;
}

Result<std::shared_ptr<const wire::TlsContext>> RankTls(const RankConfig& config) {
  if (!config.tls.enabled()) return std::shared_ptr<const wire::TlsContext>();
  return wire::TlsContext::Create({*config.tls.cert, *config.tls.key, *config.tls.ca});
}

}  // namespace strata
