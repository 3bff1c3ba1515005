#include "launch/ops/metrics.h"

#include <cstddef>
#include <functional>
#include <string_view>

#include "store/tier/retry_ledger.h"

namespace strata {

// RenderMetrics names every field; a new field must be exported too.
static_assert(sizeof(TierStats) == 13 * sizeof(uint64_t), "export the new TierStats field");
static_assert(sizeof(StoreStats) ==
                  21 * sizeof(uint64_t) + sizeof(RetryCounts) + 2 * sizeof(TierStats),
              "export the new StoreStats field");

namespace {

enum class Kind : unsigned char { kCounter, kGauge, kHistogram };

std::string_view KindName(Kind k) {
  switch (k) {
    case Kind::kCounter: return "counter";
    case Kind::kGauge: return "gauge";
    case Kind::kHistogram: return "histogram";
  }
  return "untyped";
}

// Label values escape backslash, double quote and newline (format 0.0.4).
std::string Escape(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

class Writer {
 public:
  void Family(std::string_view name, Kind kind, std::string_view help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += KindName(kind);
    out_ += '\n';
  }
  // `labels` is the already-escaped inside of {...}, or empty.
  void Sample(std::string_view name, std::string_view labels, std::string_view value) {
    out_ += name;
    if (!labels.empty()) {
      out_ += '{';
      out_ += labels;
      out_ += '}';
    }
    out_ += ' ';
    out_ += value;
    out_ += '\n';
  }
  void Sample(std::string_view name, std::string_view labels, uint64_t value) {
    Sample(name, labels, std::to_string(value));
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

std::string Label(std::string_view key, std::string_view value) {
  return std::string(key) + "=\"" + Escape(value) + "\"";
}

struct ScalarMetric {
  std::string_view name;
  Kind kind;
  std::string_view help;
  uint64_t StoreStats::*field;
};

constexpr ScalarMetric kStoreScalars[] = {
    {"strata_host_cache_slots_in_use", Kind::kGauge,
     "Slab slots in use: pages, row pieces and staging, including in-flight copies.",
     &StoreStats::slots_in_use},
    {"strata_host_cache_slots", Kind::kGauge, "Slab slots in the local pool, including intake.",
     &StoreStats::slots_total},
    {"strata_host_cache_intake_slots", Kind::kGauge, "Slab slots reserved for intake.",
     &StoreStats::intake_slots},
    {"strata_host_cache_parked_records", Kind::kGauge,
     "Records in DRAM whose file is not yet written (composite).", &StoreStats::parked_records},
    {"strata_lookups_total", Kind::kCounter, "Prefix lookups.", &StoreStats::lookups},
    {"strata_lookup_hits_total", Kind::kCounter, "Lookups that found a host record.",
     &StoreStats::hits},
    {"strata_reused_tokens_total", Kind::kCounter, "Tokens restored instead of recomputed.",
     &StoreStats::reused_tokens},
    {"strata_fetches_total", Kind::kCounter, "Restores started.", &StoreStats::fetches},
    {"strata_fetch_failures_total", Kind::kCounter, "Restores that failed.",
     &StoreStats::fetch_failed},
    {"strata_fetch_checksum_failures_total", Kind::kCounter,
     "Restores whose record failed its checksums (the record was removed).",
     &StoreStats::fetch_checksum_failures},
    {"strata_fs_full_retries_total", Kind::kCounter,
     "Copies deferred because the filesystem was full.", &StoreStats::fs_full_retries},
    {"strata_disk_limit_bytes", Kind::kGauge,
     "The disk tier's limit in force: the configured one, or lower after the filesystem filled "
     "up.",
     &StoreStats::disk_limit_bytes},
    {"strata_disk_limit_lowered_total", Kind::kCounter,
     "Times a full filesystem lowered the disk tier's limit.",
     &StoreStats::disk_limit_lowered_total},
    {"strata_fanout_writes_total", Kind::kCounter,
     "Record files written straight from the GPU beside their memory copy (composite over the "
     "direct transport).",
     &StoreStats::fanout_writes},
    {"strata_fanout_write_failures_total", Kind::kCounter,
     "Fan-out writes that failed (the record stayed in memory, to spill from there later).",
     &StoreStats::fanout_write_failures},
};

struct OutcomeMetric {
  std::string_view outcome;
  uint64_t StoreStats::*field;
};

constexpr OutcomeMetric kStoreOutcomes[] = {
    {"queued", &StoreStats::store_queued},     {"present", &StoreStats::store_present},
    {"deferred", &StoreStats::store_deferred}, {"retry", &StoreStats::store_retry},
    {"oversize", &StoreStats::store_oversize}, {"failed", &StoreStats::store_failed},
};

struct TierMetric {
  std::string_view name;
  Kind kind;
  std::string_view help;
  uint64_t TierStats::*field;
  std::string_view extra_label;  // e.g. reason="io_error", or empty
};

constexpr TierMetric kTierMetrics[] = {
    {"strata_host_cache_records", Kind::kGauge, "Records held now (disk: including reservations).",
     &TierStats::records, ""},
    {"strata_host_cache_bytes", Kind::kGauge, "Bytes held now.", &TierStats::bytes, ""},
    {"strata_host_cache_held_total", Kind::kCounter, "Records that became resident.",
     &TierStats::stored_total, ""},
    {"strata_host_cache_evicted_total", Kind::kCounter, "Records dropped for capacity.",
     &TierStats::evicted_total, ""},
    {"strata_host_cache_demoted_total", Kind::kCounter,
     "Records demoted to the pool before the tier filled, let go once the manager accepted them.",
     &TierStats::demoted_total, ""},
    {"strata_host_cache_compacted_total", Kind::kCounter, "Rows dropped with their pages kept.",
     &TierStats::compacted_total, ""},
    {"strata_host_cache_expired_total", Kind::kCounter, "Records removed by max age.",
     &TierStats::expired_total, ""},
    {"strata_host_cache_dropped_total", Kind::kCounter,
     "Records discarded, by reason (io_error: a terminal I/O error).", &TierStats::dropped_io_total,
     "reason=\"io_error\""},
    {"strata_host_cache_packed_total", Kind::kCounter,
     "Records stored with a replicated page or row share.", &TierStats::packed_total, ""},
    {"strata_host_cache_per_rank_total", Kind::kCounter, "Records stored with every rank's share.",
     &TierStats::per_rank_total, ""},
    {"strata_host_cache_abandoned_total", Kind::kCounter,
     "Disk-only stores abandoned because the ranks differed.", &TierStats::abandoned_total, ""},
    {"strata_host_cache_bytes_in_total", Kind::kCounter, "Bytes copied into this tier.",
     &TierStats::bytes_in_total, ""},
    {"strata_host_cache_bytes_out_total", Kind::kCounter, "Bytes restored from this tier.",
     &TierStats::bytes_out_total, ""},
};

// Samples of an owner's families that share a name with one of the rank's
// (an extra reason of strata_host_cache_dropped_total) join that family.
void RenderMergedSamples(std::string_view name, const std::vector<MetricFamily>& extra, Writer* w) {
  for (const MetricFamily& f : extra) {
    if (f.name != name) continue;
    for (const MetricSample& s : f.samples) {
      std::string labels;
      for (const auto& [key, value] : s.labels) {
        labels += (labels.empty() ? "" : ",") + Label(key, value);
      }
      w->Sample(f.name, labels, s.value);
    }
  }
}

bool IsTierFamily(std::string_view name) {
  for (const TierMetric& m : kTierMetrics) {
    if (m.name == name) return true;
  }
  return false;
}

void RenderStore(const StoreStats& s, const std::vector<MetricFamily>& extra, Writer* w) {
  for (const ScalarMetric& m : kStoreScalars) {
    w->Family(m.name, m.kind, m.help);
    w->Sample(m.name, "", s.*m.field);
  }
  w->Family("strata_store_outcomes_total", Kind::kCounter,
            "Checkpoints offered to the store, by outcome.");
  for (const OutcomeMetric& o : kStoreOutcomes) {
    w->Sample("strata_store_outcomes_total", Label("outcome", o.outcome), s.*o.field);
  }
  w->Family("strata_host_cache_retry_abandoned_total", Kind::kCounter,
            "Checkpoints refused for now whose GPU copy the runtime evicted before a re-offer "
            "was taken, by the last refusal's cause.");
  for (size_t c = 0; c < kRetryCauseCount; ++c) {
    w->Sample("strata_host_cache_retry_abandoned_total",
              Label("reason", RetryCauseName(static_cast<RetryCause>(c))), s.retry_abandoned[c]);
  }
  for (const TierMetric& m : kTierMetrics) {
    w->Family(m.name, m.kind, m.help);
    for (const auto& [tier, stats] :
         {std::pair<std::string_view, const TierStats*>{"memory", &s.memory}, {"disk", &s.disk}}) {
      std::string labels = Label("tier", tier);
      if (!m.extra_label.empty()) labels += "," + std::string(m.extra_label);
      w->Sample(m.name, labels, stats->*m.field);
    }
    RenderMergedSamples(m.name, extra, w);
  }
}

void RenderLatency(const std::vector<JobLatency>& jobs, Writer* w) {
  constexpr std::string_view kName = "strata_job_latency_seconds";
  w->Family(kName, Kind::kHistogram,
            "Job latency from submission to completion on every rank, by job kind.");
  for (const JobLatency& job : jobs) {
    const std::string kind = Label("kind", job.kind);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < kLatencyBucketBoundsUs.size(); ++i) {
      cumulative += job.latency.counts[i];
      w->Sample(std::string(kName) + "_bucket",
                kind + "," + Label("le", MicrosAsSeconds(kLatencyBucketBoundsUs[i])), cumulative);
    }
    cumulative += job.latency.counts[kLatencyBuckets - 1];
    w->Sample(std::string(kName) + "_bucket", kind + "," + Label("le", "+Inf"), cumulative);
    w->Sample(std::string(kName) + "_sum", kind, MicrosAsSeconds(job.latency.sum_us));
    w->Sample(std::string(kName) + "_count", kind, cumulative);
  }
}

void RenderPeers(const std::vector<PeerLinkStats>& peers, Writer* w) {
  w->Family("strata_peer_link_state", Kind::kGauge,
            "1 for each record link's current state, by peer rank.");
  for (const PeerLinkStats& p : peers) {
    w->Sample("strata_peer_link_state",
              Label("peer", std::to_string(p.peer.value)) + "," + Label("state", p.state), 1);
  }
  w->Family("strata_peer_link_errors_total", Kind::kCounter,
            "Record link errors, by peer rank and reason.");
  for (const PeerLinkStats& p : peers) {
    for (const auto& [reason, count] : p.errors_by_reason) {
      w->Sample("strata_peer_link_errors_total",
                Label("peer", std::to_string(p.peer.value)) + "," + Label("reason", reason), count);
    }
  }
}

}  // namespace

std::string MicrosAsSeconds(uint64_t micros) {
  std::string out = std::to_string(micros / 1'000'000);
  uint64_t frac = micros % 1'000'000;
  if (frac == 0) return out;
  std::string digits = std::to_string(frac);
  digits.insert(0, 6 - digits.size(), '0');
  while (digits.back() == '0') digits.pop_back();
  return out + "." + digits;
}

// The owner's families, except those merged into the rank's tier families.
static void RenderExtra(const std::vector<MetricFamily>& families, Writer* w) {
  for (const MetricFamily& f : families) {
    if (IsTierFamily(f.name)) continue;
    w->Family(f.name, f.kind == MetricKind::kGauge ? Kind::kGauge : Kind::kCounter, f.help);
    for (const MetricSample& s : f.samples) {
      std::string labels;
      for (const auto& [key, value] : s.labels) {
        labels += (labels.empty() ? "" : ",") + Label(key, value);
      }
      w->Sample(f.name, labels, s.value);
    }
  }
}

std::string RenderMetrics(const OpsSnapshot& snapshot, const Health& health) {
  Writer w;
  if (snapshot.owner == OpsOwner::kPoolManager) {
    w.Family("strata_healthy", Kind::kGauge,
             "1 when /healthz answers 200 at this scrape, else 0 (/healthz says why).");
    w.Sample("strata_healthy", "", health.ok ? 1 : 0);
    RenderExtra(snapshot.extra_metrics, &w);
    return w.Take();
  }
  w.Family("strata_info", Kind::kGauge, "Always 1; labels say which rank this is.");
  w.Sample("strata_info",
           Label("rank", std::to_string(snapshot.rank.value)) + "," +
               Label("world_size", std::to_string(snapshot.world_size)),
           1);
  w.Family("strata_healthy", Kind::kGauge,
           "1 when /healthz answers 200 at this scrape, else 0 (/healthz says why).");
  w.Sample("strata_healthy", "", health.ok ? 1 : 0);
  w.Family("strata_drain_failed", Kind::kGauge,
           "1 once the drain at shutdown failed (the rank exits 1 after "
           "metrics.linger_after_failure), else 0.");
  w.Sample("strata_drain_failed", "", snapshot.drain_failure.empty() ? 0 : 1);
  w.Family("strata_disk_limit_configured_bytes", Kind::kGauge,
           "The disk tier's limit as configured, before the filesystem lowered it.");
  w.Sample("strata_disk_limit_configured_bytes", "", snapshot.disk_limit_configured_bytes);
  RenderStore(snapshot.store, snapshot.extra_metrics, &w);
  RenderLatency(snapshot.job_latency, &w);
  RenderPeers(snapshot.peers, &w);
  RenderExtra(snapshot.extra_metrics, &w);
  return w.Take();
}

}  // namespace strata
