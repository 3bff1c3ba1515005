// The seeded simulation of rank zero's coordinator logic with its peer ranks
// (issue 11; docs/reliability.md). One seed builds a world of 2-4 ranks and
// runs several sessions, each a real ShardedTransport (with its
// CompletionTracker and LinkInbox) over a simulated network (SimNetwork:
// real wire frames, delays, reordering across links, resets, half-open
// links, a peer that stops reading) and simulated disks (SimDisk: full disk,
// EIO), driven by a model of the disk store that owns the device ids. Faults
// are drawn from the seed; each session ends with rank zero's Close or with
// rank zero killed, and every restart runs the real join agreement (Agree,
// VerdictsFor) over the ranks' surviving files.
//
// Invariants checked after every step:
//   - a job is reported only once every rank finished it and none still
//     holds it (disk, hold queue or network); reported OK only when every
//     rank's disk finished it OK; filesystem-full survives aggregation;
//   - a failed store (or a completed unlink) leaves no rank holding the
//     record, unless the failure says its cleanup failed;
//   - every device page and state slot any rank may still touch is held by
//     the store for that same job (after a stop, ids are never reused);
//   - a stopped transport reports nothing and refuses new jobs; every job is
//     reported or the transport stops within its timeout (liveness);
//   - every committed record stays on every rank, byte-for-byte (digest);
//   - a clean session (no link or rank fault) closes with every drain
//     confirmed;
//   - at restart, Agree() equals the intersection rule (sim_oracle.h), every
//     rank ends with identical records, and every committed record survives
//     unless it was damaged on some rank on purpose.
// The same seed always runs the same way: every failure prints its seed and
// replays with `strata_sim --seed N --trace`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/base/status.h"
#include "tests/sim/planted_bug_rules.h"

namespace strata::sim {

struct SimOptions {
  uint64_t seed = 1;
  uint32_t sessions = 4;  // each followed by a restart and the agreement
  uint32_t steps_per_session = 200;
  // A planted bug for the simulation's own tests: peers run deliberately
  // wrong serving rules (planted_bug_rules.h).
  PlantedBug planted_bug = PlantedBug::kNone;
  bool trace = false;  // print every event to stderr as it happens
};

struct SimCounts {
  uint64_t seeds = 0;
  uint64_t steps = 0;
  uint64_t jobs_submitted = 0;
  uint64_t jobs_ok = 0;
  uint64_t jobs_failed = 0;
  uint64_t submits_refused = 0;  // kBusy from the transport
  uint64_t stops = 0;            // transports that stopped
  uint64_t restarts = 0;
  uint64_t records_checked = 0;  // records verified identical on every rank at a restart
  uint64_t frames = 0;
  uint64_t link_resets = 0;
  uint64_t rank_kills = 0;  // peers and rank zero
  uint64_t half_open_links = 0;
  uint64_t stalls = 0;
  uint64_t delay_spikes = 0;
  uint64_t disk_full = 0;  // stores failed with ENOSPC
  uint64_t io_errors = 0;  // jobs failed with EIO
  uint64_t damaged_records = 0;
  uint64_t hostile_messages = 0;  // protocol violations a peer sent

  uint64_t faults() const {
    return link_resets + rank_kills + half_open_links + stalls + delay_spikes + disk_full +
           io_errors + damaged_records + hostile_messages;
  }
  void Add(const SimCounts& o);
};

struct SimReport {
  uint64_t seed = 0;
  uint32_t world_size = 0;
  Status violation;  // OK when every invariant held
  SimCounts counts;
  std::vector<std::string> trace_tail;  // the last events before the end
};

SimReport RunSimulation(const SimOptions& options);

}  // namespace strata::sim
