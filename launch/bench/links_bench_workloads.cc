#include "launch/bench/links_bench_workloads.h"

#include <stdlib.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <cmath>
#include <filesystem>
#include <thread>

#include "coordinator/rendezvous/rendezvous_join.h"
#include "launch/presets.h"

namespace strata::links_bench {
namespace {

constexpr size_t kPingBytes = 128;  // about a Job frame

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

}  // namespace

Latency Summarize(const Trips& t) {
  return {Percentile(t.us, 50), Percentile(t.us, 99),
          t.us.empty() ? 0.0 : static_cast<double>(t.switches) / static_cast<double>(t.us.size()),
          t.us.empty() ? 0.0 : t.cpu_seconds * 1e6 / static_cast<double>(t.us.size())};
}

TempDir::TempDir(const std::string& base) {
  std::string pattern = base + "/strata-bench-links-XXXXXX";
  if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

BenchCluster::BenchCluster() : rendezvous_(OsNonceSource()) {}

Result<std::unique_ptr<BenchCluster>> BenchCluster::Start(
    uint32_t world, const std::string& base, uint64_t page_count, const ClusterTuning& tuning,
    const std::shared_ptr<const wire::TlsContext>& tls) {
  std::unique_ptr<BenchCluster> c(new BenchCluster());
  STRATA_ASSIGN_OR_RETURN(CacheGeometry g, PresetGeometry("tiny", 1, page_count, 4));
  const NamespaceIdentity identity = ComputeNamespaceIdentity("bench/links", StateMode::kOrdinary);
  for (uint32_t r = 0; r < world; ++r) c->planes_.push_back(std::make_unique<HostPlanes>(g));
  LocalDiskOptions disk;
  disk.host_headroom_bytes = uint64_t{256} << 20;
  disk.disk_thread.nice = tuning.disk_nice;
  disk.disk_thread.idle_spin = tuning.idle_spin;
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
    o.link.idle_spin = tuning.peer_link_idle_spin.value_or(tuning.link_idle_spin);
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> t, MakeHostTransfers(*c->planes_[r]));
    STRATA_ASSIGN_OR_RETURN(
        std::unique_ptr<RankAgent> agent,
        RankAgent::Start(o, JoinThroughRendezvous(c->rendezvous_, RankId(r), world), std::move(t)));
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
  o.sharded.idle_spin = tuning.idle_spin;
  o.link.tls = tls;
  o.link.idle_spin = tuning.link_idle_spin;
  o.shared_link_thread = tuning.shared_link_thread;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> t, MakeHostTransfers(*c->planes_[0]));
  STRATA_ASSIGN_OR_RETURN(c->coordinator_, Coordinator::Start(o, c->rendezvous_, std::move(t)));
  return c;
}

uint64_t BenchCluster::RankZeroLinkSpinHits() const {
  uint64_t hits = 0;
  for (const PeerLinkReport& r : coordinator_->PeerLinks()) hits += r.link.idle_spin_hits;
  if (const auto shared = coordinator_->SharedLinkThreadStats()) hits += shared->idle_spin_hits;
  return hits;
}

uint64_t BenchCluster::PeerLinkSpinHits() const {
  uint64_t hits = 0;
  for (const std::unique_ptr<RankAgent>& a : agents_) hits += a->stats().link_idle_spin_hits;
  return hits;
}

Status BenchCluster::Close() {
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
  double cpu_at_start = 0;
  for (uint32_t i = 0; i < warmup + count; ++i) {
    if (i == warmup) {
      us.clear();
      switches_at_start = ContextSwitches();
      cpu_at_start = CpuSeconds();
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
  trips.cpu_seconds = CpuSeconds() - cpu_at_start;
  return trips;
}

// `peers` echo threads, each on its own loopback TCP connection with
// TCP_NODELAY; a trip writes kPingBytes to every peer in rank order, then
// reads every answer.
struct RawFanoutRig::State {
  asio::io_context io;
  std::vector<asio::ip::tcp::socket> clients;
  std::vector<std::thread> echoes;
  ~State() {  // the echo threads end when their client closes
    for (auto& c : clients) {
      std::error_code ignored;
      c.close(ignored);
    }
    for (auto& t : echoes) t.join();
  }
};

Result<std::unique_ptr<RawFanoutRig>> RawFanoutRig::Start(uint32_t peers) {
  std::unique_ptr<RawFanoutRig> rig(new RawFanoutRig());
  rig->state_ = std::make_unique<State>();
  State& st = *rig->state_;
  try {
    asio::ip::tcp::acceptor acceptor(st.io, {asio::ip::make_address("127.0.0.1"), 0});
    for (uint32_t p = 0; p < peers; ++p) {
      st.clients.emplace_back(st.io).connect(acceptor.local_endpoint());
      st.clients.back().set_option(asio::ip::tcp::no_delay(true));
      st.echoes.emplace_back([s = acceptor.accept()]() mutable {
        s.set_option(asio::ip::tcp::no_delay(true));
        std::array<uint8_t, kPingBytes> buf{};
        std::error_code ec;
        while (!ec) {
          asio::read(s, asio::buffer(buf), ec);
          if (!ec) asio::write(s, asio::buffer(buf), ec);
        }
      });
    }
  } catch (const std::exception& e) {
    return Status::IoError(std::string("raw TCP fan-out: ") + e.what());
  }
  return rig;
}

RawFanoutRig::~RawFanoutRig() = default;

Result<Trips> RawFanoutRig::Run(uint32_t warmup, uint32_t count) {
  try {
    std::array<uint8_t, kPingBytes> buf{};
    Trips trips;
    uint64_t switches_at_start = 0;
    double cpu_at_start = 0;
    for (uint32_t i = 0; i < warmup + count; ++i) {
      if (i == warmup) {
        trips.us.clear();
        switches_at_start = ContextSwitches();
        cpu_at_start = CpuSeconds();
      }
      const Clock::time_point start = Clock::now();
      for (auto& c : state_->clients) asio::write(c, asio::buffer(buf));
      for (auto& c : state_->clients) asio::read(c, asio::buffer(buf));
      trips.us.push_back(Seconds(start, Clock::now()) * 1e6);
    }
    trips.switches = ContextSwitches() - switches_at_start;
    trips.cpu_seconds = CpuSeconds() - cpu_at_start;
    return trips;
  } catch (const std::exception& e) {
    return Status::IoError(std::string("raw TCP fan-out: ") + e.what());
  }
}

void AppendTrips(Trips& into, const Trips& block) {
  into.us.insert(into.us.end(), block.us.begin(), block.us.end());
  into.switches += block.switches;
  into.cpu_seconds += block.cpu_seconds;
}

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

}  // namespace strata::links_bench
