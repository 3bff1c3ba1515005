#include "launch/rank/workloads.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "launch/runtime/serve_load.h"

namespace strata {

namespace {

using Clock = std::chrono::steady_clock;

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
  ServeLoad load(driver.runtime());
  while (!stop.requested()) {
    if (Result<TurnReport> t = load.Turn(); !t.ok()) {
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
    publish();
    (void)stop.WaitUntil(Clock::now() + kServeTurnInterval);
  }
  return 0;
}

int Qualify(RuntimeDriver& driver, const QualifyOptions& options, const PublishSnapshot& publish) {
  Qualification q = driver.MakeQualification();
  std::function<PhaseReport()> composite;
  if (driver.has_memory_and_disk()) composite = [&driver] { return driver.CompositePhase(); };
  const std::vector<PhaseReport> phases = RunQualificationPhases(q, options.phases, composite);
  publish();
  PrintSummaryTable(phases, options.metrics_url);
  nlohmann::json summary = {{"rank", options.rank},
                            {"world_size", options.world_size},
                            {"store", driver.Summary()},
                            {"metrics", options.metrics_url},
                            {"phases", PhasesJson(phases)}};
  if (driver.store() != nullptr) {
    StoreStats st = driver.store()->Stats();
    summary["records"] = st.disk.records + st.memory.records;
    summary["disk_bytes"] = st.disk.bytes;
  }
  if (!options.summary_json.empty()) std::ofstream(options.summary_json) << summary.dump(2) << "\n";
  return QualifyExitCode(phases);
}

}  // namespace strata
