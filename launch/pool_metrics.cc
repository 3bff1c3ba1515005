#include "launch/pool_metrics.h"

#include <string>
#include <utility>

namespace strata {

namespace {

MetricFamily Family(std::string name, MetricKind kind, std::string help, uint64_t value) {
  return MetricFamily{std::move(name), kind, std::move(help), {{{}, value}}};
}

}  // namespace

std::vector<MetricFamily> PoolManagerMetrics(const pool::PoolManagerStats& s) {
  const pool::PoolTraffic& t = s.traffic;
  constexpr MetricKind kGauge = MetricKind::kGauge;
  constexpr MetricKind kCounter = MetricKind::kCounter;
  std::vector<MetricFamily> out = {
      Family("strata_pool_slots", kGauge, "Record slots in the arena.", s.slots_total),
      Family("strata_pool_slots_in_use", kGauge,
             "Slots owned by records or held by claims (slots - free).",
             s.slots_total - s.slots_free),
      Family("strata_pool_slots_free", kGauge, "Slots free for puts.", s.slots_free),
      Family("strata_pool_slots_retired_held", kGauge,
             "Slots of removed records that a claim still holds.", s.slots_retired_held),
      Family("strata_pool_records", kGauge, "Pooled records, every scope.", s.catalog.records),
      Family("strata_pool_scopes", kGauge, "Scopes with a session or records.", s.catalog.scopes),
      Family("strata_pool_sessions", kGauge, "Open instance sessions.", s.catalog.sessions),
      Family("strata_pool_connections", kGauge, "Open connections.", s.connections),
      Family("strata_pool_claims_in_flight", kGauge, "Claims not yet released.",
             s.catalog.claims_in_flight),
      Family("strata_pool_evicted_total", kCounter, "Records the manager's eviction removed.",
             s.catalog.evicted),
      Family("strata_pool_lookups_total", kCounter, "Lookups answered.", t.lookups),
      Family("strata_pool_lookup_hits_total", kCounter, "Lookups answered with a chain.",
             t.lookup_hits),
      Family("strata_pool_put_bytes_total", kCounter, "Bytes of puts granted slots.", t.put_bytes),
      Family("strata_pool_claims_total", kCounter, "Claims granted.", t.claims),
      Family("strata_pool_claimed_records_total", kCounter, "Records in granted claims.",
             t.claimed_records),
      Family("strata_pool_claimed_bytes_total", kCounter, "Bytes of records in granted claims.",
             t.claimed_bytes),
      Family("strata_pool_releases_total", kCounter, "Claims released.", t.releases),
  };
  out.push_back({"strata_pool_puts_total",
                 kCounter,
                 "Puts by stage: granted slots, committed (claimable), aborted.",
                 {{{{"stage", "granted"}}, t.puts_granted},
                  {{{"stage", "committed"}}, t.puts_committed},
                  {{{"stage", "aborted"}}, t.puts_aborted}}});
  MetricFamily refusals{"strata_pool_refusals_total",
                        kCounter,
                        "Requests the manager refused, by operation and status.",
                        {}};
  for (const auto& [key, n] : t.refusals) {
    refusals.samples.push_back({{{"op", key.first}, {"reason", key.second}}, n});
  }
  out.push_back(std::move(refusals));
  MetricFamily hellos{"strata_pool_hellos_rejected_total",
                      kCounter,
                      "Hellos the manager rejected, by reason (job_secret: a TCP Hello that "
                      "did not prove the job secret; data_job_secret, data_token: a data "
                      "connection's; no_arena_file: a TCP Hello asking for the arena's file "
                      "of a manager without one).",
                      {}};
  for (const auto& [reason, n] : t.hellos_rejected)
    hellos.samples.push_back({{{"reason", reason}}, n});
  out.push_back(std::move(hellos));
  // Exports (export_relay.h): holdings announced, and what became of each
  // export asked of a holder.
  const pool::ExportRelayCounts& x = s.exports;
  out.push_back(Family("strata_pool_holdings", kGauge,
                       "Checkpoints instances announced they hold and can export.",
                       s.catalog.holdings));
  out.push_back(Family("strata_pool_export_claims_waiting", kGauge, "Claims waiting for an export.",
                       x.waiting));
  out.push_back({"strata_pool_exports_total",
                 kCounter,
                 "Exports by outcome: started (asked of a holder), relayed (a waiting claim "
                 "granted after the holder's commit), refused (the holder aborted), failed (its "
                 "commit refused, or the ask not sent), lost (its session ended), expired (past "
                 "the claim's deadline: its claims failed); joined: claims that waited for an "
                 "export already asked.",
                 {{{{"outcome", "started"}}, x.started},
                  {{{"outcome", "joined"}}, x.joined},
                  {{{"outcome", "relayed"}}, x.relayed},
                  {{{"outcome", "refused"}}, x.refused},
                  {{{"outcome", "failed"}}, x.failed},
                  {{{"outcome", "lost"}}, x.lost},
                  {{{"outcome", "expired"}}, x.expired}}});
  // The TCP data channel (pool_data_server.h): "in" lands in the arena
  // (puts' windows), "out" leaves it (claims' windows).
  const pool::PoolDataCounts& d = s.data;
  out.push_back(Family("strata_pool_data_connections_total", kCounter,
                       "Data connections accepted (the TCP data channel).", d.connections));
  out.push_back(
      {"strata_pool_data_windows_total",
       kCounter,
       "Data-channel windows moved, by direction (in: a put's, out: a claim's).",
       {{{{"direction", "in"}}, d.windows_written}, {{{"direction", "out"}}, d.windows_read}}});
  out.push_back(
      {"strata_pool_data_bytes_total",
       kCounter,
       "Data-channel bytes moved, by direction (in: a put's, out: a claim's).",
       {{{{"direction", "in"}}, d.bytes_written}, {{{"direction", "out"}}, d.bytes_read}}});
  out.push_back(Family("strata_pool_data_windows_refused_total", kCounter,
                       "Data-channel windows refused (no such open put or held claim, or "
                       "outside its grant).",
                       d.windows_refused));
  out.push_back(Family("strata_pool_data_connections_dropped_total", kCounter,
                       "Data connections ended for a bad frame or a window that stalled.",
                       d.connections_dropped));
  return out;
}

std::vector<MetricFamily> PoolClientMetrics(const pool::PoolInstanceStats& pool) {
  using Labels = std::vector<std::pair<std::string, std::string>>;
  auto one = [](std::string name, MetricKind kind, std::string help, uint64_t value,
                Labels labels = {}) {
    return MetricFamily{std::move(name), kind, std::move(help), {{std::move(labels), value}}};
  };
  std::vector<MetricFamily> out;
  // Joins the rank's own strata_host_cache_dropped_total family (whose
  // held_total already counts imports as stores).
  out.push_back(EndOfChainDrops(pool.end_of_chain_tier, pool.dropped_end_of_chain));
  out.push_back(one("strata_pool_client_attached", MetricKind::kGauge,
                    "1 while this instance shares through its pool manager, else 0.",
                    pool.attached ? 1 : 0));
  out.push_back(one("strata_pool_client_reconnects_total", MetricKind::kCounter,
                    "Reattachments after a lost connection.", pool.reconnects));
  out.push_back(one("strata_pool_client_lookups_total", MetricKind::kCounter,
                    "Lookups asked of the manager (tickets begun).", pool.lookups));
  out.push_back(one("strata_pool_client_lookup_misses_total", MetricKind::kCounter,
                    "Admissions that went on without the manager's answer (pending past the "
                    "lookup grace), and lookups that could not be sent.",
                    pool.lookup_failures));
  out.push_back(one("strata_pool_client_lookup_waits_total", MetricKind::kCounter,
                    "Admissions held for a pending lookup, inside its grace.", pool.lookup_waits));
  out.push_back(
      one("strata_pool_client_lookup_tickets_refused_total", MetricKind::kCounter,
          "Requests admitted on local tiers only: the lookup tickets were at their limit.",
          pool.lookup_tickets_refused));
  MetricFamily late{
      "strata_pool_client_late_answers_total",
      MetricKind::kCounter,
      "Manager answers read after their admission went on without them, and the "
      "admissions they retried.",
      {{{{"stage", "answered"}}, pool.late_answers}, {{{"stage", "retried"}}, pool.late_retries}}};
  out.push_back(std::move(late));
  MetricFamily claims{
      "strata_pool_client_claims_total",
      MetricKind::kCounter,
      "Pooled chains claimed, by outcome (failed: restored locally or recomputed).",
      {{{{"outcome", "ok"}}, pool.claims}, {{{"outcome", "failed"}}, pool.claim_failures}}};
  out.push_back(std::move(claims));
  out.push_back(one("strata_pool_client_claim_fallbacks_total", MetricKind::kCounter,
                    "Failed claims restored from a local copy of the same endpoint instead.",
                    pool.claim_fallbacks));
  out.push_back(one("strata_pool_client_claims_in_flight", MetricKind::kGauge,
                    "Claims a restore began that have not landed or failed yet.",
                    pool.claims_in_flight));
  out.push_back(one("strata_pool_client_claims_failed_held", MetricKind::kGauge,
                    "Claims whose restore failed (deadline, lost connection) that still hold or "
                    "await their grant or copy; released when it comes back.",
                    pool.claims_failed_held));
  out.push_back(one("strata_pool_client_claimed_bytes_total", MetricKind::kCounter,
                    "Bytes of records claimed from the pool.", pool.claimed_bytes));
  out.push_back(one("strata_pool_client_puts_total", MetricKind::kCounter,
                    "Evicted records the manager accepted.", pool.puts));
  out.push_back(one("strata_pool_client_put_bytes_total", MetricKind::kCounter,
                    "Bytes of records the manager accepted.", pool.put_bytes));
  out.push_back(
      one("strata_pool_client_published_total", MetricKind::kCounter,
          "Records a pool-only instance stored and offered to the manager (parked for a put).",
          pool.published));
  MetricFamily refusals{"strata_pool_client_put_refusals_total",
                        MetricKind::kCounter,
                        "Puts the manager refused or that failed, by status.",
                        {}};
  for (const auto& [reason, n] : pool.put_refusals)
    refusals.samples.push_back({{{"reason", reason}}, n});
  out.push_back(std::move(refusals));
  out.push_back(one("strata_pool_client_put_retries_total", MetricKind::kCounter,
                    "Parked chains sent again after a refusal or a failed transfer.",
                    pool.put_retries));
  out.push_back(one("strata_pool_client_progress_probes_total", MetricKind::kCounter,
                    "Empty lookups that asked the manager for its progress while a refused put "
                    "waited for it.",
                    pool.put_probes));
  out.push_back(one("strata_pool_client_parked_records", MetricKind::kGauge,
                    "Evicted records parked until the manager takes them.", pool.parked_records));
  out.push_back(one("strata_pool_client_parked_bytes", MetricKind::kGauge,
                    "Bytes of the parked records' images.", pool.parked_bytes));
  MetricFamily abandoned{"strata_pool_client_puts_abandoned_total",
                         MetricKind::kCounter,
                         "Parked records given up, by reason (queue: the parked budget made room "
                         "for newer ones; oversize: larger than the budget; refused: refused too "
                         "often).",
                         {}};
  for (const auto& [reason, n] : pool.put_abandoned)
    abandoned.samples.push_back({{{"reason", reason}}, n});
  out.push_back(std::move(abandoned));
  out.push_back(one("strata_pool_client_demotions_given_up_total", MetricKind::kCounter,
                    "Records the disk tier demoted ahead of eviction that the manager did not "
                    "take; the tier keeps them.",
                    pool.demotions_given_up));
  const pool::ExportLedgerCounts& x = pool.exports;
  out.push_back({"strata_pool_client_exports_total",
                 MetricKind::kCounter,
                 "Exports of this instance's GPU checkpoints, by stage (requested of the runtime, "
                 "pinned, rejected: a pin handed back at once, ended: released; served: the "
                 "record written into the manager's slots and committed; aborted: refused or "
                 "failed, the put aborted).",
                 {{{{"stage", "requested"}}, x.requested},
                  {{{"stage", "pinned"}}, x.pinned},
                  {{{"stage", "rejected"}}, x.rejected},
                  {{{"stage", "ended"}}, x.ended},
                  {{{"stage", "served"}}, pool.exports_served},
                  {{{"stage", "aborted"}}, pool.exports_aborted}}});
  out.push_back(one("strata_pool_client_holdings", MetricKind::kGauge,
                    "Checkpoints this instance announced to the manager as held (exportable).",
                    pool.holdings));
  MetricFamily refused{"strata_pool_client_export_refusals_total",
                       MetricKind::kCounter,
                       "Exports the runtime refused to pin, by reason.",
                       {}};
  for (size_t r = 0; r < kExportRefusalCount; ++r) {
    refused.samples.push_back(
        {{{"reason", std::string(ExportRefusalName(static_cast<ExportRefusal>(r)))}},
         x.refused[r]});
  }
  out.push_back(std::move(refused));
  out.push_back(one("strata_pool_client_export_stray_answers_total", MetricKind::kCounter,
                    "Runtime answers naming no export awaiting one.", x.stray_answers));
  out.push_back(one("strata_pool_client_eviction_notices_total", MetricKind::kCounter,
                    "GPU checkpoints the runtime reported retired.", pool.eviction_notices));
  out.push_back(one("strata_pool_client_evictions_lost_total", MetricKind::kCounter,
                    "Times the runtime's eviction notice queue overflowed.", pool.evictions_lost));
  return out;
}

MetricFamily EndOfChainDrops(const std::string& tier, uint64_t dropped) {
  return MetricFamily{"strata_host_cache_dropped_total",
                      MetricKind::kCounter,
                      "Records discarded, by reason (end_of_chain: let go by the end of the local "
                      "chain and held by no pool).",
                      {{{{"tier", tier}, {"reason", "end_of_chain"}}, dropped}}};
}

MetricFamily UnpooledEndOfChainDrops(const StoreStats& stats, bool has_disk) {
  return has_disk ? EndOfChainDrops("disk", stats.disk.evicted_total)
                  : EndOfChainDrops("memory", stats.memory.evicted_total);
}

}  // namespace strata
