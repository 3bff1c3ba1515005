// The pool's metric families render as Prometheus text with the project's
// conventions (strata_ prefix, counters end in _total, one HELP and TYPE),
// carry the values they are given, and the manager's /status lists them.
#include "launch/pool_metrics.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "launch/ops/metrics.h"
#include "launch/ops/status_json.h"
#include "tests/unit/launch/prometheus_reader.h"

namespace strata {
namespace {

const Health kHealthy{.ok = true, .reason = "ok"};

pool::PoolManagerStats ManagerStats() {
  pool::PoolManagerStats s;
  s.slots_total = 64;
  s.slots_free = 50;
  s.catalog.records = 7;
  s.traffic.claims = 3;
  s.traffic.puts_committed = 5;
  s.traffic.refusals[{"put", "busy"}] = 2;
  s.catalog.holdings = 13;
  s.exports.started = 4;
  s.exports.relayed = 3;
  s.exports.lost = 1;
  s.exports.waiting = 2;
  return s;
}

void ExpectConventions(const Exposition& e) {
  for (const auto& [name, type] : e.type) {
    EXPECT_EQ(name.rfind("strata_", 0), 0u) << name;
    EXPECT_EQ(e.help.count(name), 1u) << name;
    const bool total = name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0;
    EXPECT_EQ(total, type == "counter") << name << " is a " << type;
  }
}

// `snap` rendered and read back, after checking the conventions.
Exposition Rendered(const OpsSnapshot& snap) {
  Exposition e = Parse(RenderMetrics(snap, kHealthy));  // one HELP and TYPE per family
  ExpectConventions(e);
  return e;
}

TEST(PoolMetricsTest, ManagerFamiliesCarryTheirValues) {
  OpsSnapshot snap;
  snap.owner = OpsOwner::kPoolManager;
  snap.extra_metrics = PoolManagerMetrics(ManagerStats());
  Exposition e = Rendered(snap);
  EXPECT_EQ(ValueOf(e, "strata_pool_slots_in_use"), "14");
  EXPECT_EQ(ValueOf(e, "strata_pool_slots_free"), "50");
  EXPECT_EQ(ValueOf(e, "strata_pool_records"), "7");
  EXPECT_EQ(ValueOf(e, "strata_pool_claims_total"), "3");
  EXPECT_EQ(ValueOf(e, "strata_pool_puts_total", {{"stage", "committed"}}), "5");
  EXPECT_EQ(ValueOf(e, "strata_pool_refusals_total", {{"op", "put"}, {"reason", "busy"}}), "2");
  EXPECT_EQ(ValueOf(e, "strata_pool_holdings"), "13");
  EXPECT_EQ(ValueOf(e, "strata_pool_export_claims_waiting"), "2");
  EXPECT_EQ(ValueOf(e, "strata_pool_exports_total", {{"outcome", "started"}}), "4");
  EXPECT_EQ(ValueOf(e, "strata_pool_exports_total", {{"outcome", "relayed"}}), "3");
  EXPECT_EQ(ValueOf(e, "strata_pool_exports_total", {{"outcome", "lost"}}), "1");
  EXPECT_EQ(ValueOf(e, "strata_pool_exports_total", {{"outcome", "refused"}}), "0");
}

TEST(PoolMetricsTest, ClientFamiliesCarryTheirValues) {
  pool::PoolInstanceStats p;
  p.attached = true;
  p.claims = 4;
  p.claim_failures = 1;
  p.puts = 6;
  p.dropped_end_of_chain = 2;
  p.put_refusals["busy"] = 3;
  OpsSnapshot snap;
  snap.store.memory.dropped_io_total = 5;
  snap.extra_metrics = PoolClientMetrics(p);
  Exposition e = Rendered(snap);
  // The end-of-chain drops join the rank's own family, beside its io_error.
  EXPECT_EQ(ValueOf(e, "strata_host_cache_dropped_total",
                    {{"tier", "memory"}, {"reason", "end_of_chain"}}),
            "2");
  EXPECT_EQ(
      ValueOf(e, "strata_host_cache_dropped_total", {{"tier", "memory"}, {"reason", "io_error"}}),
      "5");
  EXPECT_EQ(ValueOf(e, "strata_pool_client_attached"), "1");
  EXPECT_EQ(ValueOf(e, "strata_pool_client_claims_total", {{"outcome", "ok"}}), "4");
  EXPECT_EQ(ValueOf(e, "strata_pool_client_claims_total", {{"outcome", "failed"}}), "1");
  EXPECT_EQ(ValueOf(e, "strata_pool_client_puts_total"), "6");
  EXPECT_EQ(ValueOf(e, "strata_pool_client_put_refusals_total", {{"reason", "busy"}}), "3");
}

TEST(PoolMetricsTest, QueueFamiliesCarryTheirValues) {
  pool::PoolInstanceStats p;
  p.parked_records = 3;
  p.parked_bytes = 4096;
  p.put_retries = 2;
  p.put_probes = 5;
  p.published = 11;
  p.demotions_given_up = 13;
  p.put_abandoned["queue"] = 7;
  p.put_abandoned["oversize"] = 1;
  OpsSnapshot snap;
  snap.extra_metrics = PoolClientMetrics(p);
  Exposition e = Rendered(snap);
  EXPECT_EQ(ValueOf(e, "strata_pool_client_parked_records"), "3");
  EXPECT_EQ(ValueOf(e, "strata_pool_client_parked_bytes"), "4096");
  EXPECT_EQ(ValueOf(e, "strata_pool_client_put_retries_total"), "2");
  EXPECT_EQ(ValueOf(e, "strata_pool_client_progress_probes_total"), "5");
  EXPECT_EQ(ValueOf(e, "strata_pool_client_published_total"), "11");
  EXPECT_EQ(ValueOf(e, "strata_pool_client_demotions_given_up_total"), "13");
  EXPECT_EQ(ValueOf(e, "strata_pool_client_puts_abandoned_total", {{"reason", "queue"}}), "7");
  EXPECT_EQ(ValueOf(e, "strata_pool_client_puts_abandoned_total", {{"reason", "oversize"}}), "1");
}

TEST(PoolMetricsTest, ExportFamiliesCarryTheirValues) {
  pool::PoolInstanceStats p;
  p.exports.requested = 9;
  p.exports.pinned = 5;
  p.exports.rejected = 1;
  p.exports.ended = 4;
  p.exports.stray_answers = 2;
  p.exports.refused[static_cast<size_t>(ExportRefusal::kNoHeadroom)] = 3;
  p.exports.refused[static_cast<size_t>(ExportRefusal::kChainGap)] = 6;
  p.eviction_notices = 11;
  p.evictions_lost = 1;
  p.exports_served = 7;
  p.exports_aborted = 8;
  p.holdings = 12;
  OpsSnapshot snap;
  snap.extra_metrics = PoolClientMetrics(p);
  Exposition e = Rendered(snap);
  const std::string exports = "strata_pool_client_exports_total";
  EXPECT_EQ(ValueOf(e, exports, {{"stage", "requested"}}), "9");
  EXPECT_EQ(ValueOf(e, exports, {{"stage", "pinned"}}), "5");
  EXPECT_EQ(ValueOf(e, exports, {{"stage", "rejected"}}), "1");
  EXPECT_EQ(ValueOf(e, exports, {{"stage", "ended"}}), "4");
  EXPECT_EQ(ValueOf(e, exports, {{"stage", "served"}}), "7");
  EXPECT_EQ(ValueOf(e, exports, {{"stage", "aborted"}}), "8");
  EXPECT_EQ(ValueOf(e, "strata_pool_client_holdings"), "12");
  const std::string refusals = "strata_pool_client_export_refusals_total";
  EXPECT_EQ(ValueOf(e, refusals,
                    {{"reason", std::string(ExportRefusalName(ExportRefusal::kNoHeadroom))}}),
            "3");
  EXPECT_EQ(
      ValueOf(e, refusals, {{"reason", std::string(ExportRefusalName(ExportRefusal::kChainGap))}}),
      "6");
  EXPECT_EQ(
      ValueOf(e, refusals, {{"reason", std::string(ExportRefusalName(ExportRefusal::kNotFound))}}),
      "0");
  EXPECT_EQ(ValueOf(e, "strata_pool_client_export_stray_answers_total"), "2");
  EXPECT_EQ(ValueOf(e, "strata_pool_client_eviction_notices_total"), "11");
  EXPECT_EQ(ValueOf(e, "strata_pool_client_evictions_lost_total"), "1");
}

TEST(PoolMetricsTest, AnUnpooledRankCountsItsEndOfChainEvictionsAsDrops) {
  OpsSnapshot snap;
  snap.store.memory.evicted_total = 9;
  snap.store.disk.evicted_total = 4;
  snap.store.disk.dropped_io_total = 1;
  // Memory + disk: the memory tier's evictions went to disk; the disk's are the drops.
  snap.extra_metrics = {UnpooledEndOfChainDrops(snap.store, /*has_disk=*/true)};
  Exposition e = Rendered(snap);
  EXPECT_EQ(
      ValueOf(e, "strata_host_cache_dropped_total", {{"tier", "disk"}, {"reason", "end_of_chain"}}),
      "4");
  EXPECT_EQ(
      ValueOf(e, "strata_host_cache_dropped_total", {{"tier", "disk"}, {"reason", "io_error"}}),
      "1");
  // Memory only: its evictions are the drops.
  snap.extra_metrics = {UnpooledEndOfChainDrops(snap.store, /*has_disk=*/false)};
  e = Rendered(snap);
  EXPECT_EQ(ValueOf(e, "strata_host_cache_dropped_total",
                    {{"tier", "memory"}, {"reason", "end_of_chain"}}),
            "9");
}

TEST(PoolMetricsTest, ManagerStatusListsItsFamilies) {
  OpsSnapshot snap;
  snap.owner = OpsOwner::kPoolManager;
  snap.extra_metrics = PoolManagerMetrics(ManagerStats());
  nlohmann::json j = nlohmann::json::parse(RenderStatusJson(&snap, kHealthy));
  EXPECT_EQ(j["role"], "pool_manager");
  EXPECT_EQ(j["healthy"], true);
  EXPECT_EQ(j["metrics"]["strata_pool_records"][0]["value"], 7);
  EXPECT_EQ(j["metrics"]["strata_pool_refusals_total"][0]["labels"]["op"], "put");
  EXPECT_FALSE(j.contains("store"));
}

}  // namespace
}  // namespace strata
