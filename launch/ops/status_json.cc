#include "launch/ops/status_json.h"

#include <nlohmann/json.hpp>

#include "store/tier/retry_ledger.h"

namespace strata {

namespace {

nlohmann::json TierJson(const TierStats& t) {
  return {
      {"records", t.records},
      {"bytes", t.bytes},
      {"stored_total", t.stored_total},
      {"evicted_total", t.evicted_total},
      {"demoted_total", t.demoted_total},
      {"compacted_total", t.compacted_total},
      {"expired_total", t.expired_total},
      {"dropped_io_total", t.dropped_io_total},
      {"packed_total", t.packed_total},
      {"per_rank_total", t.per_rank_total},
      {"abandoned_total", t.abandoned_total},
      {"bytes_in_total", t.bytes_in_total},
      {"bytes_out_total", t.bytes_out_total},
  };
}

// {"inflight": n, "slabs": n, "queue": n, "budget": n}: abandoned retries
// by cause.
nlohmann::json RetryAbandonedJson(const RetryCounts& counts) {
  nlohmann::json j = nlohmann::json::object();
  for (size_t c = 0; c < kRetryCauseCount; ++c) {
    j[std::string(RetryCauseName(static_cast<RetryCause>(c)))] = counts[c];
  }
  return j;
}

nlohmann::json StoreJson(const StoreStats& s) {
  return {
      {"slots_in_use", s.slots_in_use},
      {"slots_total", s.slots_total},
      {"intake_slots", s.intake_slots},
      {"parked_records", s.parked_records},
      {"store_queued", s.store_queued},
      {"store_present", s.store_present},
      {"store_deferred", s.store_deferred},
      {"store_retry", s.store_retry},
      {"store_oversize", s.store_oversize},
      {"store_failed", s.store_failed},
      {"retry_abandoned", RetryAbandonedJson(s.retry_abandoned)},
      {"lookups", s.lookups},
      {"hits", s.hits},
      {"reused_tokens", s.reused_tokens},
      {"fetches", s.fetches},
      {"fetch_failed", s.fetch_failed},
      {"fetch_checksum_failures", s.fetch_checksum_failures},
      {"fs_full_retries", s.fs_full_retries},
      {"disk_limit_bytes", s.disk_limit_bytes},
      {"disk_limit_lowered_total", s.disk_limit_lowered_total},
      {"fanout_writes", s.fanout_writes},
      {"fanout_write_failures", s.fanout_write_failures},
      {"memory", TierJson(s.memory)},
      {"disk", TierJson(s.disk)},
  };
}

// {"name": [{"labels": {...}, "value": n}, ...], ...}
nlohmann::json ExtraJson(const std::vector<MetricFamily>& families) {
  nlohmann::json out = nlohmann::json::object();
  for (const MetricFamily& f : families) {
    nlohmann::json samples = nlohmann::json::array();
    for (const MetricSample& s : f.samples) {
      nlohmann::json labels = nlohmann::json::object();
      for (const auto& [key, value] : s.labels) labels[key] = value;
      samples.push_back({{"labels", std::move(labels)}, {"value", s.value}});
    }
    out[f.name] = std::move(samples);
  }
  return out;
}

}  // namespace

std::string RenderStatusJson(const OpsSnapshot* snapshot_or_null, const Health& health) {
  // Replace invalid UTF-8 in owner-supplied strings rather than throw.
  auto dump = [](const nlohmann::json& doc) {
    return doc.dump(2, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace) +
           "\n";
  };
  if (snapshot_or_null == nullptr) return dump({{"healthy", health.ok}, {"reason", health.reason}});
  const OpsSnapshot& snapshot = *snapshot_or_null;
  if (snapshot.owner == OpsOwner::kPoolManager) {
    return dump({{"role", "pool_manager"},
                 {"healthy", health.ok},
                 {"reason", health.reason},
                 {"metrics", ExtraJson(snapshot.extra_metrics)}});
  }
  nlohmann::json peers = nlohmann::json::array();
  for (const PeerLinkStats& p : snapshot.peers) {
    peers.push_back({{"rank", p.peer.value},
                     {"state", p.state},
                     {"errors", nlohmann::json(p.errors_by_reason)}});
  }
  nlohmann::json latency = nlohmann::json::object();
  for (const JobLatency& j : snapshot.job_latency) {
    latency[j.kind] = {{"count", j.latency.count()}, {"sum_us", j.latency.sum_us}};
  }
  nlohmann::json doc = {
      {"rank", snapshot.rank.value},
      {"world_size", snapshot.world_size},
      {"healthy", health.ok},
      {"reason", health.reason},
      {"peers", std::move(peers)},
      {"store", StoreJson(snapshot.store)},
      {"transport", {{"kind", snapshot.transport}, {"reason", snapshot.transport_reason}}},
      {"job_latency", std::move(latency)},
  };
  if (!snapshot.extra_metrics.empty()) doc["metrics"] = ExtraJson(snapshot.extra_metrics);
  return dump(doc);
}

}  // namespace strata
