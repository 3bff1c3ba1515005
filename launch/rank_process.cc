#include "launch/rank_process.h"

#include <spdlog/spdlog.h>

#include <unistd.h>
#include <atomic>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "launch/http_endpoint.h"
#include "launch/ops_snapshot.h"
#include "launch/presets.h"
#include "launch/qualification.h"
#include "launch/rank_stores.h"
#include "launch/synthetic_runtime.h"

namespace strata {

namespace {

std::atomic<int> g_signals{0};

void OnSignal(int) {
  // The first signal asks for a clean drain; a second exits at once.
  if (g_signals.fetch_add(1) >= 1) _exit(130);
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

  SnapshotPublisher publisher;
  auto publish = [&] {
    OpsSnapshot s;
    s.rank = RankId(config.cluster.rank);
    s.world_size = config.cluster.world_size;
    if (stores.store() != nullptr) s.store = stores.store()->Stats();
    s.peers = stores.PeerLinks();
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
    // A peer: serve jobs until rank zero closes or a signal arrives.
    while (g_signals.load() == 0 && stores.Serving()) {
      publish();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  } else if (run.workload == Workload::kServe) {
    SyntheticRuntime& rt = stores.runtime();
    constexpr int kServeConversations = 4;
    std::vector<uint32_t> convs;
    convs.reserve(kServeConversations);
    for (int i = 0; i < kServeConversations; ++i) convs.push_back(rt.NewConversation());
    for (uint64_t tick = 0; g_signals.load() == 0; ++tick) {
      if (Result<TurnReport> t = rt.Turn(convs[tick % convs.size()], 256); !t.ok()) {
        spdlog::error("synthetic runtime: {}", t.status().ToString());
        exit_code = 1;
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
    nlohmann::json summary = {{"rank", config.cluster.rank},
                              {"world_size", config.cluster.world_size},
                              {"store", stores.Summary()},
                              {"metrics", "http://" + config.metrics.bind + ":" +
                                              std::to_string((*endpoint)->port()) + "/metrics"},
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
