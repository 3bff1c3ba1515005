// /metrics as a dashboard sees it: a real store (one process, two ranks, disk
// tier) runs a known workload (the qualification's phases 1 and 2), the
// snapshot `strata rank` publishes (store stats and disk job latencies) is served by the HTTP
// endpoint, scraped over TCP, parsed, and every store counter must equal the store's stats.
#include <gtest/gtest.h>
#include <httplib.h>

#include "launch/ops/http_endpoint.h"
#include "launch/ops/metrics.h"
#include "launch/ops/ops_snapshot.h"
#include "launch/rank/rank_stores.h"
#include "tests/unit/launch/prometheus_reader.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

TEST(RankMetricsTest, ScrapedMetricsEqualTheStoreStatsAfterAKnownWorkload) {
  testing::ScratchDir dir;
  RankConfig config;
  config.cluster.world_size = 2;
  config.cluster.single_process = true;
  config.prefix_cache.disk_dir = dir.path();
  config.prefix_cache.disk_limit_bytes = uint64_t{1} << 30;
  Result<RankRole> opened = OpenRankStores(config, /*seed=*/7);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  ASSERT_EQ(PeerOf(*opened), nullptr) << "one process holding every rank drives the runtime";
  RuntimeDriver& stores = *DriverOf(*opened);
  Qualification q = stores.MakeQualification();
  const PhaseReport gpu = q.GpuHit();
  ASSERT_TRUE(gpu.ok) << gpu.detail;
  const PhaseReport host = q.HostRestore();
  ASSERT_TRUE(host.ok) << host.detail;

  const StoreStats st = stores.store()->Stats();
  // The workload's own counts: every conversation restored once from disk.
  EXPECT_EQ(st.hits, host.host_hits);
  EXPECT_EQ(st.disk.records, host.records);
  EXPECT_GT(st.disk.bytes_out_total, 0u);

  SnapshotPublisher publisher;
  OpsSnapshot snap;
  snap.rank = RankId(0);
  snap.world_size = 2;
  snap.store = st;
  snap.job_latency = stores.JobLatencies();
  snap.taken_at = std::chrono::steady_clock::now();
  publisher.Publish(snap);
  Result<std::unique_ptr<HttpEndpoint>> endpoint =
      HttpEndpoint::Start({.bind = "127.0.0.1", .port = 0}, [&] { return publisher.Latest(); });
  ASSERT_TRUE(endpoint.ok()) << endpoint.status().ToString();
  httplib::Client client("127.0.0.1", (*endpoint)->port());
  client.set_read_timeout(10, 0);
  httplib::Result res = client.Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  ASSERT_EQ(res->status, 200);
  const Exposition e = Parse(res->body);

  auto is = [](uint64_t v) { return std::to_string(v); };
  EXPECT_EQ(ValueOf(e, "strata_lookups_total"), is(st.lookups));
  EXPECT_EQ(ValueOf(e, "strata_lookup_hits_total"), is(host.host_hits));
  EXPECT_EQ(ValueOf(e, "strata_reused_tokens_total"), is(st.reused_tokens));
  EXPECT_EQ(ValueOf(e, "strata_fetches_total"), is(st.fetches));
  EXPECT_EQ(ValueOf(e, "strata_store_outcomes_total", {{"outcome", "queued"}}),
            is(st.store_queued));
  EXPECT_EQ(ValueOf(e, "strata_store_outcomes_total", {{"outcome", "present"}}),
            is(st.store_present));
  EXPECT_EQ(ValueOf(e, "strata_host_cache_records", {{"tier", "disk"}}), is(host.records));
  EXPECT_EQ(ValueOf(e, "strata_host_cache_bytes", {{"tier", "disk"}}), is(st.disk.bytes));
  EXPECT_EQ(ValueOf(e, "strata_host_cache_held_total", {{"tier", "disk"}}),
            is(st.disk.stored_total));
  EXPECT_EQ(ValueOf(e, "strata_host_cache_bytes_out_total", {{"tier", "disk"}}),
            is(st.disk.bytes_out_total));
  EXPECT_EQ(ValueOf(e, "strata_host_cache_records", {{"tier", "memory"}}), "0");
  EXPECT_EQ(ValueOf(e, "strata_host_cache_slots"), is(st.slots_total));
  // Every disk operation's latency was recorded, start to completion.
  EXPECT_EQ(ValueOf(e, "strata_job_latency_seconds_count", {{"kind", "store"}}),
            is(st.disk.stored_total + st.store_failed));
  EXPECT_EQ(ValueOf(e, "strata_job_latency_seconds_count", {{"kind", "fetch"}}), is(st.fetches));
  EXPECT_GT(st.disk.stored_total, 0u);
  EXPECT_TRUE(stores.Close().ok());
}

}  // namespace
}  // namespace strata
