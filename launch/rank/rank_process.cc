#include "launch/rank/rank_process.h"

#include <spdlog/spdlog.h>

#include <unistd.h>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "launch/ops/http_endpoint.h"
#include "launch/ops/ops_snapshot.h"
#include "launch/presets.h"
#include "launch/rank/rank_stores.h"
#include "launch/runtime/qualification.h"
#include "launch/runtime/synthetic_runtime.h"

namespace strata {

namespace {

std::atomic<int> g_signals{0};

// How long a signalled peer keeps serving while rank zero drains it.
constexpr std::chrono::seconds kPeerStopGrace{10};

// Monotonic nanoseconds of the first signal (0: none yet).
std::atomic<int64_t> g_first_signal_ns{0};
// Signals this close to the first are the same request delivered twice (a
// wrapper such as timeout(1) signals the child and then its process group).
constexpr int64_t kSameSignalWindowNs = 1'000'000'000;

int64_t MonotonicNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);  // async-signal-safe
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

void OnSignal(int) {
  // The first signal asks for a clean drain; a later one exits at once.
  const int64_t now = MonotonicNs();
  int64_t first = 0;
  if (g_first_signal_ns.compare_exchange_strong(first, now)) {
    g_signals.fetch_add(1);
    return;
  }
  if (now - first >= kSameSignalWindowNs) _exit(130);
}

void InstallSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

void SetLogLevel(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace: spdlog::set_level(spdlog::level::trace); break;
    case LogLevel::kDebug: spdlog::set_level(spdlog::level::debug); break;
    case LogLevel::kInfo: spdlog::set_level(spdlog::level::info); break;
    case LogLevel::kWarn: spdlog::set_level(spdlog::level::warn); break;
    case LogLevel::kError: spdlog::set_level(spdlog::level::err); break;
    case LogLevel::kOff: spdlog::set_level(spdlog::level::off); break;
  }
}

nlohmann::json PhaseJson(const PhaseReport& p) {
  return {{"phase", p.name},
          {"ok", p.ok},
          {"detail", p.detail},
          {"host_hits", p.host_hits},
          {"gpu_hits", p.gpu_hits},
          {"restored_bytes", p.restored_bytes},
          {"restore_gbps", p.restore_gbps},
          {"records_per_rank", p.records}};
}

void PrintPhase(const PhaseReport& p) {
  spdlog::info("phase {}: {} — {}", p.name, p.ok ? "PASS" : "FAIL", p.detail);
}

// The qualification's summary table, on stdout.
void PrintSummaryTable(const std::vector<PhaseReport>& phases, const std::string& metrics_url) {
  std::printf("\n%-52s %-6s %9s %9s %8s %12s %10s\n", "phase", "result", "records", "host hits",
              "GPU hits", "restored MiB", "GB/s");
  for (const PhaseReport& p : phases) {
    std::printf("%-52s %-6s %9llu %9llu %8llu %12.2f %10.2f\n", p.name.c_str(),
                p.ok ? "PASS" : "FAIL", static_cast<unsigned long long>(p.records),
                static_cast<unsigned long long>(p.host_hits),
                static_cast<unsigned long long>(p.gpu_hits),
                static_cast<double>(p.restored_bytes) / (1 << 20), p.restore_gbps);
  }
  std::printf("records: record files per rank after the phase; metrics: %s\n\n",
              metrics_url.c_str());
  std::fflush(stdout);
}

}  // namespace

// The loop every workload shares: run it, publish snapshots, stop on a signal.
int RunRank(const LoadedConfig& loaded, const RankRunOptions& run) {
  const RankConfig& config = loaded.config;
  SetLogLevel(config.log.level);
  spdlog::set_pattern("[%H:%M:%S.%e] [rank " + std::to_string(config.cluster.rank) + "] %v");
  InstallSignalHandlers();

  Result<std::unique_ptr<RankStores>> opened = OpenRankStores(config, run.seed);
  if (!opened.ok()) {
    spdlog::error("startup failed: {}", opened.status().ToString());
    return 1;
  }
  RankStores& stores = **opened;
  // A signal ends the runtime's turns and waits at once (a qualification
  // whose peer died would otherwise wait out its bounds first).
  if (stores.drives_runtime()) stores.runtime().SetInterrupt([] { return g_signals.load() != 0; });

  SnapshotPublisher publisher;
  auto publish = [&] {
    OpsSnapshot s;
    s.rank = RankId(config.cluster.rank);
    s.world_size = config.cluster.world_size;
    if (stores.store() != nullptr) s.store = stores.store()->Stats();
    s.peers = stores.PeerLinks();
    if (stores.store() != nullptr) s.job_latency = stores.JobLatencies();
    s.unhealthy_reason = stores.UnhealthyReason();
    s.taken_at = std::chrono::steady_clock::now();
    publisher.Publish(std::move(s));
  };
  publish();
  HttpEndpointOptions http;
  http.bind = config.metrics.bind;
  http.port = EffectiveMetricsPort(config);
  Result<std::unique_ptr<HttpEndpoint>> endpoint =
      HttpEndpoint::Start(http, [&publisher] { return publisher.Latest(); });
  if (!endpoint.ok()) {
    spdlog::error("metrics endpoint: {}", endpoint.status().ToString());
    return 1;
  }
  spdlog::info("{}; links {}; metrics at http://{}:{}/metrics", stores.Summary(),
               stores.LinkSecurity(), config.metrics.bind, (*endpoint)->port());

  int exit_code = 0;
  if (!stores.drives_runtime()) {
    // A peer: serve jobs until rank zero closes the session. A launcher
    // signals every rank at once, and rank zero drains the peers as it
    // stops, so a signalled peer keeps serving for a bounded grace first;
    // only then does it end its side alone.
    std::optional<std::chrono::steady_clock::time_point> signalled;
    while (stores.Serving()) {
      if (g_signals.load() != 0 && !signalled) {
        signalled = std::chrono::steady_clock::now();
        spdlog::info("signal: waiting up to {} s for rank zero to close the session",
                     kPeerStopGrace.count());
      }
      if (signalled && stores.Joining()) {
        spdlog::info("signal before rank zero's session began: stopping now");
        break;
      }
      if (signalled && std::chrono::steady_clock::now() - *signalled > kPeerStopGrace) {
        spdlog::warn("rank zero did not close the session in time; stopping this rank alone");
        break;
      }
      publish();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  } else if (run.workload == Workload::kServe) {
    SyntheticRuntime& rt = stores.runtime();
    constexpr int kServeConversations = 4;
    std::vector<uint32_t> convs;
    convs.reserve(kServeConversations);
    for (int i = 0; i < kServeConversations; ++i) convs.push_back(rt.NewConversation());
    for (uint64_t tick = 0; g_signals.load() == 0; ++tick) {
      if (Result<TurnReport> t = rt.Turn(convs[tick % convs.size()], 256); !t.ok()) {
        if (g_signals.load() != 0) break;  // a stop request ended the turn: not an error
        spdlog::error("synthetic runtime: {}", t.status().ToString());
        exit_code = 1;
        // Stay up until a signal, so /healthz answers 503 with the reason
        // (a lost peer, a stopped transport) for whoever watches it.
        while (g_signals.load() == 0) {
          publish();
          std::this_thread::sleep_for(std::chrono::milliseconds(500));
        }
        break;
      }
      if (tick % 16 == 15) rt.EvictGpu();
      publish();
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  } else {
    Qualification q = stores.MakeQualification();
    std::vector<PhaseReport> phases;
    if (run.workload == Workload::kQualify) {
      phases.push_back(q.GpuHit());
      PrintPhase(phases.back());
      if (phases.back().ok) {
        phases.push_back(q.HostRestore());
        PrintPhase(phases.back());
      }
      if (phases.back().ok && stores.has_memory_and_disk()) {
        phases.push_back(stores.CompositePhase());
        PrintPhase(phases.back());
      }
    } else {
      phases.push_back(q.RestoreAfterRestart());
      PrintPhase(phases.back());
    }
    publish();
    const std::string metrics_url =
        "http://" + config.metrics.bind + ":" + std::to_string((*endpoint)->port()) + "/metrics";
    PrintSummaryTable(phases, metrics_url);
    nlohmann::json summary = {{"rank", config.cluster.rank},
                              {"world_size", config.cluster.world_size},
                              {"store", stores.Summary()},
                              {"metrics", metrics_url},
                              {"phases", nlohmann::json::array()}};
    for (const PhaseReport& p : phases) {
      summary["phases"].push_back(PhaseJson(p));
      if (!p.ok) exit_code = 2;
    }
    if (stores.store() != nullptr) {
      StoreStats st = stores.store()->Stats();
      summary["records"] = st.disk.records + st.memory.records;
      summary["disk_bytes"] = st.disk.bytes;
    }
    if (!run.summary_json.empty()) std::ofstream(run.summary_json) << summary.dump(2) << "\n";
  }
  spdlog::info("stopping: draining the store");
  Status closed = stores.Close();
  if (!closed.ok()) {
    spdlog::error("drain did not complete: {}", closed.ToString());
    return exit_code == 0 ? 1 : exit_code;
  }
  spdlog::info("stopped cleanly");
  return exit_code;
}

}  // namespace strata
