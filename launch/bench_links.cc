// `strata bench links`: what running ranks on separate hosts costs, on
// loopback with every rank a thread of this process (its own planes, record
// directory, disk thread and record link, exactly as across hosts).
//  1. The round trip of a control-only job (an unlink of a missing file)
//     through rank zero's ShardedTransport with 1, 2, 4 and 8 ranks, next to
//     a raw TCP ping-pong over loopback measured in the same run; the goal is
//     a 4-rank p99 within twice the raw p99 (fanout_p99_ratio_4).
//     Beside each: the context switches of the whole process per round trip,
//     which is what the fan-out costs over the ping-pong on a loaded machine
//     (every wake-up of a thread is a chance to wait for a core).
//  2. Store and fetch throughput of whole records across 4 ranks vs 1 rank.
//  3. With --tls: 1 and 2 at 4 ranks again, plaintext and over mutual TLS 1.3
//     (a throwaway CA), side by side with their ratios.
#include <stdlib.h>
#include <sys/resource.h>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "coordinator/coordinator.h"
#include "coordinator/in_process_rendezvous.h"
#include "coordinator/rendezvous_join.h"
#include "launch/bench.h"
#include "launch/presets.h"
#include "launch/throwaway_certs.h"
#include "rank_agent/rank_agent.h"
#include "store/host_planes.h"

namespace strata {
namespace {

using Clock = std::chrono::steady_clock;
// One job never takes longer on a healthy machine; a bound, not a measurement.
constexpr auto kJobWait = std::chrono::seconds(30);
constexpr size_t kPingBytes = 128;  // about a Job frame
constexpr uint32_t kWorldSizes[] = {1, 2, 4, 8};
constexpr uint32_t kThroughputRanks = 4;
constexpr uint32_t kThroughputWindow = 4;  // records in flight

struct LinksBenchOptions {
  bool json = false;
  uint32_t ranks = 8;  // the largest world size measured
  uint32_t round_trips = 2000;
  uint32_t warmup = 200;
  uint32_t records = 48;
  uint32_t record_pages = 64;
  std::string dir = "/var/tmp";
  int disk_nice = DiskThreadOptions{}.nice;  // every rank's disk thread
  bool tls = false;  // also compare plaintext and mutual TLS links (section 3)
};

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Context switches of every thread of this process so far.
uint64_t ContextSwitches() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<uint64_t>(u.ru_nvcsw + u.ru_nivcsw);
}

// Nearest-rank percentile of `values` (0 when empty).
double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

struct Latency {
  double p50_us = 0;
  double p99_us = 0;
  double switches_per_trip = 0;  // context switches of the process per round trip
};

// Round trips in microseconds, and the process's context switches over them.
struct Trips {
  std::vector<double> us;
  uint64_t switches = 0;
};

Latency Summarize(const Trips& t) {
  return {Percentile(t.us, 50), Percentile(t.us, 99),
          t.us.empty() ? 0.0 : static_cast<double>(t.switches) / static_cast<double>(t.us.size())};
}

// A scratch directory removed at the end.
class TempDir {
 public:
  explicit TempDir(const std::string& base) {
    std::string pattern = base + "/strata-bench-links-XXXXXX";
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// `world` ranks in this process: rank zero's coordinator and a RankAgent per
// peer, joined over loopback.
class BenchCluster {
 public:
  static Result<std::unique_ptr<BenchCluster>> Start(
      uint32_t world, const std::string& base, uint64_t page_count, int disk_nice,
      const std::shared_ptr<const wire::TlsContext>& tls = nullptr) {
    std::unique_ptr<BenchCluster> c(new BenchCluster());
    STRATA_ASSIGN_OR_RETURN(CacheGeometry g, PresetGeometry("tiny", 1, page_count, 4));
    const NamespaceIdentity identity =
        ComputeNamespaceIdentity("bench/links", StateMode::kOrdinary);
    for (uint32_t r = 0; r < world; ++r) c->planes_.push_back(std::make_unique<HostPlanes>(g));
    LocalDiskOptions disk;
    disk.host_headroom_bytes = uint64_t{256} << 20;
    disk.disk_thread.nice = disk_nice;
    for (uint32_t r = 1; r < world; ++r) {
      RankAgentOptions o;
      o.rank = RankId(r);
      o.world_size = world;
      o.geometry = g;
      o.identity = identity;
      o.disk = disk;
      o.disk.base_dir = base + "/rank" + std::to_string(r);
      o.disk_limit_bytes = uint64_t{1} << 40;
      o.link.tls = tls;
      STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> t, MakeHostTransfers(*c->planes_[r]));
      STRATA_ASSIGN_OR_RETURN(
          std::unique_ptr<RankAgent> agent,
          RankAgent::Start(o, JoinThroughRendezvous(c->rendezvous_, RankId(r), world),
                           std::move(t)));
      c->agents_.push_back(std::move(agent));
    }
    CoordinatorOptions o;
    o.world_size = world;
    o.geometry = g;
    o.identity = identity;
    o.disk = disk;
    o.disk.base_dir = base + "/rank0";
    o.disk_limit_bytes = uint64_t{1} << 40;
    o.listen = {"127.0.0.1", 0};
    o.link.tls = tls;
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> t, MakeHostTransfers(*c->planes_[0]));
    STRATA_ASSIGN_OR_RETURN(c->coordinator_, Coordinator::Start(o, c->rendezvous_, std::move(t)));
    return c;
  }
  ~BenchCluster() { (void)Close(); }

  ShardedTransport& transport() { return coordinator_->transport(); }

  Status Close() {
    if (!coordinator_) return Status::Ok();
    Status s = coordinator_->Close();
    for (auto& a : agents_) {
      std::optional<Status> ended = a->Wait(Clock::now() + kJobWait);
      if (s.ok() && (!ended || !ended->ok())) {
        s = ended ? *ended : Status::Aborted("a rank agent did not end");
      }
    }
    coordinator_.reset();
    agents_.clear();
    return s;
  }

 private:
  BenchCluster() : rendezvous_(OsNonceSource()) {}
  InProcessRendezvous rendezvous_;
  std::vector<std::unique_ptr<HostPlanes>> planes_;
  std::vector<std::unique_ptr<RankAgent>> agents_;
  std::unique_ptr<Coordinator> coordinator_;
};

// Submits `job` (kBusy: retried after progress) and waits for its completion.
Status RunOne(ShardedTransport& t, const RecordJob& job, std::vector<RecordJobDone>& done) {
  for (;;) {
    Status s = t.Submit(job);
    if (s.ok()) break;
    if (s.code() != StatusCode::kBusy) return s;
    if (!t.WaitForCompletion(kJobWait)) return Status::Aborted("no progress within 30 s");
    t.Poll(done);
  }
  return Status::Ok();
}

// `count` round trips of unlinks of a missing file after `warmup` unmeasured.
Result<Trips> ControlRoundTrips(ShardedTransport& t, uint32_t warmup, uint32_t count,
                                uint64_t& next_id) {
  RecordJob job;
  job.kind = RecordJobKind::kUnlink;
  job.key.consumed = 64;
  job.key.digest.fill(0xee);  // never stored
  Trips trips;
  std::vector<double>& us = trips.us;
  std::vector<RecordJobDone> done;
  uint64_t switches_at_start = 0;
  for (uint32_t i = 0; i < warmup + count; ++i) {
    if (i == warmup) {
      us.clear();
      switches_at_start = ContextSwitches();
    }
    job.id = JobId(Coordinator::kDirectJobIdBase + next_id++);
    const Clock::time_point start = Clock::now();
    STRATA_RETURN_IF_ERROR(t.Submit(job));
    bool finished = false;
    while (!finished) {
      if (!t.WaitForCompletion(kJobWait)) return Status::Aborted("an unlink took over 30 s");
      done.clear();
      t.Poll(done);
      for (const RecordJobDone& d : done) {
        STRATA_RETURN_IF_ERROR(d.status);
        finished |= d.id == job.id;
      }
    }
    us.push_back(Seconds(start, Clock::now()) * 1e6);
  }
  trips.switches = ContextSwitches() - switches_at_start;
  return trips;
}

// A plain TCP ping-pong over loopback with TCP_NODELAY between two threads of
// this process: `count` round trips after `warmup` unmeasured.
Result<Trips> RawPingPong(uint32_t warmup, uint32_t count) {
  try {
    asio::io_context io;
    asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    std::thread echo([&acceptor] {
      asio::ip::tcp::socket s = acceptor.accept();
      s.set_option(asio::ip::tcp::no_delay(true));
      std::array<uint8_t, kPingBytes> buf{};
      std::error_code ec;
      while (!ec) {
        asio::read(s, asio::buffer(buf), ec);
        if (!ec) asio::write(s, asio::buffer(buf), ec);
      }
    });
    asio::ip::tcp::socket client(io);
    client.connect(acceptor.local_endpoint());
    client.set_option(asio::ip::tcp::no_delay(true));
    std::array<uint8_t, kPingBytes> buf{};
    Trips trips;
    uint64_t switches_at_start = 0;
    for (uint32_t i = 0; i < warmup + count; ++i) {
      if (i == warmup) {
        trips.us.clear();
        switches_at_start = ContextSwitches();
      }
      const Clock::time_point start = Clock::now();
      asio::write(client, asio::buffer(buf));
      asio::read(client, asio::buffer(buf));
      trips.us.push_back(Seconds(start, Clock::now()) * 1e6);
    }
    trips.switches = ContextSwitches() - switches_at_start;
    client.close();
    echo.join();
    return trips;
  } catch (const std::exception& e) {
    return Status::IoError(std::string("raw ping-pong: ") + e.what());
  }
}

struct Throughput {
  double store_gbps = 0;  // payload bytes of every rank per second
  double fetch_gbps = 0;
  double cpu_seconds_per_gb = 0;
};

// Stores `records` records of `pages` pages (+ row) on every rank, fetches
// them back, unlinks them.
Result<Throughput> StoreFetch(ShardedTransport& t, uint32_t records, uint32_t pages,
                              uint64_t& next_id) {
  std::vector<RecordJob> stores;
  for (uint32_t i = 0; i < records; ++i) {
    RecordJob j;
    j.kind = RecordJobKind::kStore;
    j.key.consumed = uint64_t{pages} * 64;
    j.key.digest.fill(static_cast<uint8_t>(i));
    j.key.digest[15] = static_cast<uint8_t>(i >> 8);
    j.bucket = j.key.digest;
    j.tail_pages = pages;
    for (uint32_t p = 0; p < pages; ++p) j.page_ids.emplace_back(p);
    j.row_slot = StateSlot(0);
    stores.push_back(std::move(j));
  }
  auto run = [&](RecordJobKind kind, uint64_t& bytes) -> Result<double> {
    const Clock::time_point start = Clock::now();
    std::vector<RecordJobDone> done;
    size_t submitted = 0;
    size_t finished = 0;
    while (finished < stores.size()) {
      while (submitted < stores.size() && submitted - finished < kThroughputWindow) {
        RecordJob j = stores[submitted];
        j.id = JobId(Coordinator::kDirectJobIdBase + next_id++);
        j.kind = kind;
        if (kind == RecordJobKind::kFetch) j.row_slot = StateSlot(1);
        if (kind == RecordJobKind::kUnlink) {
          j.page_ids.clear();
          j.row_slot.reset();
        }
        STRATA_RETURN_IF_ERROR(RunOne(t, j, done));
        ++submitted;
      }
      if (done.empty() && !t.WaitForCompletion(kJobWait)) {
        return Status::Aborted("no record job finished within 30 s");
      }
      t.Poll(done);
      for (const RecordJobDone& d : done) {
        STRATA_RETURN_IF_ERROR(d.status);
        bytes += d.bytes;
      }
      finished += done.size();
      done.clear();
    }
    return Seconds(start, Clock::now());
  };
  Throughput out;
  const double cpu0 = CpuSeconds();
  uint64_t stored = 0;
  uint64_t fetched = 0;
  uint64_t unlinked = 0;
  STRATA_ASSIGN_OR_RETURN(double store_s, run(RecordJobKind::kStore, stored));
  STRATA_ASSIGN_OR_RETURN(double fetch_s, run(RecordJobKind::kFetch, fetched));
  const double cpu = CpuSeconds() - cpu0;
  STRATA_ASSIGN_OR_RETURN(double unlink_s, run(RecordJobKind::kUnlink, unlinked));
  (void)unlink_s;
  out.store_gbps = static_cast<double>(stored) / store_s / 1e9;
  out.fetch_gbps = static_cast<double>(fetched) / fetch_s / 1e9;
  out.cpu_seconds_per_gb = cpu / (static_cast<double>(stored + fetched) / 1e9);
  return out;
}

struct FanoutRow {
  uint32_t ranks = 0;
  Latency latency;
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
        BenchCluster::Start(world, dir, page_count, o.disk_nice, over_tls ? tls : nullptr));
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

  Result<Trips> raw = RawPingPong(o.warmup, o.round_trips);
  if (!raw.ok()) return fail(raw.status());
  const Latency raw_latency = Summarize(*raw);

  std::vector<FanoutRow> fanout;
  std::optional<Throughput> one_rank;
  std::optional<Throughput> many_ranks;
  uint32_t many = std::min(kThroughputRanks, o.ranks);
  for (uint32_t world : kWorldSizes) {
    if (world > o.ranks) break;
    const std::string base = dir.path() + "/world" + std::to_string(world);
    Result<std::unique_ptr<BenchCluster>> cluster =
        BenchCluster::Start(world, base, page_count, o.disk_nice);
    if (!cluster.ok()) return fail(cluster.status().WithContext(std::to_string(world) + " ranks"));
    uint64_t next_id = 1;
    Result<Trips> trips =
        ControlRoundTrips((*cluster)->transport(), o.warmup, o.round_trips, next_id);
    if (!trips.ok()) return fail(trips.status());
    fanout.push_back({world, Summarize(*trips)});
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

  double ratio_4 = 0;
  for (const FanoutRow& r : fanout) {
    if (r.ranks == 4 && raw_latency.p99_us > 0) ratio_4 = r.latency.p99_us / raw_latency.p99_us;
  }
  const uint64_t record_bytes =
      uint64_t{o.record_pages} * 16 * 1024 + 8 * 1024;  // tiny: 16 KiB pages, 8 KiB row
  if (o.json) {
    nlohmann::json j;
    j["benchmark"] = "links";
    j["round_trips"] = o.round_trips;
    j["disk_thread_nice"] = o.disk_nice;
    j["raw_ping_pong_us"] = {{"p50", raw_latency.p50_us}, {"p99", raw_latency.p99_us}};
    j["raw_ping_pong_switches_per_trip"] = raw_latency.switches_per_trip;
    j["fanout"] = nlohmann::json::array();
    for (const FanoutRow& r : fanout) {
      j["fanout"].push_back({{"ranks", r.ranks},
                             {"p50_us", r.latency.p50_us},
                             {"p99_us", r.latency.p99_us},
                             {"p99_ratio_to_raw", r.latency.p99_us / raw_latency.p99_us},
                             {"switches_per_trip", r.latency.switches_per_trip}});
    }
    j["fanout_p99_ratio_4"] = ratio_4;
    j["fanout_p99_ratio_goal"] = 2.0;
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
      "at nice %d\n",
      o.round_trips, o.disk_nice);
  std::printf("  %-22s %10s %10s %14s %16s\n", "", "p50 us", "p99 us", "p99 / raw p99",
              "switches / trip");
  std::printf("  %-22s %10.1f %10.1f %14.2f %16.1f\n", "raw TCP ping-pong", raw_latency.p50_us,
              raw_latency.p99_us, 1.0, raw_latency.switches_per_trip);
  for (const FanoutRow& r : fanout) {
    std::printf("  %-22s %10.1f %10.1f %14.2f %16.1f\n",
                (std::to_string(r.ranks) + " ranks").c_str(), r.latency.p50_us, r.latency.p99_us,
                r.latency.p99_us / raw_latency.p99_us, r.latency.switches_per_trip);
  }
  std::printf("  fanout_p99_ratio_4 = %.2f (goal <= 2)\n", ratio_4);
  if (one_rank && many_ranks) {
    std::printf("\nrecord store / fetch, %u records of %.2f MiB per rank, %u in flight\n",
                o.records, static_cast<double>(record_bytes) / (1 << 20), kThroughputWindow);
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
  cmd->add_option("--disk-nice", o->disk_nice,
                  "Nice value of every rank's disk thread (SCHED_BATCH); 10 in production")
      ->capture_default_str()
      ->check(CLI::Range(0, 19));
  cmd->add_flag("--tls", o->tls,
                "Also measure the round trips and store/fetch at 4 ranks with plaintext and with "
                "mutual TLS 1.3 links, side by side");
  cmd->add_option("--dir", o->dir, "Where the ranks' record directories go (needs O_DIRECT)")
      ->capture_default_str();
  cmd->callback([o] {
    int rc = RunLinksBench(*o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace strata
