// RankStores: what one `strata rank` process runs, by configuration —
//   one process (world size 1, or --single-process holding every rank):
//     memory only -> MemoryStore; disk only -> DiskStore; both -> CompositeStore;
//   ranks in separate processes (disk only, seed 2.14):
//     rank zero -> coordinator + DiskStore over the sharded transport;
//     peers     -> rank agent on their own record directory.
// Rank zero (or the single process) also owns the synthetic runtime.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "launch/config/config.h"
#include "launch/ops/ops_snapshot.h"
#include "launch/runtime/qualification.h"
#include "launch/runtime/synthetic_runtime.h"
#include "store/tier/disk_store.h"
#include "store/tier/host_store.h"

namespace strata {

class RankStores {
 public:
  virtual ~RankStores() = default;
  // The store this process drives, or null (a peer, or no tier configured).
  virtual HostStore* store() = 0;
  // True when this process runs the synthetic runtime (rank zero).
  virtual bool drives_runtime() const = 0;
  virtual SyntheticRuntime& runtime() = 0;
  virtual Qualification MakeQualification() = 0;
  virtual bool has_memory_and_disk() const { return false; }
  // Phase 4 (one process, memory + disk): memory hit, spill, read-through.
  virtual PhaseReport CompositePhase();
  // The startup summary: store kind, directory, disk limit, records, peers.
  virtual std::string Summary() const = 0;
  virtual std::string LinkSecurity() const { return "plaintext"; }
  virtual std::vector<PeerLinkStats> PeerLinks() const { return {}; }
  virtual std::string UnhealthyReason() const { return ""; }
  // A peer keeps serving while its link to rank zero is up.
  virtual bool Serving() const { return true; }
  // A peer still in the rendezvous or join: rank zero has no session with
  // it to drain, so a signal stops it at once.
  virtual bool Joining() const { return false; }
  // Drains and closes in dependency order; an error means memory stays alive.
  virtual Status Close() = 0;

  // Disk operation latencies by kind ("store", "fetch", "truncate",
  // "unlink"), start to completion on every rank, for /metrics.
  std::vector<JobLatency> JobLatencies() const;

 protected:
  // Given to the disk tier (DiskStoreOptions / CompositeStoreOptions).
  std::shared_ptr<DiskJobLatencies> latencies_ = std::make_shared<DiskJobLatencies>();
};

// Opens what `config` asks for. Errors name the setting or the peer at fault.
Result<std::unique_ptr<RankStores>> OpenRankStores(const RankConfig& config, uint64_t seed);

}  // namespace strata
