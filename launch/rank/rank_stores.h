// What one `strata rank` process runs, by configuration —
//   one process (world size 1, or --single-process holding every rank):
//     memory only -> MemoryStore; disk only -> DiskStore; both -> CompositeStore;
//   ranks in separate processes (disk only, seed 2.14):
//     rank zero -> coordinator + DiskStore over the sharded transport (and
//                  with a pool, the PooledStore over it);
//     peers     -> rank agent on their own record directory.
//
// The two roles have their own interfaces over a common part:
//   RankServices  — what every rank serves: its store, /metrics, health, close;
//   RuntimeDriver — rank zero or the one process: also drives the synthetic
//                   runtime and the qualification;
//   PeerRank      — a peer in its own process: serves rank zero's jobs until
//                   rank zero closes the session.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "attach/attach_server.h"
#include "cuda/gds_probe.h"
#include "launch/config/config.h"
#include "launch/ops/ops_snapshot.h"
#include "launch/runtime/qualification.h"
#include "launch/runtime/synthetic_runtime.h"
#include "store/tier/disk_store.h"
#include "store/tier/host_store.h"
#include "store/transfer/gated_transfers.h"
#include "store/transfer/plane_importer.h"
#include "wire/tls.h"

namespace strata {

// Thread: every method on the thread that opened it (the rank's main thread).
class RankServices {
 public:
  virtual ~RankServices() = default;
  // The store this process drives, or null (a peer, or no tier configured).
  virtual HostStore* store() = 0;
  // The startup summary: store kind, directory, disk limit, records, peers.
  virtual std::string Summary() const = 0;
  virtual std::string LinkSecurity() const { return "plaintext"; }
  // Which disk transport runs record jobs and why (for /status).
  virtual TransportDecision Transport() const {
    return {.kind = TransportKind::kStaged, .reason = "configured"};
  }
  virtual std::vector<PeerLinkStats> PeerLinks() const { return {}; }
  // Metric families beyond the store's (the pool client's, with
  // prefix_cache.pool). Called on the thread that owns the store.
  virtual std::vector<MetricFamily> ExtraMetrics() const { return {}; }
  // Empty when healthy; otherwise why not (for /healthz).
  virtual std::string UnhealthyReason() const { return ""; }
  // Drains and closes in dependency order; an error means memory stays alive.
  virtual Status Close() = 0;
  // With attach.socket: the planes this rank's copies address, mapped from
  // its attached runtime's memory; null otherwise.
  virtual PlaneImporter* attach_planes() { return nullptr; }
  // With attach.socket: the gate over every transfer into attach_planes()
  // (open while a runtime is attached), when this rank has one: a peer's and
  // rank zero's in separate processes; null otherwise (the store's events
  // are then the only count of its copies).
  virtual GatedTransfers* attach_gate() { return nullptr; }

  // Disk operation latencies by kind ("store", "fetch", "truncate",
  // "unlink"), start to completion on every rank, for /metrics.
  std::vector<JobLatency> JobLatencies() const;

 protected:
  // Given to the disk tier (DiskStoreOptions / CompositeStoreOptions).
  std::shared_ptr<DiskJobLatencies> latencies_ = std::make_shared<DiskJobLatencies>();
};

// Rank zero, or the one process holding every rank: runs the synthetic
// runtime over its store, or without it serves an attached runtime
// (attach.socket; always with ranks in separate processes).
class RuntimeDriver : public RankServices {
 public:
  // Only without attach.socket; valid until Close().
  virtual SyntheticRuntime& runtime() = 0;
  // The qualification's phases over runtime() and every rank's records.
  virtual Qualification MakeQualification() = 0;
  // True when the one process holds a memory and a disk tier (phase 4 applies).
  virtual bool has_memory_and_disk() const { return false; }
  // Phase 4 (one process, memory + disk): memory hit, spill, read-through.
  // Without both tiers: a failed report saying so.
  virtual PhaseReport CompositePhase();
  // cluster.rendezvous = "attach": the attach server through which rank zero's
  // runtime attached (and learned the rendezvous address) before the peers
  // joined, still without a store; null otherwise. Taken once.
  virtual std::unique_ptr<attach::AttachServer> TakeAttachServer() { return nullptr; }
};

// A peer rank in its own process: a rank agent serving rank zero's jobs.
class PeerRank : public RankServices {
 public:
  // False once the agent ended (rank zero closed the session, or it failed).
  virtual bool Serving() const = 0;
  // Still in the rendezvous or join: rank zero has no session with it to
  // drain, so a signal stops it at once.
  virtual bool Joining() const = 0;
  // Waits until the agent ended or `deadline` passes; true when it ended.
  virtual bool WaitEnded(std::chrono::steady_clock::time_point deadline) = 0;
  // cluster.rendezvous = "attach": what takes rank zero's rendezvous from its
  // runtime's Hello (AttachServerOptions::take_rendezvous); unset otherwise.
  virtual std::function<Status(const attach::AttachRendezvous&)> attach_rendezvous_sink() {
    return {};
  }
};

// The role this process plays: exactly one of the two.
using RankRole = std::variant<std::unique_ptr<RuntimeDriver>, std::unique_ptr<PeerRank>>;

// The common part of either role (OpenRankStores never sets a null one).
RankServices& ServicesOf(const RankRole& role);
// The role's runtime driver, or null on a peer.
RuntimeDriver* DriverOf(const RankRole& role);
// The role's peer, or null on rank zero or the one process.
PeerRank* PeerOf(const RankRole& role);

// The model identity records are named by and an attached runtime must
// declare: "synthetic/<runtime.preset>".
std::string RankModelIdentity(const RankConfig& config);

// The TLS context of [tls] (the record links', the rendezvous' and the pool's
// TCP control address), or null (plaintext) when it is not configured.
Result<std::shared_ptr<const wire::TlsContext>> RankTls(const RankConfig& config);

// Opens what `config` asks for. Errors name the setting or the peer at fault.
Result<RankRole> OpenRankStores(const RankConfig& config, uint64_t seed);

}  // namespace strata
