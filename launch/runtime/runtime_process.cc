#include "launch/runtime/runtime_process.h"

#include <spdlog/spdlog.h>

#include <fstream>
#include <thread>

#include "attach/client/attach_client.h"
#include "coordinator/rendezvous/job_secret.h"
#include "launch/presets.h"
#include "launch/rank/rank_stores.h"
#include "launch/rank/stop_on_signals.h"
#include "launch/rank/stop_request.h"
#include "launch/runtime/attached_store.h"
#include "launch/runtime/job_token.h"
#include "launch/runtime/memfd_planes.h"
#include "launch/runtime/runtime_lockstep.h"
#include "launch/runtime/serve_load.h"
#include "launch/runtime/synthetic_runtime.h"
#include "launch/runtime/vmm_planes.h"

namespace strata {

namespace {

using Clock = std::chrono::steady_clock;

// Bound on one store answer, restore or drain (the synthetic runtime's).
constexpr std::chrono::milliseconds kWaitBound{60'000};
// While the rank's socket does not answer yet, attach is tried this often.
constexpr auto kAttachRetryPause = std::chrono::milliseconds(100);
// A peer looks at its stop request this often while it waits for work.
constexpr auto kStopCheck = std::chrono::milliseconds(100);

// This rank's planes as the runtime owns them, and how it shares them.
struct OwnPlanes {
  std::unique_ptr<DevicePlanes> planes;  // one rank: this one
  std::vector<std::vector<attach::SharedAllocation>> shared;
  PlaneHandleKind handle = PlaneHandleKind::kMemfd;
  std::string describe;
};

// memfd host memory, or with runtime.gpus CUDA VMM allocations on the
// first listed device (the one this rank's `strata rank` serves).
Result<OwnPlanes> OpenOwnPlanes(const RankConfig& config, const CacheGeometry& all) {
  const RankGeometry& rank = all.ranks.at(config.cluster.rank);
  OwnPlanes own;
  if (config.runtime.gpus.empty()) {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<MemfdPlanes> p,
                            MemfdPlanes::Create(rank, all.page_tokens));
    own.shared = p->Shared();
    own.planes = std::move(p);
    own.describe = "memfd planes";
    return own;
  }
  const int ordinal = config.runtime.gpus.front();
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<VmmPlanes> p,
                          VmmPlanes::Create(rank, all.page_tokens, ordinal));
  own.shared = p->Shared();
  own.planes = std::move(p);
  own.handle = PlaneHandleKind::kCudaVmmFd;
  own.describe = "CUDA VMM planes on GPU " + std::to_string(ordinal);
  return own;
}

// Attaches to the rank's socket, retrying while the rank is not serving it
// yet (it serves once every rank joined) up to cluster.connect_timeout.
Result<std::unique_ptr<attach::AttachClient>> AttachToRank(const RankConfig& config,
                                                           const OwnPlanes& own,
                                                           const StopRequest& stop) {
  const attach::AttachIdentity identity{
      .runtime_id = "strata runtime of rank " + std::to_string(config.cluster.rank),
      .model_identity = RankModelIdentity(config),
      .state_mode = StateMode::kOrdinary,
      .page_tokens = own.planes->geometry().page_tokens,
      .plane_handle = own.handle};
  const Clock::time_point deadline = Clock::now() + config.cluster.connect_timeout;
  while (true) {
    Result<std::unique_ptr<attach::AttachClient>> client =
        attach::AttachClient::Attach({.socket_path = *config.attach.socket}, identity, own.shared);
    // A refusal (kInvalidArgument) is final; a socket not there yet is not.
    if (client.ok() || client.status().code() == StatusCode::kInvalidArgument ||
        Clock::now() >= deadline || stop.requested()) {
      return client;
    }
    std::this_thread::sleep_for(kAttachRetryPause);  // nothing to wait on until the rank listens
  }
}

Result<LockstepOptions> LockstepOf(const RankConfig& config) {
  STRATA_ASSIGN_OR_RETURN(JobSecret secret, ReadJobSecret(config.cluster.job_secret_file));
  return LockstepOptions{.token = JobToken(secret, kLockstepTokenLabel)};
}

Result<uint16_t> LockstepPort(const RankConfig& config) {
  const uint32_t port = uint32_t{config.metrics.port} + kLockstepPortOffset;
  if (config.metrics.port == 0 || port > 65535) {
    return Status::InvalidArgument(
        "metrics.port: runtime processes need a fixed metrics port "
        "(not 0) with room for the lockstep channel at metrics.port + " +
        std::to_string(kLockstepPortOffset));
  }
  return static_cast<uint16_t>(port);
}

// A detach that failed after this process was asked to stop: a launcher
// signals every process of the job at once, so the rank has usually stopped
// already and nothing is left to detach from. Logged, not an error.
bool RankStoppedToo(const Status& detach, const StopRequest& stop) {
  if (!stop.requested() || detach.ok()) return false;
  spdlog::info("detach: the rank stopped too ({})", detach.ToString());
  return true;
}

// Detaches `client`; 0 when it detached or the rank stopped too, else 1.
int ClosedOnStop(attach::AttachClient& client, const StopRequest& stop) {
  Status closed = client.Close(kWaitBound);
  if (closed.ok() || RankStoppedToo(closed, stop)) return 0;
  spdlog::error("detach: {}", closed.ToString());
  return 1;
}

int ServeTurns(SyntheticRuntime& rt, const StopRequest& stop) {
  ServeLoad load(rt);
  while (!stop.requested()) {
    if (Result<TurnReport> t = load.Turn(); !t.ok()) {
      if (stop.requested()) return 0;  // a stop request ended the turn: not an error
      spdlog::error("synthetic runtime: {}", t.status().ToString());
      return 1;
    }
    (void)stop.WaitUntil(Clock::now() + kServeTurnInterval);
  }
  return 0;
}

int RunWorkload(SyntheticRuntime& rt, const RankConfig& config, const RuntimeRunOptions& options,
                const StopRequest& stop) {
  if (options.workload == RuntimeWorkload::kServe) return ServeTurns(rt, stop);
  // No record listings: this process cannot read its ranks' directories.
  Qualification q(rt, /*listings=*/{}, /*idle=*/{});
  const std::vector<PhaseReport> phases = RunQualificationPhases(
      q, options.workload == RuntimeWorkload::kRestore ? QualifyPhases::kAfterRestart
                                                       : QualifyPhases::kFirstRun);
  PrintSummaryTable(phases, "(strata rank's own /metrics)");
  if (!options.summary_json.empty()) {
    const nlohmann::json summary = {{"rank", config.cluster.rank},
                                    {"world_size", config.cluster.world_size},
                                    {"runtime", "strata runtime (attached)"},
                                    {"phases", PhasesJson(phases)}};
    std::ofstream(options.summary_json) << summary.dump(2) << "\n";
  }
  return QualifyExitCode(phases);
}

int RunRankZero(const RankConfig& config, const RuntimeRunOptions& options, DevicePlanes& planes,
                std::unique_ptr<attach::AttachClient> client, const StopRequest& stop) {
  std::unique_ptr<LockstepLeader> peers;
  if (config.cluster.world_size > 1) {
    Result<LockstepOptions> lockstep = LockstepOf(config);
    Result<uint16_t> port = LockstepPort(config);
    if (!lockstep.ok() || !port.ok()) {
      spdlog::error("lockstep: {}",
                    (!lockstep.ok() ? lockstep.status() : port.status()).ToString());
      return 1;
    }
    Result<std::unique_ptr<LockstepLeader>> leader =
        LockstepLeader::Listen(config.runtime.service_bind, *port, *lockstep);
    Status admitted = leader.ok() ? (*leader)->AdmitPeers(config.cluster.world_size,
                                                          config.cluster.connect_timeout)
                                  : leader.status();
    if (!admitted.ok()) {
      spdlog::error("lockstep: {}", admitted.ToString());
      return 1;
    }
    peers = std::move(*leader);
  }
  AttachedStore store(std::move(client), kWaitBound);
  SyntheticRuntime rt(planes, &store, SyntheticRuntimeOptions{.seed = options.seed});
  rt.SetPeers(peers.get());
  rt.SetInterrupt([&stop] { return stop.requested(); });
  int exit_code = RunWorkload(rt, config, options, stop);
  if (peers != nullptr) {
    if (Status s = peers->Finish(); !s.ok()) {
      if (stop.requested()) {
        // Signalled with every process of the job: a peer runtime that
        // stopped first closed its lockstep connection. Not an error.
        spdlog::info("lockstep: the peers stopped too ({})", s.ToString());
      } else {
        spdlog::error("{}", s.ToString());
        exit_code = exit_code == 0 ? 1 : exit_code;
      }
    }
  }
  if (Status s = store.Close(); !s.ok() && !RankStoppedToo(s, stop)) {
    spdlog::error("detach: {}", s.ToString());
    exit_code = exit_code == 0 ? 1 : exit_code;
  }
  return exit_code;
}

int RunPeer(const RankConfig& config, DevicePlanes& planes,
            std::unique_ptr<attach::AttachClient> client, const StopRequest& stop) {
  const uint32_t rank = config.cluster.rank;
  Result<LockstepOptions> lockstep = LockstepOf(config);
  Result<uint16_t> port = LockstepPort(config);
  if (!lockstep.ok() || !port.ok()) {
    spdlog::error("lockstep: {}", (!lockstep.ok() ? lockstep.status() : port.status()).ToString());
    return 1;
  }
  const auto stopped = [&stop] { return stop.requested(); };
  Result<std::unique_ptr<LockstepFollower>> follower = LockstepFollower::Join(
      config.cluster.master_addr, *port, rank, config.cluster.connect_timeout, *lockstep, stopped);
  if (!follower.ok() && stop.requested()) {
    spdlog::info("stopped before rank zero's runtime was reached");
    return ClosedOnStop(*client, stop);
  }
  if (!follower.ok()) {
    spdlog::error("{}", follower.status().ToString());
    return 1;
  }
  spdlog::info("joined rank zero's runtime; computing and checking rank {}'s pages", rank);
  uint64_t checked_bytes = 0;
  Status served = (*follower)->Serve(
      [&](const PageWork& work) -> Result<PageWorkReport> {
        Result<PageWorkReport> r = ApplyPageWork(planes, 0, rank, work);
        if (r.ok()) checked_bytes += r->checked_bytes;
        return r;
      },
      stopped, kStopCheck);
  spdlog::info("rank zero's runtime {}; {} restored bytes checked here",
               served.ok() ? "finished" : "ended: " + served.ToString(), checked_bytes);
  // A stop request here ends the serving cleanly (kAborted), as it does rank zero's turns.
  const bool served_to_end =
      served.ok() || (stop.requested() && served.code() == StatusCode::kAborted);
  return ClosedOnStop(*client, stop) == 0 && served_to_end ? 0 : 1;
}

}  // namespace

int RunRuntime(const RankConfig& config, const RuntimeRunOptions& options) {
  spdlog::set_pattern("[%H:%M:%S.%e] [runtime " + std::to_string(config.cluster.rank) + "] %v");
  if (!config.attach.socket) {
    spdlog::error("attach.socket: a runtime process needs its rank's attach socket");
    return 1;
  }
  StopRequest stop;
  Result<std::unique_ptr<StopOnSignals>> signals = StopOnSignals::Install(stop);
  Result<CacheGeometry> geometry = PresetGeometry(config.runtime.preset, config.cluster.world_size,
                                                  config.runtime.pages, config.runtime.rows);
  if (!signals.ok() || !geometry.ok()) {
    spdlog::error("startup failed: {}",
                  (!signals.ok() ? signals.status() : geometry.status()).ToString());
    return 1;
  }
  Result<OwnPlanes> own = OpenOwnPlanes(config, *geometry);
  if (!own.ok()) {
    spdlog::error("planes: {}", own.status().ToString());
    return 1;
  }
  Result<std::unique_ptr<attach::AttachClient>> client = AttachToRank(config, *own, stop);
  if (!client.ok() && stop.requested()) {
    spdlog::info("stopped before attaching to {}", *config.attach.socket);
    return 0;  // a stop request while the rank is not serving yet: a clean stop
  }
  if (!client.ok()) {
    spdlog::error("attach to {}: {}", *config.attach.socket, client.status().ToString());
    return 1;
  }
  spdlog::info("attached to {} with {} (rank {} of {})", *config.attach.socket, own->describe,
               config.cluster.rank, config.cluster.world_size);
  return config.cluster.rank == 0
             ? RunRankZero(config, options, *own->planes, std::move(*client), stop)
             : RunPeer(config, *own->planes, std::move(*client), stop);
}

}  // namespace strata
