// The qualification the main job runs (seed section 4, multihost_cache): on
// rank zero, the synthetic runtime drives the store through phases, and after
// each phase every rank must hold the same record files (names and sizes)
// and every restored byte must be right (the runtime checks each one).
//
// An attached runtime process (`strata runtime`) cannot read its ranks'
// record directories: it gives no listings, every publication's kStored
// event is still awaited after each phase, and the launcher compares the
// record files once the ranks stopped (tests/process/runtime_cluster_test.sh).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "launch/runtime/synthetic_runtime.h"

namespace strata {

struct QualificationOptions {
  uint32_t conversations = 4;  // each with a branch
  uint64_t first_turn_tokens = 1500;
  uint64_t turn_tokens = 400;
  uint32_t turns = 3;  // stored turns per conversation
};

struct PhaseReport {
  std::string name;
  bool ok = false;
  std::string detail;  // why it failed, or a one-line summary
  uint64_t host_hits = 0;
  uint64_t gpu_hits = 0;
  uint64_t restored_bytes = 0;
  double restore_gbps = 0;
  uint64_t records = 0;  // record files per rank after the phase
};

// Every rank's "<file> <bytes>" listing, rank order; null: not compared
// here (each phase reports 0 records).
using RecordListings = std::function<Result<std::vector<std::vector<std::string>>>()>;
// Waits until the store has no job under way (bounded); false on timeout.
// Null: nothing to wait for beyond the publications' events.
using WaitIdle = std::function<bool()>;

class Qualification {
 public:
  Qualification(SyntheticRuntime& runtime, RecordListings listings, WaitIdle idle,
                QualificationOptions options = {});

  // Phase 1: conversations and branches are published; continuing one whose
  // checkpoint is still GPU-resident is a GPU-cache hit with no host hit.
  PhaseReport GpuHit();
  // Phase 2: the runtime evicts its GPU copies; continuing every
  // conversation restores it from the host store, byte-exact.
  PhaseReport HostRestore();
  // Phase 3 (a fresh process over the same record directories): replaying
  // the same conversations restores their stored prefixes from disk.
  PhaseReport RestoreAfterRestart();

 private:
  PhaseReport Finish(PhaseReport r, const RuntimeStats& before, double seconds_before);
  Status SameFilesOnEveryRank(uint64_t* records);

  SyntheticRuntime& rt_;
  RecordListings listings_;
  WaitIdle idle_;
  QualificationOptions options_;
  std::vector<uint32_t> conversations_;
};

}  // namespace strata
