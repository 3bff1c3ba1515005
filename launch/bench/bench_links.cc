// `strata bench links`: what running ranks on separate hosts costs, on
// loopback with every rank a thread of this process (its own planes, record
// directory, disk thread and record link, exactly as across hosts).
//  1. The round trip of a control-only job (an unlink of a missing file)
//     through rank zero's ShardedTransport with 1, 2, 4 and 8 ranks, next to
//     a raw TCP ping-pong over loopback measured in the same run, in blocks
//     alternating with each world size's trips (kBlocks), so both see the
//     same machine; the goal is a 4-rank p99 within twice that ping-pong's
//     p99 (fanout_p99_ratio_4). Beside each
//     world size, the same fan-out done raw (this thread writes to world - 1
//     echo threads over loopback TCP and reads every answer): the least a
//     trip to that many ranks can take here, whatever the protocol.
//     Beside each: the context switches of the whole process per round trip,
//     which is what the fan-out costs over the ping-pong on a loaded machine
//     (every wake-up of a thread is a chance to wait for a core), and its CPU
//     time per round trip (what the idle spins cost, --idle-spin-us).
//  2. Store and fetch throughput of whole records across 4 ranks vs 1 rank.
//  3. With --tls: 1 and 2 at 4 ranks again, plaintext and over mutual TLS 1.3
//     (a throwaway CA), side by side with their ratios.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "launch/bench/bench.h"
#include "launch/bench/links_bench_workloads.h"
#include "launch/bench/throwaway_certs.h"

namespace strata {
namespace {

using links_bench::BenchCluster;
using links_bench::ControlRoundTrips;
using links_bench::Latency;
using links_bench::RawFanoutRig;
using links_bench::StoreFetch;
using links_bench::Summarize;
using links_bench::TempDir;
using links_bench::Throughput;
using links_bench::Trips;

constexpr uint32_t kWorldSizes[] = {1, 2, 4, 8};
constexpr uint32_t kThroughputRanks = 4;
// Blocks of trips per world size, the ping-pong's, the raw fan-out's and the
// cluster's alternating.
constexpr uint32_t kBlocks = 10;

struct LinksBenchOptions {
  bool json = false;
  uint32_t ranks = 8;  // the largest world size measured
  uint32_t round_trips = 2000;
  uint32_t warmup = 200;
  uint32_t records = 48;
  uint32_t record_pages = 64;
  std::string dir = "/var/tmp";
  links_bench::ClusterTuning tuning;  // every rank's disk thread, rank zero's waits
  uint32_t idle_spin_us = static_cast<uint32_t>(DefaultIdleSpin().count());
  uint32_t link_idle_spin_us = 0;  // the production default ([cluster] link_idle_spin_us)
  std::optional<uint32_t> peer_link_idle_spin_us;  // unset: link_idle_spin_us
  uint32_t spin_slots = 0;                         // 0: the process default (SpinSlots())
  bool spin_yield = false;                         // spinners sched_yield at each clock read
  bool tls = false;  // also compare plaintext and mutual TLS links (section 3)
};

struct FanoutRow {
  uint32_t ranks = 0;
  Latency latency;
  Latency ping_pong;           // the raw ping-pong, in blocks alternating with this row's trips
  std::optional<Latency> raw;  // the raw fan-out to ranks - 1 peers (none for 1 rank)
  // Wake-ups rank zero's links saved by spinning (LinkStats::idle_spin_hits:
  // frames, and functions posted to them), and the same for the peers' links.
  double link_spin_hits_per_trip = 0;
  double peer_link_spin_hits_per_trip = 0;
};

// Section 3: one world size, plaintext links and then mutual TLS links.
struct TlsComparison {
  uint32_t ranks = 0;
  Latency plain_latency;
  Latency tls_latency;
  Throughput plain;
  Throughput tls;
};

Result<TlsComparison> CompareTls(const LinksBenchOptions& o, const std::string& base,
                                 uint64_t page_count, uint32_t world) {
  std::filesystem::create_directories(base + "/certs");
  STRATA_ASSIGN_OR_RETURN(wire::TlsConfig files, MakeThrowawayCerts(base + "/certs"));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const wire::TlsContext> tls,
                          wire::TlsContext::Create(files));
  TlsComparison out;
  out.ranks = world;
  for (bool over_tls : {false, true}) {
    const std::string dir = base + (over_tls ? "/tls" : "/plain");
    STRATA_ASSIGN_OR_RETURN(
        std::unique_ptr<BenchCluster> cluster,
        BenchCluster::Start(world, dir, page_count, o.tuning, over_tls ? tls : nullptr));
    uint64_t next_id = 1;
    STRATA_ASSIGN_OR_RETURN(
        Trips trips, ControlRoundTrips(cluster->transport(), o.warmup, o.round_trips, next_id));
    STRATA_ASSIGN_OR_RETURN(Throughput tp,
                            StoreFetch(cluster->transport(), o.records, o.record_pages, next_id));
    (over_tls ? out.tls_latency : out.plain_latency) = Summarize(trips);
    (over_tls ? out.tls : out.plain) = tp;
    STRATA_RETURN_IF_ERROR(cluster->Close());
  }
  return out;
}

nlohmann::json TlsJson(const TlsComparison& c) {
  auto side = [](const Latency& l, const Throughput& t) {
    return nlohmann::json{{"p50_us", l.p50_us},
                          {"p99_us", l.p99_us},
                          {"store_gbps", t.store_gbps},
                          {"fetch_gbps", t.fetch_gbps},
                          {"cpu_seconds_per_gb", t.cpu_seconds_per_gb}};
  };
  return {{"ranks", c.ranks},
          {"plaintext", side(c.plain_latency, c.plain)},
          {"tls", side(c.tls_latency, c.tls)},
          {"p99_ratio", c.tls_latency.p99_us / c.plain_latency.p99_us},
          {"store_ratio", c.tls.store_gbps / c.plain.store_gbps},
          {"fetch_ratio", c.tls.fetch_gbps / c.plain.fetch_gbps}};
}

void PrintTls(const TlsComparison& c) {
  std::printf("\nmutual TLS 1.3 vs plaintext links, %u ranks (same run)\n", c.ranks);
  std::printf("  %-10s %10s %10s %12s %12s %12s\n", "links", "p50 us", "p99 us", "store GB/s",
              "fetch GB/s", "CPU s / GB");
  for (bool over_tls : {false, true}) {
    const Latency& l = over_tls ? c.tls_latency : c.plain_latency;
    const Throughput& t = over_tls ? c.tls : c.plain;
    std::printf("  %-10s %10.1f %10.1f %12.2f %12.2f %12.2f\n", over_tls ? "TLS" : "plaintext",
                l.p50_us, l.p99_us, t.store_gbps, t.fetch_gbps, t.cpu_seconds_per_gb);
  }
  std::printf("  TLS / plaintext: p99 %.2fx, store %.2fx, fetch %.2fx\n",
              c.tls_latency.p99_us / c.plain_latency.p99_us, c.tls.store_gbps / c.plain.store_gbps,
              c.tls.fetch_gbps / c.plain.fetch_gbps);
}

int RunLinksBench(const LinksBenchOptions& o) {
  auto fail = [](const Status& s) {
    std::fprintf(stderr, "strata bench links: %s\n", s.ToString().c_str());
    return 1;
  };
  spdlog::set_level(spdlog::level::warn);  // the join logs would bury the table
  TempDir dir(o.dir);
  if (dir.path().empty()) return fail(Status::IoError("cannot create a directory under " + o.dir));
  const uint64_t page_count = std::max<uint64_t>(256, o.record_pages);

  Trips raw_all;  // every world's ping-pong blocks: the ping-pong line
  std::vector<FanoutRow> fanout;
  std::optional<Throughput> one_rank;
  std::optional<Throughput> many_ranks;
  uint32_t many = std::min(kThroughputRanks, o.ranks);
  for (uint32_t world : kWorldSizes) {
    if (world > o.ranks) break;
    Result<std::unique_ptr<RawFanoutRig>> ping_pong = RawFanoutRig::Start(1);
    if (!ping_pong.ok()) return fail(ping_pong.status());
    std::unique_ptr<RawFanoutRig> raw_rig;
    if (world > 1) {
      Result<std::unique_ptr<RawFanoutRig>> rig = RawFanoutRig::Start(world - 1);
      if (!rig.ok()) return fail(rig.status());
      raw_rig = std::move(*rig);
    }
    const std::string base = dir.path() + "/world" + std::to_string(world);
    Result<std::unique_ptr<BenchCluster>> cluster =
        BenchCluster::Start(world, base, page_count, o.tuning);
    if (!cluster.ok()) return fail(cluster.status().WithContext(std::to_string(world) + " ranks"));
    uint64_t next_id = 1;
    const uint64_t hits_before = (*cluster)->RankZeroLinkSpinHits();
    const uint64_t peer_hits_before = (*cluster)->PeerLinkSpinHits();
    // The ping-pong, the raw fan-out and the cluster's trips alternate in
    // kBlocks blocks, each after its own warm-up: a drift of the machine
    // (another tenant, a frequency change) reaches all three alike.
    Trips ping, raw, trips;
    uint64_t cluster_trips = 0;
    for (uint32_t b = 0; b < kBlocks; ++b) {
      const uint32_t count = o.round_trips / kBlocks + (b < o.round_trips % kBlocks ? 1 : 0);
      const uint32_t warmup = std::max(1U, o.warmup / kBlocks);
      Result<Trips> p = (*ping_pong)->Run(warmup, count);
      if (!p.ok()) return fail(p.status());
      links_bench::AppendTrips(ping, *p);
      if (raw_rig) {
        Result<Trips> r = raw_rig->Run(warmup, count);
        if (!r.ok()) return fail(r.status());
        links_bench::AppendTrips(raw, *r);
      }
      Result<Trips> c = ControlRoundTrips((*cluster)->transport(), warmup, count, next_id);
      if (!c.ok()) return fail(c.status());
      links_bench::AppendTrips(trips, *c);
      cluster_trips += warmup + count;
    }
    links_bench::AppendTrips(raw_all, ping);
    // Warm-up trips included: the hits are counted over all of them.
    const auto per_trip = [&](uint64_t hits) {
      return static_cast<double>(hits) / static_cast<double>(cluster_trips);
    };
    fanout.push_back({world, Summarize(trips), Summarize(ping),
                      raw_rig ? std::optional<Latency>(Summarize(raw)) : std::nullopt,
                      per_trip((*cluster)->RankZeroLinkSpinHits() - hits_before),
                      per_trip((*cluster)->PeerLinkSpinHits() - peer_hits_before)});
    if (world == 1 || world == many) {
      Result<Throughput> tp =
          StoreFetch((*cluster)->transport(), o.records, o.record_pages, next_id);
      if (!tp.ok()) return fail(tp.status());
      (world == 1 ? one_rank : many_ranks) = *tp;
      if (many == 1) many_ranks = *tp;
    }
    Status closed = (*cluster)->Close();
    if (!closed.ok()) return fail(closed);
  }

  std::optional<TlsComparison> tls;
  if (o.tls) {
    Result<TlsComparison> compared =
        CompareTls(o, dir.path() + "/tls", page_count, std::max(many, 2U));
    if (!compared.ok()) return fail(compared.status().WithContext("TLS comparison"));
    tls = *compared;
  }

  const Latency raw_latency = Summarize(raw_all);
  // Unknown (null in the JSON), not 0, unless 4 ranks were measured. Each
  // row's ratios are over the ping-pong interleaved with its own trips.
  std::optional<double> ratio_4;
  std::optional<double> raw_fanout_ratio_4;  // the 4-rank p99 over the raw 4-rank fan-out's
  for (const FanoutRow& r : fanout) {
    if (r.ranks != 4) continue;
    if (r.ping_pong.p99_us > 0) ratio_4 = r.latency.p99_us / r.ping_pong.p99_us;
    if (r.raw && r.raw->p99_us > 0) raw_fanout_ratio_4 = r.latency.p99_us / r.raw->p99_us;
  }
  const uint64_t record_bytes =
      uint64_t{o.record_pages} * 16 * 1024 + 8 * 1024;  // tiny: 16 KiB pages, 8 KiB row
  if (o.json) {
    nlohmann::json j;
    j["benchmark"] = "links";
    j["round_trips"] = o.round_trips;
    j["disk_thread_nice"] = o.tuning.disk_nice;
    j["idle_spin_us"] = o.tuning.idle_spin.count();
    j["link_idle_spin_us"] = o.tuning.link_idle_spin.count();
    j["peer_link_idle_spin_us"] =
        o.tuning.peer_link_idle_spin.value_or(o.tuning.link_idle_spin).count();
    j["spin_slots"] = SpinSlots();
    j["spin_yield"] = SpinYields();
    j["shared_link_thread"] = o.tuning.shared_link_thread;
    j["usable_cpus"] = UsableCpus();
    j["raw_ping_pong_us"] = {{"p50", raw_latency.p50_us}, {"p99", raw_latency.p99_us}};
    j["raw_ping_pong_switches_per_trip"] = raw_latency.switches_per_trip;
    j["raw_ping_pong_cpu_us_per_trip"] = raw_latency.cpu_us_per_trip;
    j["fanout"] = nlohmann::json::array();
    for (const FanoutRow& r : fanout) {
      nlohmann::json row = {
          {"ranks", r.ranks},
          {"p50_us", r.latency.p50_us},
          {"p99_us", r.latency.p99_us},
          {"p99_ratio_to_raw", r.latency.p99_us / r.ping_pong.p99_us},
          {"ping_pong", {{"p50_us", r.ping_pong.p50_us}, {"p99_us", r.ping_pong.p99_us}}},
          {"switches_per_trip", r.latency.switches_per_trip},
          {"cpu_us_per_trip", r.latency.cpu_us_per_trip},
          {"link_spin_hits_per_trip", r.link_spin_hits_per_trip},
          {"peer_link_spin_hits_per_trip", r.peer_link_spin_hits_per_trip}};
      if (r.raw) {
        row["raw_fanout"] = {{"p50_us", r.raw->p50_us},
                             {"p99_us", r.raw->p99_us},
                             {"switches_per_trip", r.raw->switches_per_trip},
                             {"cpu_us_per_trip", r.raw->cpu_us_per_trip}};
        row["p99_ratio_to_raw_fanout"] = r.latency.p99_us / r.raw->p99_us;
      }
      j["fanout"].push_back(std::move(row));
    }
    j["fanout_p99_ratio_4"] = ratio_4 ? nlohmann::json(*ratio_4) : nullptr;
    j["fanout_p99_ratio_goal"] = 2.0;
    j["raw_fanout_p99_ratio_4"] =
        raw_fanout_ratio_4 ? nlohmann::json(*raw_fanout_ratio_4) : nullptr;
    if (one_rank && many_ranks) {
      j["throughput"] = {{"record_bytes_per_rank", record_bytes},
                         {"records", o.records},
                         {"ranks_1",
                          {{"store_gbps", one_rank->store_gbps},
                           {"fetch_gbps", one_rank->fetch_gbps},
                           {"cpu_seconds_per_gb", one_rank->cpu_seconds_per_gb}}},
                         {"ranks_" + std::to_string(many),
                          {{"store_gbps", many_ranks->store_gbps},
                           {"fetch_gbps", many_ranks->fetch_gbps},
                           {"cpu_seconds_per_gb", many_ranks->cpu_seconds_per_gb}}},
                         {"store_ratio", many_ranks->store_gbps / one_rank->store_gbps},
                         {"fetch_ratio", many_ranks->fetch_gbps / one_rank->fetch_gbps}};
    }
    if (tls) j["tls"] = TlsJson(*tls);
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf(
      "control-only job round trip (unlink of a missing file), loopback, %u trips, disk threads "
      "at nice %d, idle spin %lld us (links %lld us, %u spin slots), rank zero's links on %s\n",
      o.round_trips, o.tuning.disk_nice, static_cast<long long>(o.tuning.idle_spin.count()),
      static_cast<long long>(o.tuning.link_idle_spin.count()), SpinSlots(),
      o.tuning.shared_link_thread ? "one shared I/O thread" : "a thread each");
  std::printf("  %-22s %10s %10s %14s %16s %15s\n", "", "p50 us", "p99 us", "p99 / raw p99",
              "switches / trip", "CPU us / trip");
  // Each world's lines are over the ping-pong interleaved with its trips.
  auto line = [&](const std::string& name, const Latency& l, const Latency& ping_pong) {
    std::printf("  %-22s %10.1f %10.1f %14.2f %16.1f %15.1f\n", name.c_str(), l.p50_us, l.p99_us,
                l.p99_us / ping_pong.p99_us, l.switches_per_trip, l.cpu_us_per_trip);
  };
  line("raw TCP ping-pong, all", raw_latency, raw_latency);
  for (const FanoutRow& r : fanout) {
    const std::string ranks = std::to_string(r.ranks) + " ranks";
    line("  ping-pong beside " + std::to_string(r.ranks), r.ping_pong, r.ping_pong);
    if (r.raw) line("raw fan-out, " + ranks, *r.raw, r.ping_pong);
    line(ranks, r.latency, r.ping_pong);
  }
  if (ratio_4) {
    std::printf("  fanout_p99_ratio_4 = %.2f (goal <= 2); over the raw 4-rank fan-out: %.2f\n",
                *ratio_4, raw_fanout_ratio_4.value_or(0));
  } else {
    std::printf("  fanout_p99_ratio_4 = n/a (fewer than 4 ranks measured)\n");
  }
  if (one_rank && many_ranks) {
    std::printf("\nrecord store / fetch, %u records of %.2f MiB per rank, %u in flight\n",
                o.records, static_cast<double>(record_bytes) / (1 << 20),
                links_bench::kThroughputWindow);
    std::printf("  %-10s %18s %18s %12s\n", "ranks", "store GB/s (all)", "fetch GB/s (all)",
                "CPU s / GB");
    std::printf("  %-10u %18.2f %18.2f %12.2f\n", 1u, one_rank->store_gbps, one_rank->fetch_gbps,
                one_rank->cpu_seconds_per_gb);
    std::printf("  %-10u %18.2f %18.2f %12.2f\n", many, many_ranks->store_gbps,
                many_ranks->fetch_gbps, many_ranks->cpu_seconds_per_gb);
    std::printf("  %u ranks / 1 rank: store %.2fx, fetch %.2fx\n", many,
                many_ranks->store_gbps / one_rank->store_gbps,
                many_ranks->fetch_gbps / one_rank->fetch_gbps);
  }
  if (tls) PrintTls(*tls);
  return 0;
}

}  // namespace

void AddLinksBench(CLI::App& bench) {
  auto o = std::make_shared<LinksBenchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "links",
      "Control-only job round trips through rank zero's sharded transport with 1, 2, 4 and 8 "
      "ranks on loopback, beside a raw TCP ping-pong; record store/fetch across 4 ranks vs 1");
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the table");
  cmd->add_option("--ranks", o->ranks, "Largest world size measured (1, 2, 4 or 8)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 8u));
  cmd->add_option("--round-trips", o->round_trips, "Measured round trips per world size")
      ->capture_default_str()
      ->check(CLI::Range(10u, 1'000'000u));
  cmd->add_option("--records", o->records, "Records stored and fetched per throughput run")
      ->capture_default_str()
      ->check(CLI::Range(1u, 4096u));
  cmd->add_option("--record-pages", o->record_pages, "Pages per record (16 KiB each)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1024u));
  cmd->add_option("--disk-nice", o->tuning.disk_nice,
                  "Nice value of every rank's disk thread (SCHED_BATCH); 10 in production")
      ->capture_default_str()
      ->check(CLI::Range(0, 19));
  cmd->add_option("--idle-spin-us", o->idle_spin_us,
                  "How long every rank's idle disk thread, and rank zero waiting for a job, check "
                  "for work before sleeping; the default is the production one (100 with 8 or "
                  "more usable CPUs, else 0)")
      ->capture_default_str()
      ->check(CLI::Range(0u, kIdleSpinMaxUs));
  cmd->add_option("--link-idle-spin-us", o->link_idle_spin_us,
                  "How long every record link's idle I/O thread, at rank zero and at each peer, "
                  "polls its socket before sleeping; 0 (the production default) sleeps at once")
      ->capture_default_str()
      ->check(CLI::Range(0u, kIdleSpinMaxUs));
  cmd->add_option("--peer-link-idle-spin-us", o->peer_link_idle_spin_us,
                  "The same for the peers' ends only (rank zero's keep --link-idle-spin-us); "
                  "unset: --link-idle-spin-us")
      ->check(CLI::Range(0u, kIdleSpinMaxUs));
  cmd->add_option("--spin-slots", o->spin_slots,
                  "How many threads of the process may spin at once; 0: one per 4 usable CPUs")
      ->capture_default_str()
      ->check(CLI::Range(0u, 1024u));
  cmd->add_flag("--spin-yield", o->spin_yield,
                "Spinning threads yield their CPU at each clock read (sched_yield), so a woken "
                "thread need not wait for a spinner's time slice; off by default");
  cmd->add_flag("--shared-link-thread", o->tuning.shared_link_thread,
                "Rank zero's record links share one I/O thread (so a job's answers wake one "
                "thread, not one per peer); off by default ([cluster] shared_link_thread)");
  cmd->add_flag("--tls", o->tls,
                "Also measure the round trips and store/fetch at 4 ranks with plaintext and with "
                "mutual TLS 1.3 links, side by side");
  cmd->add_option("--dir", o->dir, "Where the ranks' record directories go (needs O_DIRECT)")
      ->capture_default_str();
  cmd->callback([o] {
    o->tuning.idle_spin = std::chrono::microseconds(o->idle_spin_us);
    o->tuning.link_idle_spin = std::chrono::microseconds(o->link_idle_spin_us);
    if (o->peer_link_idle_spin_us) {
      o->tuning.peer_link_idle_spin = std::chrono::microseconds(*o->peer_link_idle_spin_us);
    }
    if (o->spin_slots > 0) SetSpinSlots(o->spin_slots);
    SetSpinYield(o->spin_yield);
    int rc = RunLinksBench(*o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace strata
