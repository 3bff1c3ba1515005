// The seeded simulation of the pool (issue 21; docs/pool.md, docs/reliability.md):
// one manager and two instances of one scope in a deterministic,
// single-threaded world with a virtual clock. The manager is the real
// decision code: AcceptHello and AnswerRequest (pool_dispatch.h) over a real
// PoolCatalog, its ExpireClaims, and a real Arena (memfd) whose slots the
// instances copy with the real CopyHashed and CheckSlotsFit. The instances
// follow the client's protocol (pool_client.cc: lookup, claim, copy out and
// check the checksum, release; put, copy in and hash, commit) and its retry
// rule for refused puts (put_rules.h). Faults drawn from the seed: instance
// crashes (seen by the manager, or not until the restart's Hello replaces the
// session), instance restarts with the same id, manager crashes and restarts
// (new generation, empty arena, instances reattach), refused puts (arena
// full, claims pinning), stalled and slow claims, a byte flipped in a pooled
// record's slot.
//
// Invariants checked after every step (docs/reliability.md):
//   - a restore the checksum passes returns exactly the bytes put (oracle
//     copy); a record whose slot was damaged is refused;
//   - no slot is granted to a put while a copy reads it or another put or a
//     committed record owns it;
//   - every claim ends (released, failed by the manager, or its session
//     ended) by its deadline; a failed claim is released within a step;
//   - the catalog's records, sessions and claims in flight match the oracle,
//     every claimable record is one the oracle holds, and a record that
//     vanished is accounted for by the manager's eviction count;
//   - PoolCatalog::CheckInvariants holds;
//   - exports (export_relay.h: instances' runtimes hold checkpoints, announce
//     them, and are asked for them through the real ExportRelay): a page id
//     an export's copy reads is never freed or reused before the copy ends;
//     every pin is released exactly once; every claim waiting for an export
//     is answered; an exported record restores the holder's bytes;
//   - lookups (lookup_tickets.h, with answers reaching the instance inside,
//     after or long after the grace): admission uses pool candidates only
//     once the answer has reached the instance, holds a pending ticket no
//     longer than its grace after the begin (a later admission never
//     waits), a late answer retries admission at most once, a ticket of a
//     lost connection answers nothing, and every ticket ends.
// The same seed always runs the same way: a failure prints its seed, and
// `strata_pool_sim --seed N` replays it with its event trace.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "store/base/status.h"

namespace strata::pool::sim {

// Deliberately wrong instance rules for the simulation's own tests: the
// invariants must catch each (PoolSimTest.TheInvariantsCatchPlantedBugs).
enum class PoolPlantedBug : uint8_t {
  kNone,
  // The instance releases a claim as soon as it is granted and copies after:
  // the claim's pin and slot holds are gone while the copy reads, so the
  // manager may hand the slots to a put.
  kReleaseBeforeCopy,
  // The instance keeps a restored record without comparing its checksum.
  kSkipChecksum,
  // Admission uses the manager's answer before it reached the instance
  // (pool candidates of a pending ticket).
  kUsePendingTicket,
  // The runtime evicts a checkpoint an export has pinned: its page ids are
  // freed (and reused) while the export's copy reads them.
  kEvictPinned,
};
std::string_view PoolPlantedBugName(PoolPlantedBug bug);

struct PoolSimOptions {
  uint64_t seed = 1;
  uint32_t steps = 400;  // then a drain without faults until every claim ends
  PoolPlantedBug planted_bug = PoolPlantedBug::kNone;
  bool trace = false;  // print every event to stderr as it happens
};

struct PoolSimCounts {
  uint64_t seeds = 0;
  uint64_t steps = 0;
  uint64_t puts_committed = 0;
  uint64_t puts_refused = 0;  // kBusy: the arena full even after eviction
  uint64_t claims_granted = 0;
  uint64_t restores_ok = 0;       // bytes checked equal to the oracle's
  uint64_t restores_refused = 0;  // failed their checksum (damaged slots)
  uint64_t claims_failed = 0;     // by the manager: stalled or past the deadline
  uint64_t instance_crashes = 0;
  uint64_t manager_restarts = 0;
  uint64_t slots_damaged = 0;
  uint64_t evictions = 0;
  uint64_t lookups = 0;          // tickets begun
  uint64_t lookups_waited = 0;   // admissions held inside the grace
  uint64_t lookups_local = 0;    // admissions that went on without the answer
  uint64_t late_retries = 0;     // late, longer answers that retried admission
  uint64_t tickets_failed = 0;   // pending tickets whose connection was lost
  uint64_t holdings = 0;         // checkpoints instances' runtimes held and announced
  uint64_t exports_started = 0;  // exports the manager asked of a holder
  uint64_t exports_relayed = 0;  // claims granted after the holder's commit
  uint64_t exports_refused = 0;  // asks the holder's runtime refused (a stale holding)
  uint64_t exports_failed = 0;   // waiting claims failed (refusal, holder gone, deadline)
  uint64_t exports_expired = 0;  // exports past their deadline (the holder still copying)
  uint64_t notices_lost = 0;     // evictions whose notice never reached the manager

  void Add(const PoolSimCounts& o);
};

struct PoolSimReport {
  uint64_t seed = 0;
  Status violation;  // OK when every invariant held
  PoolSimCounts counts;
  std::vector<std::string> trace_tail;  // the last events before the end
};

PoolSimReport RunPoolSimulation(const PoolSimOptions& options);

}  // namespace strata::pool::sim
