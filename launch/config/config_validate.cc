// ValidateConfig: the checks across keys, after every value has parsed
// (launch/config/config.h).
#include <cstdint>
#include <string>
#include <utility>

#include "launch/config/config.h"
#include "launch/config/units.h"

namespace strata {

namespace {

// What the instance side of the pool supports (docs/pool.md): every memory /
// disk / pool configuration of one process holding every rank, and ranks in
// separate processes (disk only: the memory check below) with rank zero
// owning the session.
Status ValidatePool(const RankConfig& c) {
  const PrefixCacheConfig& pc = c.prefix_cache;
  if (pc.pool_instance.has_value() && !pc.pool.has_value()) {
    return Status::InvalidArgument(
        "prefix_cache.pool_instance: set without prefix_cache.pool (the pool it names us at)");
  }
  if (!pc.pool.has_value()) return Status::Ok();
  if (pc.pool->empty()) return Status::InvalidArgument("prefix_cache.pool: an empty socket path");
  return Status::Ok();
}

}  // namespace

Status ValidateConfig(const RankConfig& c) {
  const ClusterConfig& cl = c.cluster;
  if (cl.rank >= cl.world_size) {
    return Status::InvalidArgument("cluster.rank: " + std::to_string(cl.rank) +
                                   " is not below cluster.world_size " +
                                   std::to_string(cl.world_size) + " (ranks are 0.." +
                                   std::to_string(cl.world_size - 1) + ")");
  }
  if (cl.single_process && cl.rank != 0) {
    return Status::InvalidArgument("cluster.rank: " + std::to_string(cl.rank) +
                                   " with cluster.single_process (one process holds every "
                                   "rank, so its rank is 0)");
  }
  if (!cl.single_process && cl.world_size > 1 && c.prefix_cache.memory_bytes != 0) {
    return Status::InvalidArgument(
        "prefix_cache.memory: " + FormatSize(c.prefix_cache.memory_bytes) +
        " with ranks in separate processes (world_size " + std::to_string(cl.world_size) +
        "): a memory tier keeps every rank's bytes in one process, so ranks on separate hosts "
        "support disk-only retention; set memory to 0, or run every rank in one process "
        "(cluster.single_process)");
  }
  if (cl.rendezvous == RendezvousSource::kAttach &&
      (!c.attach.socket || cl.world_size <= 1 || cl.single_process)) {
    return Status::InvalidArgument(
        "cluster.rendezvous: \"attach\" needs attach.socket and ranks in separate processes "
        "(world_size above 1, not single_process): the attached runtimes carry rank zero's "
        "rendezvous address");
  }
  if (c.prefix_cache.disk_limit_bytes.has_value() && !c.prefix_cache.disk_dir.has_value()) {
    return Status::InvalidArgument(
        "prefix_cache.disk_limit: set without prefix_cache.disk (the directory it limits)");
  }
  if (Status s = ValidatePool(c); !s.ok()) return s;
  if (c.metrics.port != 0 && static_cast<uint64_t>(c.metrics.port) + cl.local_rank > kPortMax) {
    return Status::InvalidArgument("metrics.port: " + std::to_string(c.metrics.port) +
                                   " + cluster.local_rank " + std::to_string(cl.local_rank) +
                                   " is above 65535");
  }
  if (cl.silence_timeout <= cl.heartbeat_interval) {
    return Status::InvalidArgument(
        "cluster.silence_timeout: " + FormatDuration(cl.silence_timeout) +
        " is not above cluster.heartbeat_interval " + FormatDuration(cl.heartbeat_interval) +
        " (a quiet but healthy peer would be closed as lost)");
  }
  const TlsFilesConfig& tls = c.tls;
  if (tls.cert.has_value() != tls.key.has_value() || tls.cert.has_value() != tls.ca.has_value()) {
    std::string missing;
    for (const auto& [name, value] :
         {std::pair{"tls.cert", &tls.cert}, {"tls.key", &tls.key}, {"tls.ca", &tls.ca}}) {
      if (!value->has_value()) missing += (missing.empty() ? "" : ", ") + std::string(name);
    }
    return Status::InvalidArgument("tls: " + missing +
                                   " not set; mutual TLS needs all three of tls.cert, tls.key "
                                   "and tls.ca (or none, for plaintext links)");
  }
  const bool distributed = cl.world_size > 1 && !cl.single_process;
  if (distributed && cl.rank == 0) {
    if (cl.record_port != 0 && cl.record_port == cl.master_port) {
      return Status::InvalidArgument("cluster.record_port: " + std::to_string(cl.record_port) +
                                     " is also cluster.master_port (rank zero listens on both)");
    }
    const uint16_t metrics_port = EffectiveMetricsPort(c);
    if (metrics_port != 0 && (metrics_port == cl.master_port || metrics_port == cl.record_port)) {
      return Status::InvalidArgument("metrics.port: " + std::to_string(metrics_port) +
                                     " is also a cluster port (rank zero listens on "
                                     "master_port, record_port and the metrics port)");
    }
  }
  return Status::Ok();
}

}  // namespace strata
