// `strata bench attach`: what a runtime pays for using `strata rank` through
// the attach channel instead of linking the library (docs/embedding.md).
// A server process — forked first, before any thread: a MemoryStore over the
// runtime's memfd planes (ImportedPlanes) behind an AttachServer, as
// `strata rank --attach-socket` runs it — and this process as the runtime.
// The baseline is the same store over the same geometry in this process,
// measured in the same run:
//  1. per-call latency, p50/p99: Lookup (request -> its LookupResult) and
//     Store of a held checkpoint (request -> its StoreAnswer) over the
//     channel, next to the same HostStore calls in-process;
//  2. restore GB/s of whole chains (Fetch -> kFetched) into the runtime's
//     planes over the channel, next to the same restores in-process
//     (busy-polled). Goal: restore_ratio >= 0.95.
// Every restored byte is checked on both sides.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "attach/attach_server.h"
#include "attach/client/attach_client.h"
#include "attach/client/memfd_region.h"
#include "launch/bench/bench.h"
#include "launch/bench/gpu_bench_report.h"
#include "launch/presets.h"
#include "store/record/record_layout.h"
#include "store/tier/memory_store.h"
#include "store/transfer/host_planes.h"

namespace strata {
namespace {

using Clock = std::chrono::steady_clock;
constexpr char kModel[] = "bench/attach";
constexpr auto kBound = std::chrono::seconds(60);
constexpr double kGoalRatio = 0.95;

struct AttachBenchOptions {
  bool json = false;
  std::string preset = "qwen-like";
  uint32_t chains = 4;
  uint32_t chain_pages = 64;
  uint32_t calls = 2000;
  uint32_t repetitions = 5;
  std::string dir = "/tmp";
};

CacheGeometry GeometryOf(const AttachBenchOptions& o) {
  // Sources at ids [0, chains * pages), restores into the next as many.
  return *PresetGeometry(o.preset, 1, uint64_t{2} * o.chains * o.chain_pages, o.chains * 2);
}

double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

uint8_t Byte(uint64_t chain, size_t plane, uint64_t page, uint64_t offset) {
  return static_cast<uint8_t>((chain * 131 + plane * 31 + page * 7 + offset * 13) ^ (offset >> 8));
}

std::vector<Token> TokensOf(const AttachBenchOptions& o, const CacheGeometry& g, uint64_t chain) {
  std::vector<Token> t(uint64_t{o.chain_pages} * g.page_tokens);
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<Token>(chain * 10'000'000 + i);
  return t;
}

PublishedCheckpoint CheckpointOf(const AttachBenchOptions& o, const CacheGeometry& g,
                                 uint64_t chain) {
  const std::vector<Token> tokens = TokensOf(o, g, chain);
  const PrefixHistory history(tokens);
  PublishedCheckpoint cp;
  cp.checkpoint_id = chain + 1;
  cp.key = history.key_at(tokens.size());
  cp.bucket = history.bucket_digest(tokens.size());
  for (uint64_t p = 0; p < o.chain_pages; ++p) {
    cp.chain.emplace_back(static_cast<uint32_t>(chain * o.chain_pages + p));
  }
  cp.tail_pages = o.chain_pages;
  cp.row_slot = StateSlot(static_cast<uint32_t>(chain));
  return cp;
}

InboundTicket TicketOf(const AttachBenchOptions& o, uint64_t chain, uint64_t n) {
  InboundTicket t;
  t.ticket = JobId(1000 + n);
  const uint64_t first = (uint64_t{o.chains} + chain) * o.chain_pages;
  for (uint64_t p = 0; p < o.chain_pages; ++p) t.page_ids.emplace_back(first + p);
  t.row_slot = StateSlot(static_cast<uint32_t>(o.chains + chain));
  return t;
}

// Plane `plane` (page planes in order, then the row) of a geometry's one rank
// as bytes the runtime addresses: (base, unit bytes).
using PlaneAt = std::function<std::pair<uint8_t*, uint64_t>(size_t plane)>;

size_t PlaneCount(const CacheGeometry& g) { return g.ranks[0].page_planes.size() + 1; }

void FillSources(const AttachBenchOptions& o, const CacheGeometry& g, const PlaneAt& at) {
  for (size_t p = 0; p < PlaneCount(g); ++p) {
    auto [base, unit] = at(p);
    const bool row = p + 1 == PlaneCount(g);
    for (uint64_t c = 0; c < o.chains; ++c) {
      for (uint64_t i = 0; i < (row ? 1 : o.chain_pages); ++i) {
        uint8_t* u = base + (row ? c : c * o.chain_pages + i) * unit;
        for (uint64_t b = 0; b < unit; ++b) u[b] = Byte(c, p, i, b);
      }
    }
  }
}

// Bytes of chain c's restore (at TicketOf's ids) that differ from its source.
uint64_t Mismatches(const AttachBenchOptions& o, const CacheGeometry& g, const PlaneAt& at,
                    uint64_t c) {
  const InboundTicket t = TicketOf(o, c, 0);
  uint64_t bad = 0;
  for (size_t p = 0; p < PlaneCount(g); ++p) {
    auto [base, unit] = at(p);
    const bool row = p + 1 == PlaneCount(g);
    for (uint64_t i = 0; i < (row ? 1 : o.chain_pages); ++i) {
      const uint8_t* u = base + (row ? t.row_slot.value : t.page_ids[i].value) * unit;
      for (uint64_t b = 0; b < unit; ++b) bad += u[b] != Byte(c, p, i, b) ? 1 : 0;
    }
  }
  return bad;
}

std::unique_ptr<MemoryStore> MakeStore(const AttachBenchOptions& o, const CacheGeometry& g,
                                       std::unique_ptr<Transfers> transfers) {
  auto pool = SlabPool::Create(RecordLayout(g).page_record_bytes(),
                               uint64_t{o.chains} * (o.chain_pages + 8), 0);
  if (!pool.ok()) return nullptr;
  return std::make_unique<MemoryStore>(g, std::shared_ptr<SlabPool>(std::move(*pool)),
                                       std::move(transfers));
}

volatile std::sig_atomic_t g_stop = 0;

// The server process: serves until SIGTERM. Exit codes name the failed step.
int ServeChannel(const AttachBenchOptions& o, const std::string& socket, int ready_fd) {
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  // The runtime's stdout carries the result (one JSON object with --json).
  spdlog::set_level(spdlog::level::warn);
  const CacheGeometry g = GeometryOf(o);
  auto planes = attach::ImportedPlanes::Reserve(g);
  if (!planes.ok()) return 10;
  auto transfers = MakeHostTransfers(**planes);
  if (!transfers.ok()) return 11;
  std::unique_ptr<MemoryStore> store = MakeStore(o, g, std::move(*transfers));
  if (store == nullptr) return 12;
  attach::AttachServerOptions options;
  options.socket_path = socket;
  options.expected = {.model_identity = kModel, .geometry = g};
  auto server =
      attach::AttachServer::Listen(options, {.store = store.get(), .planes = planes->get()});
  if (!server.ok()) return 13;
  if (::write(ready_fd, "r", 1) != 1) return 14;
  const auto start = Clock::now();
  while (g_stop == 0) {
    const auto now_ms = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
    (*server)->Step(now_ms, std::chrono::milliseconds(20));
  }
  return store->Close().ok() ? 0 : 15;
}

struct Side {
  std::vector<double> lookup_us;
  std::vector<double> store_us;
  uint64_t restored_bytes = 0;
  double restore_seconds = 0;
  uint64_t mismatches = 0;
};

nlohmann::json LatencyJson(const std::vector<double>& us) {
  return {{"p50_us", Percentile(us, 50)}, {"p99_us", Percentile(us, 99)}};
}

// The runtime's side over the channel.
Result<Side> MeasureChannel(const AttachBenchOptions& o, const std::string& socket) {
  const CacheGeometry g = GeometryOf(o);
  const RankGeometry& rg = g.ranks[0];
  std::vector<std::unique_ptr<attach::MemfdRegion>> regions;
  std::vector<attach::SharedAllocation> shared;
  for (size_t p = 0; p < PlaneCount(g); ++p) {
    const bool row = p + 1 == PlaneCount(g);
    const PlaneSpec& spec = row ? rg.row : rg.page_planes[p];
    const uint64_t count = row ? rg.row_count : rg.page_count;
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<attach::MemfdRegion> r,
                            attach::MemfdRegion::Create(spec.name, spec.unit_bytes * count));
    // Touched, as a runtime's KV cache is (and as the in-process planes are).
    std::memset(r->data(), 0, spec.unit_bytes * count);
    shared.push_back({{spec.name, row ? AllocationGroup::kStateRows : AllocationGroup::kKvPages,
                       spec.unit_bytes, count},
                      r->fd()});
    regions.push_back(std::move(r));
  }
  const PlaneAt at = [&](size_t p) {
    const bool row = p + 1 == PlaneCount(g);
    return std::pair{regions[p]->data(), row ? rg.row.unit_bytes : rg.page_planes[p].unit_bytes};
  };
  FillSources(o, g, at);
  STRATA_ASSIGN_OR_RETURN(
      std::unique_ptr<attach::AttachClient> client,
      attach::AttachClient::Attach(
          {.socket_path = socket},
          {.runtime_id = "bench", .model_identity = kModel, .page_tokens = g.page_tokens},
          {shared}));
  std::vector<attach::AttachEvent> events;
  // Waits until `done` holds for what arrived since the last clear.
  auto wait = [&](auto done) -> Status {
    const auto deadline = Clock::now() + kBound;
    while (!done()) {
      STRATA_RETURN_IF_ERROR(client->Poll(events));
      if (done()) break;
      if (Clock::now() > deadline) return Status::Unavailable("no answer over the channel");
      pollfd p{client->fd(), POLLIN, 0};
      (void)::poll(&p, 1, 100);
    }
    return Status::Ok();
  };
  auto count = [&](auto pred) {
    return static_cast<size_t>(std::count_if(events.begin(), events.end(), pred));
  };
  auto is_event = [](StoreEvent::Kind kind) {
    return [kind](const attach::AttachEvent& e) {
      const auto* s = std::get_if<StoreEvent>(&e);
      return s != nullptr && s->kind == kind;
    };
  };
  for (uint64_t c = 0; c < o.chains; ++c)
    STRATA_RETURN_IF_ERROR(client->Store(CheckpointOf(o, g, c)));
  STRATA_RETURN_IF_ERROR(wait([&] {
    return count(is_event(StoreEvent::Kind::kStored)) +
               count(is_event(StoreEvent::Kind::kStoreFailed)) ==
           o.chains;
  }));
  if (count(is_event(StoreEvent::Kind::kStored)) != o.chains) {
    return Status::Internal("a chain was not stored over the channel");
  }
  Side side;
  std::vector<std::optional<HostHit>> hits(o.chains);
  for (uint32_t i = 0; i < o.calls; ++i) {
    const uint64_t c = i % o.chains;
    const std::vector<Token> tokens = TokensOf(o, g, c);
    events.clear();
    const auto t0 = Clock::now();
    STRATA_RETURN_IF_ERROR(client->Lookup(tokens, 0, tokens.size()).status());
    STRATA_RETURN_IF_ERROR(wait([&] { return !events.empty(); }));
    side.lookup_us.push_back(Micros(Clock::now() - t0));
    const auto* r = std::get_if<attach::LookupResult>(&events[0]);
    if (r == nullptr || !r->hit) return Status::Internal("a stored chain was not found");
    hits[c] = r->hit;
    events.clear();
    const auto t1 = Clock::now();
    STRATA_RETURN_IF_ERROR(client->Store(CheckpointOf(o, g, c)));
    STRATA_RETURN_IF_ERROR(wait([&] { return !events.empty(); }));
    side.store_us.push_back(Micros(Clock::now() - t1));
  }
  uint64_t n = 0;
  for (uint32_t rep = 0; rep < o.repetitions; ++rep) {
    for (uint64_t c = 0; c < o.chains; ++c) {
      events.clear();
      const auto t0 = Clock::now();
      STRATA_RETURN_IF_ERROR(client->Fetch(*hits[c], TicketOf(o, c, n++)));
      STRATA_RETURN_IF_ERROR(wait([&] {
        return count(is_event(StoreEvent::Kind::kFetched)) +
                   count(is_event(StoreEvent::Kind::kFetchFailed)) >
               0;
      }));
      side.restore_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
      if (count(is_event(StoreEvent::Kind::kFetched)) != 1) {
        return Status::Internal("a restore over the channel failed");
      }
      side.restored_bytes += hits[c]->bytes;
    }
  }
  for (uint64_t c = 0; c < o.chains; ++c) side.mismatches += Mismatches(o, g, at, c);
  STRATA_RETURN_IF_ERROR(client->Close(kBound));
  return side;
}

// The same calls on the same store in this process.
Result<Side> MeasureInProcess(const AttachBenchOptions& o) {
  const CacheGeometry g = GeometryOf(o);
  HostPlanes planes(g);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> transfers, MakeHostTransfers(planes));
  std::unique_ptr<MemoryStore> store = MakeStore(o, g, std::move(transfers));
  if (store == nullptr) return Status::Internal("no slab pool for the in-process store");
  const PlaneAt at = [&](size_t p) {
    const bool row = p + 1 == PlaneCount(g);
    return row ? std::pair{planes.row(0, StateSlot(0)), g.ranks[0].row.unit_bytes}
               : std::pair{planes.page(0, static_cast<uint32_t>(p), PageId(0)),
                           g.ranks[0].page_planes[p].unit_bytes};
  };
  FillSources(o, g, at);
  std::vector<StoreEvent> events;
  auto poll_until = [&](StoreEvent::Kind a, StoreEvent::Kind b, size_t n) -> Status {
    const auto deadline = Clock::now() + kBound;
    size_t seen = 0;
    while (seen < n) {
      events.clear();
      store->Poll(0, events);
      for (const StoreEvent& e : events) seen += e.kind == a || e.kind == b ? 1 : 0;
      if (Clock::now() > deadline) return Status::Unavailable("no event in-process");
    }
    return Status::Ok();
  };
  for (uint64_t c = 0; c < o.chains; ++c) (void)store->Store(CheckpointOf(o, g, c));
  STRATA_RETURN_IF_ERROR(
      poll_until(StoreEvent::Kind::kStored, StoreEvent::Kind::kStoreFailed, o.chains));
  Side side;
  std::vector<std::optional<HostHit>> hits(o.chains);
  for (uint32_t i = 0; i < o.calls; ++i) {
    const uint64_t c = i % o.chains;
    const std::vector<Token> tokens = TokensOf(o, g, c);
    const auto t0 = Clock::now();
    const PrefixHistory history(tokens);
    hits[c] = store->Lookup(history, 0, tokens.size());
    side.lookup_us.push_back(Micros(Clock::now() - t0));
    if (!hits[c]) return Status::Internal("a stored chain was not found in-process");
    const auto t1 = Clock::now();
    (void)store->Store(CheckpointOf(o, g, c));
    side.store_us.push_back(Micros(Clock::now() - t1));
  }
  uint64_t n = 0;
  for (uint32_t rep = 0; rep < o.repetitions; ++rep) {
    for (uint64_t c = 0; c < o.chains; ++c) {
      const auto t0 = Clock::now();
      STRATA_RETURN_IF_ERROR(store->Fetch(*hits[c], TicketOf(o, c, n++)));
      STRATA_RETURN_IF_ERROR(
          poll_until(StoreEvent::Kind::kFetched, StoreEvent::Kind::kFetchFailed, 1));
      side.restore_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
      side.restored_bytes += hits[c]->bytes;
    }
  }
  for (uint64_t c = 0; c < o.chains; ++c) side.mismatches += Mismatches(o, g, at, c);
  STRATA_RETURN_IF_ERROR(store->Close());
  return side;
}

Result<nlohmann::json> Run(const AttachBenchOptions& o) {
  if (o.chains == 0 || o.chain_pages == 0 || o.calls == 0 || o.repetitions == 0) {
    return Status::InvalidArgument("--chains, --pages, --calls and --repetitions must be > 0");
  }
  STRATA_RETURN_IF_ERROR(PresetGeometry(o.preset, 1, 1, 1).status());
  const std::string socket = (std::filesystem::path(o.dir) /
                              ("strata-bench-attach-" + std::to_string(::getpid()) + ".sock"))
                                 .string();
  int ready[2];
  if (::pipe(ready) != 0) return Status::FromErrno(errno, "pipe");
  const pid_t server = ::fork();
  if (server == 0) {
    ::close(ready[0]);
    ::_exit(ServeChannel(o, socket, ready[1]));
  }
  ::close(ready[1]);
  char byte = 0;
  const bool up = ::read(ready[0], &byte, 1) == 1;
  ::close(ready[0]);
  Result<Side> channel =
      up ? MeasureChannel(o, socket) : Result<Side>(Status::Unavailable("server did not start"));
  ::kill(server, SIGTERM);
  int status = 0;
  ::waitpid(server, &status, 0);
  STRATA_RETURN_IF_ERROR(channel.status());
  STRATA_ASSIGN_OR_RETURN(Side local, MeasureInProcess(o));
  const double channel_gbps = channel->restored_bytes / channel->restore_seconds / 1e9;
  const double local_gbps = local.restored_bytes / local.restore_seconds / 1e9;
  const CacheGeometry g = GeometryOf(o);
  return nlohmann::json{
      {"benchmark", "attach"},
      {"preset", o.preset},
      {"chain_bytes", RecordLayout(g).page_record_bytes() * o.chain_pages},
      {"lookup",
       {{"channel", LatencyJson(channel->lookup_us)},
        {"in_process", LatencyJson(local.lookup_us)}}},
      {"store",
       {{"channel", LatencyJson(channel->store_us)}, {"in_process", LatencyJson(local.store_us)}}},
      {"restore", {{"channel_gbps", channel_gbps}, {"in_process_gbps", local_gbps}}},
      {"restore_ratio", channel_gbps / local_gbps},
      {"goal_restore_ratio", kGoalRatio},
      {"byte_check", channel->mismatches + local.mismatches == 0 ? "ok" : "mismatch"}};
}

void PrintTable(const nlohmann::json& r) {
  std::printf("attach channel vs in-process (%s, %.1f MiB chains)\n",
              r["preset"].get<std::string>().c_str(), r["chain_bytes"].get<double>() / (1 << 20));
  for (const char* call : {"lookup", "store"}) {
    std::printf("  %-8s p50 %8.1f us  p99 %8.1f us   (in-process p50 %6.1f us, p99 %6.1f us)\n",
                call, r[call]["channel"]["p50_us"].get<double>(),
                r[call]["channel"]["p99_us"].get<double>(),
                r[call]["in_process"]["p50_us"].get<double>(),
                r[call]["in_process"]["p99_us"].get<double>());
  }
  std::printf(
      "  restore  %.2f GB/s over the channel, %.2f GB/s in-process: ratio %.3f (goal %.2f)\n",
      r["restore"]["channel_gbps"].get<double>(), r["restore"]["in_process_gbps"].get<double>(),
      r["restore_ratio"].get<double>(), kGoalRatio);
  std::printf("  bytes    %s\n", r["byte_check"].get<std::string>().c_str());
}

}  // namespace

void AddAttachBench(CLI::App& bench) {
  auto o = std::make_shared<AttachBenchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "attach",
      "Attach channel vs in-process: Lookup/Store latency and restore GB/s through a runtime's "
      "memfd planes");
  cmd->add_flag("--json", o->json, "print one JSON object");
  cmd->add_option("--preset", o->preset, "geometry preset")->capture_default_str();
  cmd->add_option("--chains", o->chains, "stored chains")->capture_default_str();
  cmd->add_option("--pages", o->chain_pages, "pages per chain")->capture_default_str();
  cmd->add_option("--calls", o->calls, "timed Lookup and Store calls per side")
      ->capture_default_str();
  cmd->add_option("--repetitions", o->repetitions, "restores of every chain per side")
      ->capture_default_str();
  cmd->add_option("--dir", o->dir, "where the socket goes")->capture_default_str();
  cmd->callback([o] {
    Result<nlohmann::json> r = Run(*o);
    PrintBenchResult("attach", r.status(), r.ok() ? *r : nlohmann::json(), o->json, PrintTable);
  });
}

}  // namespace strata
