// PoolCatalog: the pool manager's core (seed 2.15) as pure logic: sessions of
// instances, one prefix index per scope (store/index/index.h, reused), which
// arena slots each pooled record occupies, puts, claims and the manager's own
// eviction. It never touches the bytes (the arena does) and reads no clock:
// times come in as milliseconds of a monotone clock the caller chooses.
//
// Rules it keeps:
//   - Instances see only records of their own scope (pool_scope.h).
//   - A put is indexed as kInFlight and pinned until its commit; a claim sees
//     only committed (kReady) records.
//   - When a put needs slots, the least recently used unpinned committed leaf
//     goes, first in the put's own scope, then in the other scopes, least
//     recently used scope first. No room even so: kBusy (the instance keeps
//     the record local and retries after progress; put_rules.h).
//   - A slot is never reused while a claim holds it (slot_table.h): records
//     removed under a claim retire their slots only at its release.
//   - A claim past its deadline or without progress for 3 s fails
//     (claim_rules.h) and is unpinned; its slot holds stay until the instance
//     releases it or its session ends, so no copy ever reads a reused slot.
//   - An instance's own (kOwn) records leave the index when its session
//     ends; records that cascaded to the pool (kCascade) stay.
//   - An instance that opens a session while its previous one is open
//     replaces it: the old puts abort and claims end; its records stay.
//
// Owned by one thread; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "coordinator/pool/claim_rules.h"
#include "coordinator/pool/pool_scope.h"
#include "coordinator/pool/slot_table.h"
#include "store/index/index.h"
#include "store/tier/export_hooks.h"

namespace strata::pool {

using SessionId = StrongId<struct PoolSessionTag, uint64_t>;
using PutId = StrongId<struct PoolPutTag, uint64_t>;
using ClaimId = StrongId<struct PoolClaimTag, uint64_t>;

// Whether a record outlives its instance's session.
enum class PutKind : uint8_t {
  kCascade,  // cascaded off the end of the instance's chain: stays
  kOwn,      // announced by the instance: leaves with its session
};

struct CatalogLimits {
  uint32_t slot_count = 0;             // the arena's
  uint64_t slot_bytes = 0;             // the arena's
  uint32_t claims_in_flight_max = 16;  // across sessions
  uint64_t claim_setup_limit_ms = kManagerSetupLimitMsDefault;
};

struct PutRequest {
  PrefixKey key;
  std::optional<PrefixKey> parent;  // its nearest ancestor in the same scope
  Digest128 bucket_digest{};        // history.bucket_digest(key.consumed)
  uint64_t bytes = 0;               // the whole record, > 0
  PutKind kind = PutKind::kCascade;
};

struct PutGrant {
  PutId put;
  std::vector<SlotId> slots;  // write the record's bytes across them, in order
};

// One record of a claim, in chain order.
struct ClaimedRecord {
  PrefixKey key;
  uint64_t bytes = 0;
  uint64_t checksum = 0;
  std::vector<SlotId> slots;
};

struct ClaimGrant {
  ClaimId claim;
  std::vector<ClaimedRecord> records;
  uint64_t deadline_ms = 0;
};

// A claim the manager failed (ExpireClaims); the instance must still release it.
struct FailedClaim {
  SessionId session;
  ClaimId claim;
  ClaimHealth why = ClaimHealth::kStalled;
};

// A checkpoint an instance's runtime holds and can export (Announce).
struct Holding {
  PrefixKey key;
  uint64_t generation = 0;    // the runtime's
  Digest128 bucket_digest{};  // history.bucket_digest(key.consumed)
};

// An instance announces at most this many holdings at once; more are not taken.
inline constexpr size_t kHoldingsPerSessionMax = size_t{1} << 16;

// What the manager asks a holder to export: the record of `key` under
// `parent` (the chain's pages from start_page = parent's pages on, and the
// row), as a record image of `bytes`, into put `put`'s slots.
struct ExportRequest {
  PutId put;
  PrefixKey key;
  uint64_t generation = 0;
  std::optional<PrefixKey> parent;  // none: a root record, start_page 0
  Digest128 bucket_digest{};
  uint64_t start_page = 0;
  uint64_t bytes = 0;
  std::vector<SlotId> slots;
};

// An export BeginExport began: the holder's session and what to ask it.
struct ExportStart {
  SessionId holder;
  ExportRequest ask;
};

struct CatalogCounts {
  uint64_t records = 0;
  uint64_t scopes = 0;
  uint64_t sessions = 0;
  uint64_t claims_in_flight = 0;
  uint64_t evicted = 0;   // records the manager's eviction removed, ever
  uint64_t holdings = 0;  // announced, across sessions
};

class PoolCatalog {
 public:
  explicit PoolCatalog(const CatalogLimits& limits);
  ~PoolCatalog();
  PoolCatalog(const PoolCatalog&) = delete;
  PoolCatalog& operator=(const PoolCatalog&) = delete;

  // page_tokens > 0 (the layout fingerprint covers it). kInvalidArgument when
  // the scope is known with another page size.
  Result<SessionId> OpenSession(const InstanceId& instance, const PoolScope& scope,
                                uint32_t page_tokens, uint64_t now_ms);
  // Aborts its puts, ends its claims, removes its kOwn records. kNotFound.
  Status EndSession(SessionId session);

  // kAlreadyExists (the key is pooled in this scope), kInvalidArgument (zero
  // bytes, more bytes than the arena holds, or what PrefixIndex::Insert
  // refuses), kBusy (no room even after eviction), kNotFound (session).
  Result<PutGrant> BeginPut(SessionId session, const PutRequest& put, uint64_t now_ms);
  // The bytes are in the slots, `checksum` their XXH3-64 (claims check it):
  // the record becomes claimable.
  Status CommitPut(SessionId session, PutId put, uint64_t checksum, uint64_t now_ms);
  // The put failed: its record and slots go.
  Status AbortPut(SessionId session, PutId put);
  // Whether `put` of `session` is pending and its record is still the one
  // it made, so its slots are still its own (a parent's removal takes a
  // pending child with it, and frees its slots for the next put).
  bool PutWritable(SessionId session, PutId put) const;

  // The deepest committed record of the session's scope matching `history`
  // above resident_consumed and at most max_consumed (PrefixIndex::Lookup).
  Result<std::optional<LookupHit>> Lookup(SessionId session, const PrefixHistory& history,
                                          uint64_t resident_consumed, uint64_t max_consumed) const;
  // Claims a chain (a lookup hit's keys, ascending): every record committed,
  // then AdmitClaim. Pins the records and holds their slots until release.
  // kNotFound, kFailedPrecondition (a record not committed: kNotReady), kBusy.
  Result<ClaimGrant> Claim(SessionId session, std::span<const PrefixKey> chain, uint64_t now_ms);
  // A window of the claim moved (remote copies report them).
  Status ClaimProgress(SessionId session, ClaimId claim, uint64_t now_ms);
  // The copy ended (either way): the claim's pins and slot holds go.
  Status ReleaseClaim(SessionId session, ClaimId claim);
  // Fails running claims past their deadline or without progress (claim_rules.h).
  std::vector<FailedClaim> ExpireClaims(uint64_t now_ms);

  // An instance's holdings changed: `reset` forgets every holding it
  // announced before, then `withdrawn` go (by key and generation) and `held`
  // come (a key held again takes the new generation). `sizes` is what its
  // exports move per page and for the row. kNotFound (session);
  // kBusy past kHoldingsPerSessionMax (the rest not taken).
  Status Announce(SessionId session, bool reset, std::span<const Holding> held,
                  std::span<const Holding> withdrawn, const ExportRecordSizes& sizes);
  // The deepest holding of another session of `session`'s scope whose key
  // is history.key_at(c), above_consumed < c <= max_consumed, and that the
  // pool lacks; nullopt when none is.
  std::optional<Holding> LookupHeld(SessionId session, const PrefixHistory& history,
                                    uint64_t above_consumed, uint64_t max_consumed) const;
  // The export claim `chain` of `session` needs: its last key is not pooled
  // and another session of the scope holds it. Checks that every other
  // record is committed (as Claim), then puts the record on the holder's
  // session (BeginPut: parent chain[n-2], kCascade) and returns the ask.
  // nullopt: no export (claim it as usual). Errors: as Claim and BeginPut,
  // kFailedPrecondition when the holder announced no record sizes.
  Result<std::optional<ExportStart>> BeginExport(SessionId session,
                                                 std::span<const PrefixKey> chain, uint64_t now_ms);
  // The page size of `session`'s scope (0: no such session).
  uint32_t page_tokens(SessionId session) const;
  // Whether both sessions are open and of one scope.
  bool SameScope(SessionId a, SessionId b) const;
  bool HasSession(SessionId session) const { return sessions_.contains(session); }
  // The holder refused or failed an export of `key`: its holding goes.
  void DropHolding(SessionId holder, const PrefixKey& key);

  // Counts commits, releases, evictions and session ends: a refused put may
  // retry once it moves (put_rules.h RetryGate).
  uint64_t progress_epoch() const { return progress_epoch_; }
  CatalogCounts counts() const;
  const SlotTable& slots() const { return slots_; }
  // Index, slot and claim bookkeeping agree. O(records + slots).
  Status CheckInvariants() const;

 private:
  struct Record;
  struct ScopeState;
  struct OpenClaim;
  struct PendingPut;
  struct Session;

  Result<Session*> FindSession(SessionId session);
  Result<const Session*> FindSession(SessionId session) const;
  // Frees room for `slot_count` slots, evicting as the rules above say.
  bool MakeRoom(const ScopeId& scope, uint32_t slot_count);
  bool EvictOneFrom(ScopeState& scope);
  // Forgets removed records: their slots retire (now, or at their last hold).
  void Forget(std::span<const RemovedRecord> removed);
  void EndClaim(Session& session, ClaimId claim);
  // Unpins the claim's records that are still the ones it pinned.
  static void UnpinClaimed(ScopeState& scope, const OpenClaim& claim);
  // Removes a pending put's record if it is still the one the put made.
  void DropPending(ScopeState& scope, const PendingPut& put);
  // Aborts a session's puts and ends its claims; its records stay.
  void EndSessionState(Session& session);
  // Removes one holding of `session` from its scope's buckets (not from the session).
  static void Unfile(ScopeState& scope, SessionId session, const Holding& holding);
  // Claim's check of the records a claim reads: each committed.
  static Status CheckClaimable(const ScopeState& scope, std::span<const PrefixKey> chain);

  CatalogLimits limits_;
  SlotTable slots_;
  std::map<ScopeId, std::unique_ptr<ScopeState>> scopes_;
  std::unordered_map<uint64_t, Record> records_;  // by NodeLocation value
  std::map<SessionId, std::unique_ptr<Session>> sessions_;
  uint64_t next_id_ = 1;  // sessions, puts, claims and record locations
  uint64_t progress_epoch_ = 0;
  uint64_t evicted_ = 0;
};

}  // namespace strata::pool
