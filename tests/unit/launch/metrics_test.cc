#include "launch/ops/metrics.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "store/tier/retry_ledger.h"
#include "tests/unit/launch/prometheus_reader.h"

namespace strata {
namespace {

StoreStats DistinctStats() {
  StoreStats s;
  uint64_t v = 1000;
  for (uint64_t* f : {&s.slots_in_use,
                      &s.slots_total,
                      &s.intake_slots,
                      &s.parked_records,
                      &s.store_queued,
                      &s.store_present,
                      &s.store_deferred,
                      &s.store_retry,
                      &s.store_oversize,
                      &s.store_failed,
                      &s.lookups,
                      &s.hits,
                      &s.reused_tokens,
                      &s.fetches,
                      &s.fetch_failed,
                      &s.fs_full_retries,
                      &s.fetch_checksum_failures,
                      &s.disk_limit_bytes,
                      &s.disk_limit_lowered_total,
                      &s.fanout_writes,
                      &s.fanout_write_failures}) {
    *f = v++;
  }
  for (uint64_t& f : s.retry_abandoned) f = v++;
  for (TierStats* t : {&s.memory, &s.disk}) {
    for (uint64_t* f :
         {&t->records, &t->bytes, &t->stored_total, &t->evicted_total, &t->demoted_total,
          &t->compacted_total, &t->expired_total, &t->dropped_io_total, &t->packed_total,
          &t->per_rank_total, &t->abandoned_total, &t->bytes_in_total, &t->bytes_out_total}) {
      *f = v++;
    }
  }
  return s;
}

const Health kHealthy{.ok = true, .reason = "ok"};

OpsSnapshot Snapshot() {
  OpsSnapshot snap;
  snap.rank = RankId(2);
  snap.world_size = 4;
  snap.store = DistinctStats();
  LatencyHistogram h;
  for (uint64_t us : {10, 60, 60, 900, 3'000'000, 50'000'000}) h.Record(us);
  snap.job_latency.push_back({"store", h.Snapshot()});
  snap.job_latency.push_back({"fetch", LatencyHistogram().Snapshot()});
  snap.peers.push_back({RankId(0), "up", {{"timeout", 3}, {"oversized_frame", 1}}});
  snap.peers.push_back({RankId(3), "fa\"il\\ed\nx", {}});
  return snap;
}

TEST(MetricsTest, ParsesAsPrometheusTextWithConventions) {
  Exposition e = Parse(RenderMetrics(Snapshot(), kHealthy));
  for (const auto& [name, type] : e.type) {
    EXPECT_EQ(name.rfind("strata_", 0), 0u) << name;
    EXPECT_EQ(e.help.count(name), 1u) << name;
    const bool total = name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0;
    EXPECT_EQ(total, type == "counter") << name << " is a " << type;
  }
  EXPECT_EQ(ValueOf(e, "strata_info", {{"rank", "2"}, {"world_size", "4"}}), "1");
}

TEST(MetricsTest, EveryStoreStatsFieldIsExported) {
  const StoreStats s = DistinctStats();
  Exposition e = Parse(RenderMetrics(Snapshot(), kHealthy));
  auto is = [](uint64_t v) { return std::to_string(v); };
  EXPECT_EQ(ValueOf(e, "strata_host_cache_slots_in_use"), is(s.slots_in_use));
  EXPECT_EQ(ValueOf(e, "strata_host_cache_slots"), is(s.slots_total));
  EXPECT_EQ(ValueOf(e, "strata_host_cache_intake_slots"), is(s.intake_slots));
  EXPECT_EQ(ValueOf(e, "strata_host_cache_parked_records"), is(s.parked_records));
  const std::string outcomes = "strata_store_outcomes_total";
  EXPECT_EQ(ValueOf(e, outcomes, {{"outcome", "queued"}}), is(s.store_queued));
  EXPECT_EQ(ValueOf(e, outcomes, {{"outcome", "present"}}), is(s.store_present));
  EXPECT_EQ(ValueOf(e, outcomes, {{"outcome", "deferred"}}), is(s.store_deferred));
  EXPECT_EQ(ValueOf(e, outcomes, {{"outcome", "retry"}}), is(s.store_retry));
  EXPECT_EQ(ValueOf(e, outcomes, {{"outcome", "oversize"}}), is(s.store_oversize));
  EXPECT_EQ(ValueOf(e, outcomes, {{"outcome", "failed"}}), is(s.store_failed));
  const std::string abandoned = "strata_host_cache_retry_abandoned_total";
  for (size_t c = 0; c < kRetryCauseCount; ++c) {
    const std::string reason(RetryCauseName(static_cast<RetryCause>(c)));
    EXPECT_EQ(ValueOf(e, abandoned, {{"reason", reason}}), is(s.retry_abandoned[c])) << reason;
  }
  EXPECT_EQ(ValueOf(e, "strata_lookups_total"), is(s.lookups));
  EXPECT_EQ(ValueOf(e, "strata_lookup_hits_total"), is(s.hits));
  EXPECT_EQ(ValueOf(e, "strata_reused_tokens_total"), is(s.reused_tokens));
  EXPECT_EQ(ValueOf(e, "strata_fetches_total"), is(s.fetches));
  EXPECT_EQ(ValueOf(e, "strata_fetch_failures_total"), is(s.fetch_failed));
  EXPECT_EQ(ValueOf(e, "strata_fs_full_retries_total"), is(s.fs_full_retries));
  EXPECT_EQ(ValueOf(e, "strata_fetch_checksum_failures_total"), is(s.fetch_checksum_failures));
  EXPECT_EQ(ValueOf(e, "strata_disk_limit_bytes"), is(s.disk_limit_bytes));
  EXPECT_EQ(ValueOf(e, "strata_disk_limit_lowered_total"), is(s.disk_limit_lowered_total));
  EXPECT_EQ(ValueOf(e, "strata_fanout_writes_total"), is(s.fanout_writes));
  EXPECT_EQ(ValueOf(e, "strata_fanout_write_failures_total"), is(s.fanout_write_failures));
  for (const auto& [tier, t] :
       {std::pair<std::string, TierStats>{"memory", s.memory}, {"disk", s.disk}}) {
    const std::map<std::string, std::string> l = {{"tier", tier}};
    EXPECT_EQ(ValueOf(e, "strata_host_cache_records", l), is(t.records));
    EXPECT_EQ(ValueOf(e, "strata_host_cache_bytes", l), is(t.bytes));
    EXPECT_EQ(ValueOf(e, "strata_host_cache_held_total", l), is(t.stored_total));
    EXPECT_EQ(ValueOf(e, "strata_host_cache_evicted_total", l), is(t.evicted_total));
    EXPECT_EQ(ValueOf(e, "strata_host_cache_demoted_total", l), is(t.demoted_total));
    EXPECT_EQ(ValueOf(e, "strata_host_cache_compacted_total", l), is(t.compacted_total));
    EXPECT_EQ(ValueOf(e, "strata_host_cache_expired_total", l), is(t.expired_total));
    EXPECT_EQ(
        ValueOf(e, "strata_host_cache_dropped_total", {{"tier", tier}, {"reason", "io_error"}}),
        is(t.dropped_io_total));
    EXPECT_EQ(ValueOf(e, "strata_host_cache_packed_total", l), is(t.packed_total));
    EXPECT_EQ(ValueOf(e, "strata_host_cache_per_rank_total", l), is(t.per_rank_total));
    EXPECT_EQ(ValueOf(e, "strata_host_cache_abandoned_total", l), is(t.abandoned_total));
    EXPECT_EQ(ValueOf(e, "strata_host_cache_bytes_in_total", l), is(t.bytes_in_total));
    EXPECT_EQ(ValueOf(e, "strata_host_cache_bytes_out_total", l), is(t.bytes_out_total));
  }
  // 21 store fields, the abandoned retries by cause + 13 per tier, each
  // once, each with its own value.
  std::set<std::string> values;
  for (const Sample& smp : e.samples) {
    if (smp.name.rfind("strata_host_cache_", 0) == 0 || smp.name.rfind("strata_store_", 0) == 0 ||
        smp.name == "strata_lookups_total" || smp.name == "strata_lookup_hits_total" ||
        smp.name == "strata_reused_tokens_total" || smp.name == "strata_fetches_total" ||
        smp.name == "strata_fetch_failures_total" || smp.name == "strata_fs_full_retries_total" ||
        smp.name == "strata_fetch_checksum_failures_total" ||
        smp.name == "strata_disk_limit_bytes" || smp.name == "strata_disk_limit_lowered_total" ||
        smp.name == "strata_fanout_writes_total" ||
        smp.name == "strata_fanout_write_failures_total") {
      EXPECT_TRUE(values.insert(smp.value).second) << smp.name;
    }
  }
  EXPECT_EQ(values.size(), 21u + kRetryCauseCount + 2 * 13u);
}

TEST(MetricsTest, LatencyHistogramIsCumulativeInSeconds) {
  Exposition e = Parse(RenderMetrics(Snapshot(), kHealthy));
  EXPECT_EQ(e.type.at("strata_job_latency_seconds"), "histogram");
  const std::string b = "strata_job_latency_seconds_bucket";
  EXPECT_EQ(ValueOf(e, b, {{"kind", "store"}, {"le", "0.00005"}}), "1");
  EXPECT_EQ(ValueOf(e, b, {{"kind", "store"}, {"le", "0.0001"}}), "3");
  EXPECT_EQ(ValueOf(e, b, {{"kind", "store"}, {"le", "0.001"}}), "4");
  EXPECT_EQ(ValueOf(e, b, {{"kind", "store"}, {"le", "2.5"}}), "4");
  EXPECT_EQ(ValueOf(e, b, {{"kind", "store"}, {"le", "10"}}), "5");
  EXPECT_EQ(ValueOf(e, b, {{"kind", "store"}, {"le", "+Inf"}}), "6");
  EXPECT_EQ(ValueOf(e, "strata_job_latency_seconds_count", {{"kind", "store"}}), "6");
  EXPECT_EQ(ValueOf(e, "strata_job_latency_seconds_sum", {{"kind", "store"}}), "53.00103");
  EXPECT_EQ(ValueOf(e, b, {{"kind", "fetch"}, {"le", "+Inf"}}), "0");
  // Buckets never decrease, and le values are increasing numbers.
  double last_le = -1;
  uint64_t last = 0;
  for (const Sample& s : e.samples) {
    if (s.name != b || s.labels.at("kind") != "store") continue;
    const double le = s.labels.at("le") == "+Inf" ? 1e300 : std::stod(s.labels.at("le"));
    EXPECT_GT(le, last_le);
    EXPECT_GE(std::stoull(s.value), last);
    last_le = le;
    last = std::stoull(s.value);
  }
}

TEST(MetricsTest, PeerLinksWithEscapedLabels) {
  Exposition e = Parse(RenderMetrics(Snapshot(), kHealthy));
  EXPECT_EQ(ValueOf(e, "strata_peer_link_state", {{"peer", "0"}, {"state", "up"}}), "1");
  EXPECT_EQ(ValueOf(e, "strata_peer_link_state", {{"peer", "3"}, {"state", "fa\"il\\ed\nx"}}), "1");
  EXPECT_EQ(ValueOf(e, "strata_peer_link_errors_total", {{"peer", "0"}, {"reason", "timeout"}}),
            "3");
  EXPECT_EQ(
      ValueOf(e, "strata_peer_link_errors_total", {{"peer", "0"}, {"reason", "oversized_frame"}}),
      "1");
}

TEST(MetricsTest, ExtraFamiliesFollowTheRanksOwnWithEscapedLabels) {
  OpsSnapshot snap = Snapshot();
  snap.extra_metrics.push_back({"strata_example_total",
                                MetricKind::kCounter,
                                "An owner's family.",
                                {{{{"why", "a\"b"}}, 7}}});
  Exposition e = Parse(RenderMetrics(snap, kHealthy));
  EXPECT_EQ(FamilyOf(e, "strata_example_total"), "strata_example_total");
  EXPECT_EQ(e.type.at("strata_example_total"), "counter");
  EXPECT_EQ(ValueOf(e, "strata_example_total", {{"why", "a\"b"}}), "7");
  EXPECT_EQ(ValueOf(e, "strata_info", {{"rank", "2"}, {"world_size", "4"}}), "1");
}

TEST(MetricsTest, APoolManagerShowsHealthAndItsFamiliesOnly) {
  OpsSnapshot snap;
  snap.owner = OpsOwner::kPoolManager;
  snap.extra_metrics.push_back({"strata_pool_records", MetricKind::kGauge, "Records.", {{{}, 3}}});
  Exposition e = Parse(RenderMetrics(snap, kHealthy));
  EXPECT_EQ(ValueOf(e, "strata_pool_records", {}), "3");
  EXPECT_EQ(ValueOf(e, "strata_healthy", {}), "1");
  EXPECT_EQ(e.type.count("strata_info"), 0u);
  EXPECT_EQ(e.type.count("strata_lookups_total"), 0u);
}

TEST(MetricsTest, HealthAndConfiguredDiskLimitAreGauges) {
  OpsSnapshot snap = Snapshot();
  snap.disk_limit_configured_bytes = 5000;
  Exposition ok = Parse(RenderMetrics(snap, kHealthy));
  EXPECT_EQ(ok.type.at("strata_healthy"), "gauge");
  EXPECT_EQ(ValueOf(ok, "strata_healthy"), "1");
  EXPECT_EQ(ok.type.at("strata_disk_limit_configured_bytes"), "gauge");
  EXPECT_EQ(ValueOf(ok, "strata_disk_limit_configured_bytes"), "5000");
  Exposition failing = Parse(RenderMetrics(snap, Health{.ok = false, .reason = "not joined"}));
  EXPECT_EQ(ValueOf(failing, "strata_healthy"), "0");
}

TEST(MetricsTest, DrainFailedIsAGaugeSetOnlyByAFailedDrain) {
  OpsSnapshot snap = Snapshot();
  Exposition running = Parse(RenderMetrics(snap, kHealthy));
  EXPECT_EQ(running.type.at("strata_drain_failed"), "gauge");
  EXPECT_EQ(ValueOf(running, "strata_drain_failed"), "0");

  const OpsSnapshot failed =
      DrainFailedSnapshot(&snap, Status::Unavailable("rank 1 did not confirm its drain"),
                          std::chrono::steady_clock::time_point());
  Exposition e =
      Parse(RenderMetrics(failed, Health{.ok = false, .reason = failed.unhealthy_reason}));
  EXPECT_EQ(ValueOf(e, "strata_drain_failed"), "1");
  EXPECT_EQ(ValueOf(e, "strata_healthy"), "0");
  // The final snapshot keeps the counters the rank had before its Close.
  EXPECT_EQ(ValueOf(e, "strata_lookups_total"), std::to_string(snap.store.lookups));
}

TEST(MetricsTest, MicrosAsSeconds) {
  EXPECT_EQ(MicrosAsSeconds(0), "0");
  EXPECT_EQ(MicrosAsSeconds(50), "0.00005");
  EXPECT_EQ(MicrosAsSeconds(250'000), "0.25");
  EXPECT_EQ(MicrosAsSeconds(2'500'000), "2.5");
  EXPECT_EQ(MicrosAsSeconds(10'000'000), "10");
  EXPECT_EQ(MicrosAsSeconds(1'000'001), "1.000001");
}

TEST(MetricsTest, EmptySnapshotStillDeclaresEveryFamily) {
  Exposition e = Parse(RenderMetrics(OpsSnapshot{}, kHealthy));
  EXPECT_EQ(e.type.count("strata_job_latency_seconds"), 1u);
  EXPECT_EQ(e.type.count("strata_peer_link_state"), 1u);
  EXPECT_EQ(ValueOf(e, "strata_lookups_total"), "0");
}

}  // namespace
}  // namespace strata
