// HostStore: what an inference runtime's model thread calls to offload and
// restore prefix checkpoints (seed 2.2). MemoryStore, DiskStore and
// CompositeStore implement it; PooledStore also requests exports (the hooks
// of store/tier/export_hooks.h, docs/embedding.md section 5).
//
// Thread: one owner thread (the model worker). Every call returns without
// waiting for I/O or copies; completions and failures arrive through Poll.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "store/base/ids.h"
#include "store/base/prefix_history.h"
#include "store/base/prefix_key.h"
#include "store/base/status.h"
#include "store/base/wake_signal.h"
#include "store/index/index_types.h"
#include "store/tier/export_hooks.h"
#include "store/tier/store_stats.h"

namespace strata {

// A GPU checkpoint the runtime offers for copy-out. Its pages and row are
// immutable and stay pinned on the GPU until the store reports kStored or
// kStoreFailed for it (or Store returns anything but kQueued).
struct PublishedCheckpoint {
  uint64_t checkpoint_id = 0;       // the runtime's id, echoed in events
  PrefixKey key;                    // exact endpoint
  std::optional<PrefixKey> parent;  // nearest offered ancestor, if any
  Digest128 bucket{};               // history.bucket_digest(key.consumed)
  std::vector<PageId> chain;        // every page of the chain from the root
  uint32_t tail_pages = 0;          // pages since `parent` (all of chain if none)
  StateSlot row_slot;               // the snapshot row
  // The runtime's generation of this checkpoint: a checkpoint made again at
  // the same key (after an eviction) has a later one. Export requests and
  // eviction notices name it. Not carried over the attach channel (0 there).
  uint64_t generation = 0;
};

enum class Tier : unsigned char { kMemory, kDisk };
std::string_view TierName(Tier tier);

// A lookup result: restore `pages` page records (the chain's pages after
// skipping `skip_pages`) and the endpoint's row. Valid until the next call
// that may evict (Store, Poll); Fetch pins it.
struct HostHit {
  PrefixKey endpoint;
  std::vector<PrefixKey> chain;  // ascending, root side first
  uint64_t skip_pages = 0;       // leading chain pages the GPU already holds
  uint64_t pages = 0;            // pages to restore
  uint64_t bytes = 0;            // bytes the restore moves
  uint64_t tokens_gained = 0;    // endpoint.consumed - resident tokens
  Tier tier = Tier::kMemory;     // the slowest tier the restore reads
  // The pool supplies it (a pooled store's claim, an export among them,
  // precedes the restore): InboundPolicy costs it at the pool's rate.
  bool pooled = false;
};

// Destination of a restore: free GPU page ids (exactly hit.pages of them, in
// chain order) and a free state slot, owned by the runtime's scheduler until
// the store reports kFetched or kFetchFailed for `ticket`.
struct InboundTicket {
  JobId ticket;
  std::vector<PageId> page_ids;
  StateSlot row_slot;
};

// A lookup begun when its request arrived (seed 2.15, "Lookups"): a pooled
// store sends it to its manager at once and files the answer against the
// ticket, so admission never waits for the manager beyond the lookup grace.
// Value 0 names no ticket.
using LookupTicket = StrongId<struct LookupTicketTag, uint64_t>;

enum class LookupTicketState : unsigned char {
  kNone,     // no such ticket (never begun, ended, or a store without a pool)
  kPending,  // the manager has not answered yet
  kReady,    // answered (or its connection was lost: then with nothing)
};

// What a runtime needs to decide a late answer's retry (pool::DecideLateAnswer).
struct LookupTicketStatus {
  LookupTicketState state = LookupTicketState::kNone;
  uint64_t pool_consumed = 0;      // kReady: the pooled endpoint (0: the pool holds none)
  uint64_t admitted_consumed = 0;  // what the last admission answered (0: nothing)
  uint32_t admissions = 0;         // LookupFor calls so far
  // The first admission went on without the answer (it was pending): only
  // then may the answer retry admission, once.
  bool answered_late = false;
  bool retry_used = false;  // the one late retry is spent
};

enum class StoreOutcome : unsigned char {
  kQueued,    // copy-out started; the GPU checkpoint stays pinned until an event
  kPresent,   // the key is already held or in flight; nothing to do
  kDeferred,  // no host capacity now; offer again after progress
  kRetry,     // transient refusal (queue full); offer again after progress
  kOversize,  // can never fit this store's capacity
  kDisabled,  // the store is closed or stopped
};
std::string_view StoreOutcomeName(StoreOutcome outcome);

struct StoreEvent {
  enum class Kind : unsigned char {
    kStored,       // checkpoint_id copied out; unpin it
    kStoreFailed,  // checkpoint_id not stored; unpin it, do not retry
    kFetched,      // ticket's ids and slot hold the endpoint's bytes
    kFetchFailed,  // ticket's ids and slot are quiescent and may be freed
    kStopped,      // the store stopped (e.g. a peer was lost): stop the worker
    // Pin checkpoint `key` at `generation` for export `export_id` from chain
    // page `start_page` on (`bytes`: the staging reserved for it); answer in
    // this loop iteration with ExportPinned or ExportRefused. Only stores
    // with a pool report it.
    kExportRequested,
    // Export `export_id`'s copies drained (or the store rejected it): unpin
    // it. The only release; a second end for the same export finds nothing.
    kExportEnded,
  };
  Kind kind = Kind::kStored;
  uint64_t checkpoint_id = 0;  // kStored / kStoreFailed
  JobId ticket;                // kFetched / kFetchFailed
  PrefixKey key;
  Status status;  // why, for failures (kExportEnded: why a pinned export was rejected)
  uint64_t bytes = 0;
  ExportId export_id{};     // kExportRequested / kExportEnded
  uint64_t generation = 0;  // kExportRequested
  uint64_t start_page = 0;  // kExportRequested
};

class HostStore {
 public:
  virtual ~HostStore() = default;
  // The deepest restorable endpoint of `history` beyond `resident_tokens`
  // (the deepest ready GPU checkpoint), at or below `before` tokens.
  virtual std::optional<HostHit> Lookup(const PrefixHistory& history, uint64_t resident_tokens,
                                        uint64_t before) = 0;

  // Two-step lookups (seed 2.15, "Lookups"). BeginLookup, when a request
  // arrives, starts what is slow (a pooled store asks its manager) and never
  // waits; LookupFor, at admission, answers like Lookup, using what the
  // ticket has by then (a pooled store waits at most the lookup grace, once).
  // LookupFor may be called again for the same request (a late answer's
  // retry, or after a capacity wait); EndLookup drops the ticket (prefill
  // started, or the request was cancelled). The defaults, for stores without
  // a pool: no ticket, and LookupFor is Lookup.
  virtual LookupTicket BeginLookup(const PrefixHistory& /*history*/, uint64_t /*resident_tokens*/,
                                   uint64_t /*before*/) {
    return LookupTicket{};
  }
  virtual std::optional<HostHit> LookupFor(LookupTicket /*ticket*/, const PrefixHistory& history,
                                           uint64_t resident_tokens, uint64_t before) {
    return Lookup(history, resident_tokens, before);
  }
  virtual LookupTicketStatus TicketStatus(LookupTicket /*ticket*/) const { return {}; }
  virtual void EndLookup(LookupTicket /*ticket*/) {}

  virtual StoreOutcome Store(const PublishedCheckpoint& checkpoint) = 0;
  // Starts restoring `hit` into `ticket`. An error means nothing started and
  // the ticket's resources are the caller's again.
  virtual Status Fetch(const HostHit& hit, const InboundTicket& ticket) = 0;
  // Advances maintenance and appends finished work. `now_ms` (milliseconds
  // since the Unix epoch, so record ages agree with file mtimes) drives
  // expiry and retry backoff. Never blocks.
  virtual void Poll(uint64_t now_ms, std::vector<StoreEvent>& events) = 0;
  // From now on, whenever Poll may have something new (a copy or a disk job
  // finished), also notifies `signal`, so an owner that sleeps between polls
  // (the attach server) wakes at once instead of at its next turn. Null
  // stops that. Expiry and retry backoff still need Poll on the owner's clock.
  virtual void NotifyOnProgress(std::shared_ptr<WakeSignal> signal) = 0;
  // A descriptor an owner that sleeps in poll() (the attach server) adds to
  // its set: readable means Poll has answers to take (a pool manager's, for
  // the puts a pooled store parked), which no thread of the store notices
  // for it. -1: none. Valid until the store's next call.
  virtual int PollFd() const { return -1; }
  virtual StoreStats Stats() const = 0;
  // Drains accepted copies (and, if configured, DRAM-only records to disk)
  // within the store's deadline. An error means copies may still run: the
  // caller must keep GPU memory and the store alive.
  virtual Status Close() = 0;

  // Export and eviction hooks (docs/embedding.md section 5). Stores without
  // a pool never report kExportRequested, so the defaults refuse or ignore.
  //
  // The runtime pinned the checkpoint of `export_id` (a kExportRequested this
  // store reported, not yet answered) as `description` says. The pin is the
  // store's until it reports kExportEnded for `export_id`; a store that
  // rejects the export (e.g. larger than its reserved staging) reports that
  // end from its next Poll, with the reason as its status. An export whose
  // copies never drain is never ended, so its pin stays. Default: an export
  // this store never requested; nothing to do.
  virtual void ExportPinned(ExportId /*export_id*/, const ExportDescription& /*description*/) {}
  // The runtime did not pin `export_id`, for `reason`; no end follows.
  virtual void ExportRefused(ExportId /*export_id*/, ExportRefusal /*reason*/) {}
  // Checkpoints the runtime retired since its last store call, oldest first;
  // passed before the runtime's next other store call.
  virtual void Evicted(std::span<const EvictionNotice> /*notices*/) {}
  // The runtime's bounded notice queue dropped notices since its last
  // Evicted: what the store believes the runtime holds may be stale (a
  // pooled store announces its holdings again).
  virtual void EvictionsLost() {}
};

}  // namespace strata
