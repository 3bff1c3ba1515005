// PoolSimWorld: the state of one seed of the pool simulation (pool_sim.h):
// the manager (catalog, arena, generation), two instances with their claims
// and puts in flight, the oracle of committed records, and the checks.
// Single-threaded; time is the virtual now_ms_.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "coordinator/pool/arena.h"
#include "coordinator/pool/export_relay.h"
#include "coordinator/pool/hash_pipeline.h"
#include "coordinator/pool/lookup_grace.h"
#include "coordinator/pool/lookup_tickets.h"
#include "coordinator/pool/pool_catalog.h"
#include "coordinator/pool/pool_dispatch.h"
#include "coordinator/pool/put_rules.h"
#include "store/base/prefix_history.h"
#include "store/base/splitmix.h"
#include "tests/sim/pool/pool_sim.h"

namespace strata::pool::sim {

inline constexpr uint64_t kStepMs = 500;
inline constexpr uint64_t kSlotBytes = 4096;
inline constexpr uint32_t kSlotCount = 12;
inline constexpr uint32_t kPageTokens = 64;
inline constexpr uint32_t kSubjects = 10;  // records the instances put and claim
inline constexpr uint32_t kInstances = 2;
// Each instance's runtime: page ids of its planes, and pages per checkpoint.
inline constexpr uint32_t kGpuPages = 12;
inline constexpr uint32_t kPagesPerHolding = 2;
// What an export moves per page and for the row (announced).
inline constexpr ExportRecordSizes kExportSizes{.page_record_bytes = 1000,
                                                .row_segment_bytes = 500};

// How a claim's copy behaves, drawn when it is granted.
enum class CopyPace : uint8_t {
  kNormal,   // progresses every step, done in 1-4 steps
  kStalled,  // never progresses: the manager's no-progress timeout fails it
  kSlow,     // progresses every step but outlasts its deadline
};

struct SimClaim {
  SessionId session;
  ClaimId claim;
  uint64_t deadline_ms = 0;
  uint64_t last_progress_ms = 0;  // the grant, or the last progress reported
  std::vector<ClaimedRecord> records;
  std::vector<std::vector<std::byte>> expected;  // the oracle's bytes, per record
  CopyPace pace = CopyPace::kNormal;
  uint32_t steps_left = 0;
  bool registered = true;  // the manager still counts it (not released)
  bool failed = false;     // failed by ExpireClaims
};

struct SimPut {
  SessionId session;
  PutId put;
  uint32_t subject = 0;
  PutKind kind = PutKind::kCascade;
  std::vector<SlotId> slots;
  std::vector<std::byte> bytes;
  uint32_t steps_left = 0;
};

// A lookup whose first admission went on without its answer (pending): it
// waits for the late answer, which may retry admission once.
struct SimLookup {
  LookupTicket ticket;
  uint32_t subject = 0;
  uint64_t connection = 0;  // the session it was asked on
  uint64_t request_id = 0;
  uint64_t begun_us = 0;
  uint64_t delivery_us = 0;      // when the manager's answer reaches the instance
  std::vector<PrefixKey> chain;  // that answer
  PrefillSubmitted prefill = PrefillSubmitted::kNo;
  RequestInputs inputs = RequestInputs::kText;
};

// A checkpoint an instance's runtime holds in its planes.
struct SimHolding {
  uint64_t generation = 0;
  std::vector<uint32_t> pages;   // its page ids
  uint32_t pins = 0;             // exports pinning it
  std::vector<std::byte> image;  // what an export of it writes (the record image)
};

// An export the manager asked of an instance.
struct SimExport {
  ExportRequest ask;
  uint32_t subject = 0;
  SessionId session;  // the session it was asked on
  bool pinned = false;
  uint64_t generation = 0;      // of the holding pinned
  std::vector<uint32_t> pages;  // what its copy reads until it ends
  uint32_t steps_left = 0;
};

// A claim waiting for an export (answered by the relay).
struct SimWaiting {
  PoolClaim claim;
  uint32_t subject = 0;
};

struct SimInstance {
  std::vector<std::string> sources;  // the same across restarts: the same id
  InstanceId id{};
  bool up = true;
  uint32_t restart_in = 0;  // steps until a crashed instance starts again
  std::optional<SessionId> session;
  std::vector<SimClaim> claims;
  std::vector<SimPut> puts;
  // A crash the manager did not see: the old session's claims and puts stay
  // until the restart's Hello replaces it (no copy runs for them).
  std::optional<SessionId> zombie_session;
  std::vector<SimClaim> zombie_claims;
  size_t zombie_puts = 0;
  RetryGate gate;
  LookupTickets tickets{kLocalGraceUs};
  std::vector<SimLookup> late_lookups;
  // The runtime's planes (exports): what it holds by subject, and each page
  // id's holder (its generation; 0: free).
  std::map<uint32_t, SimHolding> gpu;
  std::vector<uint64_t> page_owner = std::vector<uint64_t>(kGpuPages, 0);
  std::vector<SimExport> exports;
  std::vector<SimWaiting> waiting;
};

struct OracleRecord {
  std::vector<std::byte> bytes;
  std::vector<SlotId> slots;
  InstanceId owner{};
  PutKind kind = PutKind::kCascade;
};

class PoolSimWorld {
 public:
  explicit PoolSimWorld(const PoolSimOptions& options);
  PoolSimReport Run();

 private:
  // pool_sim_world.cc: the manager and the faults.
  void Step(bool faults);
  void StartManager();
  void CrashManager();
  void CrashInstance(SimInstance& inst);
  void DamageSlot();
  void ExpireClaims();
  // pool_sim_instance.cc: one instance's turn, following the client's protocol.
  void InstanceTurn(SimInstance& inst, bool new_work);
  void Attach(SimInstance& inst);
  void AdvanceClaims(SimInstance& inst);
  void FinishCopy(SimInstance& inst, SimClaim& claim);
  void AdvancePuts(SimInstance& inst);
  void StartPut(SimInstance& inst);
  // pool_sim_lookups.cc: a request's ticket, admission and late answer
  // (lookup_tickets.h), as PooledStore::LookupFor runs them.
  void StartLookup(SimInstance& inst);
  void AdvanceLateLookups(SimInstance& inst);
  // Claims the pooled `chain` of `subject`; a late retry tolerates a record
  // gone since its answer.
  void Claim(SimInstance& inst, uint32_t subject, const std::vector<PrefixKey>& chain,
             bool late_retry);
  void Release(SimInstance& inst, SimClaim& claim);
  PoolMessage Ask(SessionId session, const PoolMessage& request);
  // pool_sim_exports.cc: the instances' runtimes hold checkpoints and
  // serve the manager's export asks (export_relay.h).
  void Hold(SimInstance& inst);
  void EvictGpu(SimInstance& inst);
  void ServeExports(SimInstance& inst);
  void FinishExport(SimInstance& inst, SimExport& e);
  // A claim whose endpoint only a holding has: through the relay. False:
  // not an export (claim it as usual).
  bool ClaimThroughRelay(SimInstance& inst, uint32_t subject, const PoolClaim& claim);
  void DeliverRelayAnswers(std::vector<RelayAnswer> answers);
  // The claim `answer` granted to `inst` for `subject`, copied as any.
  void TakeGrant(SimInstance& inst, uint32_t subject, const PoolClaimAnswer& answer);
  std::optional<uint32_t> SubjectOf(const PrefixKey& key) const;
  // pool_sim_checks.cc: the invariants.
  void CheckStep();
  // Matches the oracle with what the catalog lets a claim see; records that
  // vanished must be the manager's evictions.
  void Reconcile();
  void CheckPutSlots(const std::vector<SlotId>& granted, const SimInstance& putter);
  bool Quiet() const;
  void Violation(const std::string& what);
  void Event(const std::string& what);
  std::string Name(const SimInstance& inst) const;

  PoolSimOptions options_;
  SplitMixRandom rng_;
  uint64_t now_ms_ = 1'000;
  uint64_t step_ = 0;
  uint64_t next_request_ = 1;
  std::vector<PrefixHistory> subjects_;
  std::vector<PrefixKey> subject_keys_;
  std::vector<SimInstance> instances_;

  // The manager; null while it is down.
  std::unique_ptr<PoolCatalog> catalog_;
  std::unique_ptr<ExportRelay> relay_;
  uint64_t next_generation_ = 1;
  std::unique_ptr<Arena> arena_;
  HashPipeline hash_;  // every copy's, as an instance's PoolClient hashes them
  ManagerIdentity identity_;
  uint32_t manager_restart_in_ = 0;
  uint64_t evicted_seen_ = 0;

  std::map<uint32_t, OracleRecord> oracle_;  // by subject: committed records
  std::set<uint32_t> damaged_slots_;         // a byte flipped since the slot was last written

  Status violation_;
  PoolSimCounts counts_;
  std::deque<std::string> tail_;
};

}  // namespace strata::pool::sim
