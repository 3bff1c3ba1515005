// OpsSnapshot: what the metrics/health/status endpoint shows, copied out by
// the thread that owns the store and the links and published through a
// SnapshotPublisher, so the endpoint's threads never touch live state.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "store/base/ids.h"
#include "store/base/latency_histogram.h"
#include "store/base/mutex.h"
#include "store/base/status.h"
#include "store/tier/store_stats.h"

namespace strata {

// One record link as its owner (the coordinator on rank zero, the rank agent
// on a peer) sees it.
struct PeerLinkStats {
  RankId peer;
  // "connecting", "joined", "up", "draining", "closed", "failed" (the
  // owner's words; exported as a label).
  std::string state;
  // Errors on this link by reason ("oversized_frame", "timeout", ...).
  std::map<std::string, uint64_t> errors_by_reason;
};

// Latency of one job kind ("store", "fetch", "truncate", "unlink").
struct JobLatency {
  std::string kind;
  LatencySnapshot latency;
};

// A metric family its owner adds beyond the rank's own (the pool's), with
// plain (unescaped) label values.
enum class MetricKind : unsigned char { kCounter, kGauge };
struct MetricSample {
  std::vector<std::pair<std::string, std::string>> labels;
  uint64_t value = 0;
};
struct MetricFamily {
  std::string name;  // with the strata_ prefix
  MetricKind kind = MetricKind::kCounter;
  std::string help;
  std::vector<MetricSample> samples;
};

// Which process serves the endpoint: a rank (store, peers, transport), or
// the pool manager (health and extra_metrics only).
enum class OpsOwner : unsigned char { kRank, kPoolManager };

struct OpsSnapshot {
  OpsOwner owner = OpsOwner::kRank;
  RankId rank;
  uint32_t world_size = 1;
  StoreStats store;
  // prefix_cache.disk_limit as configured (its default when unset), before
  // the startup check lowers it to what the filesystem can hold; 0 without
  // a store. store.disk_limit_bytes is the limit in force.
  uint64_t disk_limit_configured_bytes = 0;
  std::vector<JobLatency> job_latency;
  std::vector<PeerLinkStats> peers;
  // The disk transport ("staged", "direct", "direct-compat") and why
  // (seed 2.6: the startup probe's decision).
  std::string transport = "staged";
  std::string transport_reason;
  // Empty when the owner considers this rank healthy; otherwise why not
  // (a stopped transport, a failed link, draining).
  std::string unhealthy_reason;
  // Empty unless the drain at shutdown failed; then why (strata_drain_failed
  // is 1). Set only on the rank's final snapshot (DrainFailedSnapshot).
  std::string drain_failure;
  // Rendered after the rank's own metrics, and in /status under "metrics".
  std::vector<MetricFamily> extra_metrics;
  // When the owner took the snapshot (its steady clock).
  std::chrono::steady_clock::time_point taken_at;
};

// Hands the newest snapshot from its owner to the endpoint's threads.
// Thread-safe; Publish and Latest never wait on anything but a short lock.
class SnapshotPublisher {
 public:
  void Publish(OpsSnapshot snapshot);
  // Null before the first Publish.
  std::shared_ptr<const OpsSnapshot> Latest() const;

 private:
  mutable Mutex mu_;
  std::shared_ptr<const OpsSnapshot> latest_ GUARDED_BY(mu_);
};

// Pure: `last` (the newest snapshot, or null when none was published) marked
// as the final one of a rank whose drain at shutdown failed with `drain`:
// drain_failure and unhealthy_reason say so, taken_at is `now`, and every
// other field is `last`'s (the store's live state is not read after a failed
// Close).
OpsSnapshot DrainFailedSnapshot(const OpsSnapshot* last, const Status& drain,
                                std::chrono::steady_clock::time_point now);

struct Health {
  bool ok = false;
  std::string reason;  // "ok" when ok
};

// Healthy when a snapshot exists, its owner reported no problem, and it is
// not older than `stale_after` at `now` (an owner thread that stopped
// publishing is unhealthy).
Health EvaluateHealth(const OpsSnapshot* snapshot, std::chrono::steady_clock::time_point now,
                      std::chrono::milliseconds stale_after);

}  // namespace strata
