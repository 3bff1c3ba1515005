// PooledStore: an instance's local tiers joined to its pool manager (seed
// 2.15, on the manager's host), in any of the pooled configurations: memory,
// disk, memory + disk (a composite), or no local tier at all.
//
// Lookups answer from the local chain and, when the pool holds a longer
// prefix (ChooseSource: longest prefix, then the closest tier), with a hit
// for the pooled chain, sized from the manager's answer (PooledHitOf) and
// claimed by nothing yet. The manager answers the chain from its root; the
// hit starts after the deepest record the landing tier holds at or below the
// GPU-resident tokens, so a claim above GPU-held pages carries those pages'
// records too when the landing tier lacks them (an import lands only on a
// parent the tier holds), and the restore skips them.
//
// Its Fetch starts the claim and returns; the claim advances in Poll, each
// step on an answer or a copy that has already arrived: the grant, then
// every record copied out of the slots and checked in the same pass on the
// copier's thread (the manager's checksum, then the image), the release once
// the copy came back, the import into the landing tier's RecordIntake, and
// that tier's ordinary Fetch into the ticket, whose kFetched or
// kFetchFailed arrives like any restore's. The landing tier is the memory
// tier itself when the local chain is one; with ranks in separate processes
// the disk tier (PooledTiers::disk_landing:
// the claim waits for its writes on every rank before the Fetch);
// otherwise a small MemoryStore of its own (claims land in DRAM, the
// closest tier, and stay there as a local copy until its LRU drops them;
// they are pooled already). A failed claim (a refusal, a checksum, a lost
// connection, the requester's deadline of claim_rules.h) falls back to a
// local copy of the same endpoint when a local tier holds one by then, and
// otherwise reports kFetchFailed: the runtime recomputes.
//
// As the EvictionSink of the end of the local chain (the memory tier, or
// the disk tier when there is one) it parks every record evicted from there,
// with its held ancestors, as record images in a PutQueue (put_queue.h), the
// source retained until the manager accepts; the tier drops its own copy.
// The queue moves them to the manager (kind `cascade`) on answers that have
// arrived, in OnEvicted and Poll, never waiting; refusals retry after the
// manager's progress or a back-off. Close gives what is parked a bounded
// time to reach the manager (FlushPuts).
//
// Exports (seed 2.15, "Exports"; docs/pool.md): with an ExportCopier
// (PooledTiers::export_copier), every checkpoint Store is given is a
// holding (HeldCheckpoints), announced to the manager from Poll, and
// withdrawn on the runtime's eviction notice (EvictionsLost, or a new
// session, announces the whole book again). When another instance claims a
// holding, the manager asks for its export (PoolExportAsk): RequestExport
// asks the runtime through Poll (kExportRequested) and the ExportLedger
// keeps it; once pinned, the copier copies the chain out of the planes, the
// pin is handed back (kExportEnded from the next Poll: FinishExport), and
// the record image is written into the slots the ask granted and
// committed. A refusal, a rejected pin, a failed copy or an image of the
// wrong size aborts the put instead (the requester falls back). The
// notices also go on to the tier Store offers to (its abandoned retries,
// RetryLedger).
//
// Lookups are two-step (seed 2.15, "Lookups"; HostStore::BeginLookup):
// BeginLookup sends the manager's lookup and returns a ticket at once; the
// answer is filed against it whenever the store reads the socket (Poll,
// LookupFor, or while a put waits). LookupFor admits with pool
// candidates only if the ticket is ready; a pending one is waited for at
// most the rest of its grace (PoolLink::lookup_grace_us: 2 ms on this
// host's socket, over TCP four measured round trips), once; a late answer may
// serve one later LookupFor (the retry; the runtime decides it with
// DecideLateAnswer on TicketStatus). The one-step Lookup is BeginLookup,
// LookupFor and EndLookup at once.
//
// With no local tier (pool only, seed 2.15: "the manager's arena supplies
// intake") Store copies the checkpoint out into the landing tier and, once
// that copy-out is stored, parks the record (with the ancestors the landing
// tier holds that were not parked before) for the manager as a cascaded
// record: the pool is this instance's only retention, so what it publishes
// is kept past its session, subject to the manager's own eviction. A
// record whose parent's copy-out is still under way waits for it, so that
// the parent is parked first; a put whose parent the manager does not hold
// (it refused or evicted it) is refused, and that record stays local. The
// landing copy stays until the tier's LRU drops it. Close waits up to
// kPutFlushBound for copy-outs still under way, so that they are parked.
//
// Demotion before the tier fills: a disk tier ending the chain offers its
// coldest records as copies while above its headroom floor (DiskFiles,
// kDemotionHeadroomDivisor) and lets each go once the manager accepted it.
//
// Not built: the memory tier's demotion before it fills (a composite's DRAM
// spills to disk under its own rules), claims straight into the planes from
// the registered arena (a claim copies through the landing tier).
//
// Thread: the owner's (model worker) thread. No call waits for the manager
// except LookupFor, at most the lookup grace, and Close (FlushPuts). A
// claim's copies out of the arena run on the store's ClaimCopier thread
// (claim_copier.h); the import into the landing tier and the puts' copies
// run in Poll, on the owner's thread.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "coordinator/pool/claim_copier.h"
#include "coordinator/pool/export_copier.h"
#include "coordinator/pool/export_ledger.h"
#include "coordinator/pool/held_checkpoints.h"
#include "coordinator/pool/lookup_tickets.h"
#include "coordinator/pool/pool_link.h"
#include "coordinator/pool/pooled_hit.h"
#include "coordinator/pool/put_queue.h"
#include "store/tier/disk_store.h"
#include "store/tier/host_store.h"
#include "store/tier/record_handover.h"

namespace strata::pool {

// How long Close waits for parked puts to reach the manager.
inline constexpr std::chrono::milliseconds kPutFlushBound{2'000};

// Counters of the instance's pool traffic (metrics `strata_pool_*`).
struct PoolInstanceStats {
  uint64_t lookups = 0;  // manager lookups asked (tickets begun)
  // Admissions that went local while their ticket was pending past its
  // grace, and lookups that could not be sent.
  uint64_t lookup_failures = 0;
  uint64_t lookup_waits = 0;            // admissions that waited inside the grace
  uint64_t lookup_tickets_refused = 0;  // requests without a ticket: the table was full
  uint64_t late_answers = 0;            // answers filed after an admission went local
  uint64_t late_retries = 0;            // later admissions that used a late answer
  uint64_t claims = 0;                  // chains claimed, imported and fetched from DRAM
  uint64_t claim_failures = 0;          // claims that fell back to local or recompute
  uint64_t claim_fallbacks = 0;         // of those, restored from a local copy instead
  uint64_t claims_in_flight = 0;        // gauge: claims begun by Fetch, not yet landed or failed
  // Gauge: claims whose fetch failed (deadline, lost connection) that still
  // hold or await their grant or copy; released when it comes back.
  uint64_t claims_failed_held = 0;
  uint64_t claimed_records = 0;
  uint64_t claimed_bytes = 0;
  uint64_t puts = 0;  // records the manager accepted (evicted ones and their ancestors)
  uint64_t put_bytes = 0;
  // Records a pool-only instance published: stored in its landing tier, then
  // parked for the manager (its ancestors parked with it not counted).
  uint64_t published = 0;
  std::map<std::string, uint64_t> put_refusals;  // by status code name
  uint64_t put_retries = 0;     // parked chains sent again after a refusal or failure
  uint64_t put_probes = 0;      // empty lookups asking for the manager's progress
  uint64_t parked_records = 0;  // gauge: evicted records waiting for the manager
  uint64_t parked_bytes = 0;    // gauge: their image bytes
  // Parked records given up, by reason (put_queue.h: queue, oversize, refused).
  std::map<std::string, uint64_t> put_abandoned;
  // Records a disk tier demoted that the manager did not take (kept local).
  uint64_t demotions_given_up = 0;
  // Evicted records the manager did not take: the abandoned ones, and those
  // of an instance that never attached (or lost sharing for good).
  uint64_t dropped_end_of_chain = 0;
  std::string end_of_chain_tier = "memory";  // the tier they were dropped from
  uint64_t reconnects = 0;
  bool attached = false;
  ExportLedgerCounts exports;     // requests, pins, refusals and ends
  uint64_t exports_served = 0;    // export records written into the slots and committed
  uint64_t exports_aborted = 0;   // exports asked that were aborted (refused, failed)
  uint64_t holdings = 0;          // gauge: checkpoints announced as held
  uint64_t eviction_notices = 0;  // checkpoints the runtime reported retired
  uint64_t evictions_lost = 0;    // times the runtime's notice queue overflowed
};

// The tiers a PooledStore joins to the pool; all outlive it.
struct PooledTiers {
  HostStore* local = nullptr;  // the local chain (memory, disk or composite); null: none
  // Where claimed records are imported: `local` when it is a MemoryStore,
  // else a MemoryStore of the pool's own (then never `local`).
  HostStore* landing = nullptr;
  RecordIntake* intake = nullptr;  // the landing tier's
  // Set when claims land in this disk tier (then also `local`, `landing` and
  // `intake`: ranks in separate processes, which have no memory tier): its
  // imports commit once every rank wrote its share, so a claim's Fetch waits
  // for DiskStore::Imported to say so (within the claim's deadline).
  const DiskStore* disk_landing = nullptr;
  // Label of strata_host_cache_dropped_total{tier} for records the end of
  // the local chain dropped after the manager did not take them.
  std::string end_of_chain_tier = "memory";
  // The local record layout's page record and row segment bytes: what an
  // export moves per page and for the row, and what a pooled hit's `bytes`
  // counts. Unknown (zeros) rejects every pinned export and sizes pooled
  // hits at 0 bytes.
  ExportRecordSizes record_sizes{};
  // Pool only (`local` null): the landing tier, read for the records Store
  // copied into it, which are then parked for the manager. Null: a store
  // with no local tier publishes nothing (kDisabled).
  const RecordSource* publish_from = nullptr;
  // The byte budget of evicted records parked until the manager takes them.
  uint64_t put_queue_bytes = kPutQueueBytesDefault;
  // Copies exports out of the planes (export_copier.h); null: the instance
  // announces nothing and aborts every export asked of it.
  ExportCopier* export_copier = nullptr;
};

class PooledStore final : public HostStore, public EvictionSink {
 public:
  // The caller makes this store the end of the local chain's eviction sink.
  PooledStore(PooledTiers tiers, std::unique_ptr<PoolLink> link);

  // BeginLookup, LookupFor and EndLookup at once (waits at most the grace).
  std::optional<HostHit> Lookup(const PrefixHistory& history, uint64_t resident_tokens,
                                uint64_t before) override;
  // Sends the manager's lookup without waiting; no ticket while local (not
  // connected) or at kLookupTicketsMax open tickets.
  LookupTicket BeginLookup(const PrefixHistory& history, uint64_t resident_tokens,
                           uint64_t before) override;
  // The local hit, or the pool's chain (not claimed yet: Fetch claims it)
  // when the ticket allows pool candidates (lookup_tickets.h) and the pool's
  // chain is longer. `history` must be the one the ticket was begun with (a
  // pooled chain that does not match it is ignored).
  std::optional<HostHit> LookupFor(LookupTicket ticket, const PrefixHistory& history,
                                   uint64_t resident_tokens, uint64_t before) override;
  LookupTicketStatus TicketStatus(LookupTicket ticket) const override;
  void EndLookup(LookupTicket ticket) override;
  // The local chain's Store. Pool only: the landing tier's, the record then
  // parked for the manager once stored (kDisabled while not sharing, or
  // without `publish_from`).
  StoreOutcome Store(const PublishedCheckpoint& checkpoint) override;
  // A pooled hit: sends the claim and returns (kUnavailable, nothing
  // started, without a connection); Poll lands it. Others: the tier's.
  Status Fetch(const HostHit& hit, const InboundTicket& ticket) override;
  // Claims moved along (their failures as kFetchFailed), the local tiers'
  // events, then the exports' (requests and ends).
  void Poll(uint64_t now_ms, std::vector<StoreEvent>& events) override;
  void NotifyOnProgress(std::shared_ptr<WakeSignal> signal) override;
  // The manager connection's socket while connected (its answers move the
  // parked puts and the lookup tickets on the next Poll); else -1.
  int PollFd() const override;
  // The local chain's, with the landing tier's memory counters, lookups,
  // hits and restores added when the landing tier is its own.
  StoreStats Stats() const override;
  // Parks what copy-outs still under way store (pool only), gives parked
  // puts kPutFlushBound to reach the manager, ends every claim not landed
  // with kFetchFailed (reported by the next Poll), lets the export copy
  // under way finish (kPutFlushBound; the others are aborted, every pin's
  // end reported by the next Poll), then closes the tiers.
  Status Close() override;

  // Parks the chain's held ancestors (root first; one the manager holds
  // already answers kAlreadyExists without bytes) and the evicted record
  // for the manager, and moves the parked puts along without waiting.
  void OnEvicted(std::span<const RecordView> chain) override;
  // Demotions (record_handover.h) are taken while sharing, connected and
  // with nothing parked: a record waiting in the put queue already holds
  // the manager's pace. A demoted chain is parked as a copy; the put queue
  // reports each record's outcome, handed to the tier by
  // TakeDemotionOutcomes.
  bool TakesDemotions() const override;
  void OnDemoted(std::span<const RecordView> chain) override;
  void TakeDemotionOutcomes(std::vector<PrefixKey>& accepted,
                            std::vector<PrefixKey>& given_up) override;

  // Moves the parked puts along, waiting for the manager's answers, until
  // none is parked, `bound` passed, or the rest wait for a refusal's gate;
  // whether none is parked. Close calls it with kPutFlushBound.
  bool FlushPuts(std::chrono::milliseconds bound);

  void ExportPinned(ExportId export_id, const ExportDescription& description) override;
  void ExportRefused(ExportId export_id, ExportRefusal reason) override;
  void Evicted(std::span<const EvictionNotice> notices) override;
  void EvictionsLost() override;

  // The ledger's entry points, which the manager's asks drive (Poll):
  // RequestExport reports kExportRequested from the next Poll;
  // FinishExport, once the export's copies drained, reports kExportEnded
  // (kNotFound: the export is not open, e.g. a second end).
  ExportId RequestExport(const ExportAsk& ask);
  Status FinishExport(ExportId export_id);
  // An open export's pinned chain; null when it is not open.
  const ExportDescription* open_export(ExportId export_id) const {
    return exports_.description(export_id);
  }

  PoolInstanceStats pool_stats() const;
  const PoolLink& link() const { return *link_; }
  ClaimCopier& claim_copier() { return copier_; }

 private:
  // A claim begun by Fetch, landed by Poll (pooled_store_claims.cc).
  struct PendingClaim {
    uint64_t connection = 0;  // the link connection it was sent on
    uint64_t request = 0;     // SendClaim's id there
    HostHit hit;
    InboundTicket ticket;
    uint64_t deadline_ms = 0;  // the requester's (claim_rules.h), on the link's clock
    // The fetch already failed (deadline, lost connection): a grant that
    // still comes is released at once, a copy in flight is dropped when it
    // comes back.
    bool given_up = false;
    // Granted: the claim the manager holds for it, released once its copy
    // came back (the ClaimCopier job `copy_job`, nonzero from then on).
    ClaimId granted{};
    uint64_t copy_job = 0;
  };
  // A claim imported into tiers_.disk_landing, waiting for its writes.
  struct LandingClaim {
    HostHit hit;
    InboundTicket ticket;
    uint64_t deadline_ms = 0;  // the requester's, as the claim had it
    // The chain's checked images; imported in order, each retried while the
    // tier has no room yet (its evictions' unlinks still run).
    std::vector<std::vector<std::byte>> records;
    size_t imported = 0;
  };
  // Fetch of a pooled hit: sends the claim and queues it.
  Status BeginClaim(const HostHit& hit, const InboundTicket& ticket);
  // Moves every pending claim along on what the client has read, appending
  // the failures' kFetchFailed.
  void AdvanceClaims(std::vector<StoreEvent>& events);
  // Hands a granted claim's copies to the copier.
  void StartClaimCopy(PoolClient& client, PendingClaim& claim, const PoolClaimAnswer& grant);
  // A copy came back: releases its claim, then lands it or fails it.
  void FinishClaimCopy(ClaimCopyJob& job, std::vector<StoreEvent>& events);
  // Releases granted claim `claim` on the connection that granted it (none:
  // the session's end released it).
  void ReleaseClaim(const PendingClaim& claim);
  // Imports a claim's checked records into the landing tier and starts its
  // Fetch; an error leaves the landing tier as it was apart from records
  // already imported (they are whole and checked).
  Status ImportClaimed(const PendingClaim& claim, std::vector<std::vector<std::byte>>& records);
  // The bytes a claim of pooled `hit` moves: every page of its chain (the
  // skipped ones too) and the row.
  uint64_t ClaimedBytes(const HostHit& hit) const;
  // Imports a landing claim's records not yet imported, in order; kBusy
  // when the tier has no room yet (retried on a later Poll).
  Status ImportLanding(LandingClaim& claim);
  // A claim failed (`why`): a local copy of the same endpoint, else kFetchFailed.
  void FailClaim(const HostHit& hit, const InboundTicket& ticket, const Status& why,
                 std::vector<StoreEvent>& events);
  // Claims whose records are being written into the disk landing tier:
  // fetched once every record landed, failed when one is gone or the
  // deadline passed.
  void AdvanceLandings(std::vector<StoreEvent>& events);
  // Record images of `chain`, to park.
  static std::vector<ParkedRecord> ParkedImages(std::span<const RecordView> chain);
  // Pool only: parks the records Store copied into the landing tier whose
  // copy-out ended among `events` from index `first` on.
  void PublishStored(const std::vector<StoreEvent>& events, size_t first);
  // Parks the chain ending at `key` that the landing tier holds (nothing
  // when it holds no such record): the parked ancestors are skipped; waits
  // for a parent whose copy-out is under way.
  void PublishHeld(const PrefixKey& key);
  // Polls the landing tier until no copy-out Store began is under way or
  // `bound` passed (Close's), keeping its events for the next Poll.
  void DrainPublishing(std::chrono::milliseconds bound);
  // Moves the parked puts along on what `client` has read; a lost
  // connection drops the link.
  void AdvancePuts(PoolClient* client);
  // Whether `s` from the client means the connection is gone (vs a refusal).
  static bool ConnectionLost(const Status& s);
  // Files the lookup answers the client has read against their tickets.
  void FileAnswers(PoolClient& client);
  // Reads the lookup answers that have arrived, without waiting; pending
  // tickets of a lost connection become ready with nothing.
  void PumpTickets();
  // The link lost its connection (`why`): file what it read, then drop it.
  void LoseLink(const Status& why);
  // Exports (pooled_store_exports.cc): takes the manager's asks, announces
  // holdings, and moves the copies along.
  void AdvanceExports();
  // Aborts the put of relayed export `id` (when its connection is still
  // the link's) and forgets it.
  void AbortRelayed(ExportId id);
  // Aborts every pinned export still waiting for the copier; each one's end
  // (kExportEnded) hands its pin back.
  void AbortQueuedCopies();
  // The copy of relayed export `id` ended (`copied`): its image into the
  // slots and the commit, or the abort.
  void FinishRelayed(ExportId id, const Status& copied);
  // Close's: from now on no copy starts (asks and pins are aborted at once);
  // exports waiting for the copier are aborted (their ends queued), the copy
  // under way finishes within `bound` (kUnavailable when it did not: it may
  // still read the planes).
  Status DrainExports(std::chrono::milliseconds bound);

  // The landing tier is not the local chain (it is the pool's own).
  bool own_landing() const { return tiers_.landing != tiers_.local; }
  // A hit of the instance's own tiers, and which tier answered it.
  struct LocalAnswer {
    std::optional<HostHit> hit;
    bool from_landing = false;  // an own landing tier's (Fetch goes there)
  };
  // The local chain's hit and, with an own landing tier, that tier's, as
  // ChooseSource picks between them.
  LocalAnswer LocalLookup(const PrefixHistory& history, uint64_t resident_tokens, uint64_t before);
  // Returns `a`'s hit, noting where Fetch must send it.
  std::optional<HostHit> Answer(LocalAnswer a);
  // The answer when the pool's `chain` (may be empty; sized by `sizes`)
  // joins `local`.
  std::optional<HostHit> AdmitWithPool(LocalAnswer local, const std::vector<PrefixKey>& chain,
                                       const ChainSizes* sizes, uint64_t resident_tokens);

  PooledTiers tiers_;
  // Endpoints whose last answered hit came from an own landing tier: Fetch
  // sends them there.
  std::unordered_set<PrefixKey> landing_hits_;
  // Endpoints whose last answered hit was the pool's: Fetch claims them.
  std::unordered_set<PrefixKey> pool_hits_;
  std::deque<PendingClaim> claims_;  // in the order Fetch began them
  std::deque<LandingClaim> landings_;
  std::unique_ptr<PoolLink> link_;
  uint64_t now_ms_ = 0;
  PoolInstanceStats stats_;
  // The buffers a claim's copy fills, handed to the next copy job once one
  // came back: reused claim after claim, so a restore neither allocates nor
  // page-faults them again.
  std::vector<std::vector<std::byte>> spare_buffers_;
  uint64_t next_copy_job_ = 1;
  PutQueue puts_;
  uint64_t dropped_unshared_ = 0;  // evicted while the instance does not share
  // Pool only: checkpoints Store copied into the landing tier, by checkpoint
  // id, until their copy-out ends; and the keys parked from there (cleared
  // at kPublishedKeysMax: an ancestor parked again is answered
  // kAlreadyExists by the manager).
  std::unordered_map<uint64_t, PrefixKey> publishing_;
  std::unordered_set<PrefixKey> publishing_keys_;  // publishing_'s values
  std::unordered_set<PrefixKey> published_;
  // Records stored while their parent's copy-out was under way, by parent:
  // parked after it.
  std::unordered_map<PrefixKey, std::vector<PrefixKey>> waiting_publish_;
  // Events the landing tier reported while Close drained it, and the
  // failures of claims Close dropped (the next Poll's).
  std::vector<StoreEvent> closing_events_;
  ExportLedger exports_;
  // Exports the manager asked for, by the ledger's id, until their put is
  // committed or aborted.
  struct RelayedExport {
    uint64_t connection = 0;  // the link connection the ask came on
    ExportRequest ask;
  };
  std::map<ExportId, RelayedExport> relayed_;
  std::deque<ExportId> to_copy_;  // pinned, waiting for the copier
  HeldCheckpoints held_;
  uint64_t announced_connection_ = 0;  // the connection the book was announced on
  // Close began: no export copies out of the planes any more (asks and pins
  // are aborted at once).
  bool exports_closed_ = false;
  LookupTickets tickets_;
  // Last: destroyed first, so its thread has stopped before anything else goes.
  ClaimCopier copier_;
};

}  // namespace strata::pool
