#include "launch/rank/workloads.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

namespace strata {

namespace {

using Clock = std::chrono::steady_clock;

// Rank zero's serve load: this many conversations, taking turns.
constexpr int kServeConversations = 4;
constexpr uint64_t kServeTurnTokens = 256;
// Every this many turns the runtime drops its GPU copies (restores follow).
constexpr uint64_t kServeEvictEveryTurns = 16;

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

// Runs `phases` in order, stopping after the first that fails.
std::vector<PhaseReport> RunPhases(RuntimeDriver& driver, QualifyPhases phases) {
  Qualification q = driver.MakeQualification();
  std::vector<PhaseReport> out;
  auto run = [&out](PhaseReport r) {
    PrintPhase(r);
    out.push_back(std::move(r));
    return out.back().ok;
  };
  if (phases == QualifyPhases::kAfterRestart) {
    run(q.RestoreAfterRestart());
    return out;
  }
  if (!run(q.GpuHit()) || !run(q.HostRestore())) return out;
  if (driver.has_memory_and_disk()) run(driver.CompositePhase());
  return out;
}

}  // namespace

int ServeAsPeer(PeerRank& peer, const StopRequest& stop, const PublishSnapshot& publish,
                const PeerTurn& wait_turn) {
  std::optional<Clock::time_point> grace_end;  // set by the stop request
  while (peer.Serving()) {
    publish();
    if (stop.requested() && !grace_end) {
      if (peer.Joining()) {
        spdlog::info("signal before rank zero's session began: stopping now");
        return 0;
      }
      grace_end = Clock::now() + kPeerStopGrace;
      spdlog::info("signal: waiting up to {} s for rank zero to close the session",
                   kPeerStopGrace.count());
    }
    const Clock::time_point now = Clock::now();
    if (grace_end && now >= *grace_end) {
      spdlog::warn("rank zero did not close the session in time; stopping this rank alone");
      return 0;
    }
    Clock::time_point wake = now + kPeerPublishInterval;
    if (grace_end) wake = std::min(wake, *grace_end);
    if (wait_turn) {
      wait_turn(wake);
    } else {
      (void)peer.WaitEnded(wake);
    }
  }
  publish();
  return 0;
}

int ServeConversations(RuntimeDriver& driver, const StopRequest& stop,
                       const PublishSnapshot& publish) {
  SyntheticRuntime& rt = driver.runtime();
  std::vector<uint32_t> convs;
  convs.reserve(kServeConversations);
  for (int i = 0; i < kServeConversations; ++i) convs.push_back(rt.NewConversation());
  for (uint64_t tick = 0; !stop.requested(); ++tick) {
    if (Result<TurnReport> t = rt.Turn(convs[tick % convs.size()], kServeTurnTokens); !t.ok()) {
      if (stop.requested()) return 0;  // a stop request ended the turn: not an error
      spdlog::error("synthetic runtime: {}", t.status().ToString());
      // Stay up until a stop request, so /healthz answers 503 with the
      // reason (a lost peer, a stopped transport) for whoever watches it.
      while (!stop.requested()) {
        publish();
        (void)stop.WaitUntil(Clock::now() + kServeTurnInterval);
      }
      return 1;
    }
    if (tick % kServeEvictEveryTurns == kServeEvictEveryTurns - 1) rt.EvictGpu();
    publish();
    (void)stop.WaitUntil(Clock::now() + kServeTurnInterval);
  }
  return 0;
}

int Qualify(RuntimeDriver& driver, const QualifyOptions& options, const PublishSnapshot& publish) {
  const std::vector<PhaseReport> phases = RunPhases(driver, options.phases);
  publish();
  PrintSummaryTable(phases, options.metrics_url);
  nlohmann::json summary = {{"rank", options.rank},
                            {"world_size", options.world_size},
                            {"store", driver.Summary()},
                            {"metrics", options.metrics_url},
                            {"phases", nlohmann::json::array()}};
  int exit_code = 0;
  for (const PhaseReport& p : phases) {
    summary["phases"].push_back(PhaseJson(p));
    if (!p.ok) exit_code = 2;
  }
  if (driver.store() != nullptr) {
    StoreStats st = driver.store()->Stats();
    summary["records"] = st.disk.records + st.memory.records;
    summary["disk_bytes"] = st.disk.bytes;
  }
  if (!options.summary_json.empty()) std::ofstream(options.summary_json) << summary.dump(2) << "\n";
  return exit_code;
}

}  // namespace strata
