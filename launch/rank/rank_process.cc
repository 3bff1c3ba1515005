#include "launch/rank/rank_process.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "launch/ops/http_endpoint.h"
#include "launch/ops/ops_snapshot.h"
#include "launch/presets.h"
#include "launch/rank/attach_workload.h"
#include "launch/rank/rank_stores.h"
#include "launch/rank/stop_on_signals.h"
#include "launch/rank/stop_request.h"
#include "launch/rank/workloads.h"

namespace strata {

namespace {

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

// The workload this role runs for `run`: a peer serves rank zero whatever
// the workload; with attach.socket the one process serves attached
// runtimes; otherwise rank zero (or the one process) runs the one asked for.
int RunWorkload(const RankConfig& config, const RankRole& role, const RankRunOptions& run,
                const QualifyOptions& qualify, const StopRequest& stop,
                const PublishSnapshot& publish) {
  if (PeerRank* peer = PeerOf(role)) {
    if (config.attach.socket) return ServeAttachAsPeer(*peer, config, stop, publish);
    return ServeAsPeer(*peer, stop, publish);
  }
  RuntimeDriver& driver = *DriverOf(role);
  if (config.attach.socket) return ServeAttach(driver, config, stop, publish);
  switch (run.workload) {
    case Workload::kServe: return ServeConversations(driver, stop, publish);
    case Workload::kQualify: return Qualify(driver, qualify, publish);
    case Workload::kRestore: {
      QualifyOptions restore = qualify;
      restore.phases = QualifyPhases::kAfterRestart;
      return Qualify(driver, restore, publish);
    }
  }
  return 1;
}

// After a failed drain: keeps the endpoint (already serving the final
// snapshot) up for `linger` so a scrape sees strata_drain_failed. A stop
// not yet requested ends it when the first signal comes; once one was (the
// usual way to a drain), StopOnSignals exits the process at once (130) on
// the next signal, so the plain bounded wait below is never longer than the
// operator wants.
void LingerAfterFailure(std::chrono::milliseconds linger, const StopRequest& stop) {
  if (linger.count() == 0) return;
  spdlog::info(
      "serving the metrics endpoint {} ms more so a scrape sees the failed drain "
      "(metrics.linger_after_failure; a signal ends it)",
      linger.count());
  const auto deadline = std::chrono::steady_clock::now() + linger;
  if (!stop.requested()) {
    (void)stop.WaitUntil(deadline);
    return;
  }
  std::this_thread::sleep_until(deadline);
}

}  // namespace

// Opens the role, serves the ops endpoint, runs the workload, closes.
int RunRank(const LoadedConfig& loaded, const RankRunOptions& run) {
  const RankConfig& config = loaded.config;
  SetLogLevel(config.log.level);
  spdlog::set_pattern("[%H:%M:%S.%e] [rank " + std::to_string(config.cluster.rank) + "] %v");
  StopRequest stop;
  Result<std::unique_ptr<StopOnSignals>> signals = StopOnSignals::Install(stop);
  if (!signals.ok()) {
    spdlog::error("startup failed: {}", signals.status().ToString());
    return 1;
  }

  Result<RankRole> opened = OpenRankStores(config, run.seed);
  if (!opened.ok()) {
    spdlog::error("startup failed: {}", opened.status().ToString());
    return 1;
  }
  RankServices& services = ServicesOf(*opened);
  // A stop request ends the runtime's turns and waits at once (a
  // qualification whose peer died would otherwise wait out its bounds first).
  RuntimeDriver* driver = DriverOf(*opened);
  if (driver != nullptr && !config.attach.socket) {
    driver->runtime().SetInterrupt([&stop] { return stop.requested(); });
  }

  SnapshotPublisher publisher;
  // The disk limit as configured; unset, the default the stores resolved at
  // startup (one tenth of the free space, which the filesystem check never lowers).
  const uint64_t disk_limit_configured_bytes = config.prefix_cache.disk_limit_bytes.value_or(
      services.store() != nullptr ? services.store()->Stats().disk_limit_bytes : 0);
  auto publish = [&] {
    OpsSnapshot s;
    s.rank = RankId(config.cluster.rank);
    s.world_size = config.cluster.world_size;
    if (services.store() != nullptr) {
      s.store = services.store()->Stats();
      s.disk_limit_configured_bytes = disk_limit_configured_bytes;
    }
    s.peers = services.PeerLinks();
    const TransportDecision transport = services.Transport();
    s.transport = std::string(TransportKindName(transport.kind));
    s.transport_reason = transport.reason;
    if (services.store() != nullptr) s.job_latency = services.JobLatencies();
    s.unhealthy_reason = services.UnhealthyReason();
    s.extra_metrics = services.ExtraMetrics();
    s.taken_at = std::chrono::steady_clock::now();
    publisher.Publish(std::move(s));
  };
  publish();
  Result<std::unique_ptr<HttpEndpoint>> endpoint =
      HttpEndpoint::Start({.bind = config.metrics.bind, .port = EffectiveMetricsPort(config)},
                          [&publisher] { return publisher.Latest(); });
  if (!endpoint.ok()) {
    spdlog::error("metrics endpoint: {}", endpoint.status().ToString());
    return 1;
  }
  spdlog::info("{}; links {}; metrics at http://{}:{}/metrics", services.Summary(),
               services.LinkSecurity(), config.metrics.bind, (*endpoint)->port());

  const QualifyOptions qualify{
      .phases = QualifyPhases::kFirstRun,
      .rank = config.cluster.rank,
      .world_size = config.cluster.world_size,
      .metrics_url =
          "http://" + config.metrics.bind + ":" + std::to_string((*endpoint)->port()) + "/metrics",
      .summary_json = run.summary_json,
  };
  const int exit_code = RunWorkload(config, *opened, run, qualify, stop, publish);

  spdlog::info("stopping: draining the store");
  publish();  // the last live state: the store is not read after a failed Close
  Status closed = services.Close();
  if (!closed.ok()) {
    spdlog::error("drain did not complete: {}", closed.ToString());
    publisher.Publish(
        DrainFailedSnapshot(publisher.Latest().get(), closed, std::chrono::steady_clock::now()));
    LingerAfterFailure(config.metrics.linger_after_failure, stop);
    return exit_code == 0 ? 1 : exit_code;
  }
  spdlog::info("stopped cleanly");
  return exit_code;
}

}  // namespace strata
