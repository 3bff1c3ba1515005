// MemoryStore (seed 2.4): retains checkpoints in host slab slots. Store copies
// a checkpoint's tail pages and row out into slots (evicting under the tree
// policy when the pool is full); the record stays resident until evicted.
// Fetch copies resident slots into the ticket's ids. Lookup hits are always
// resident. Several ranks in one process: byte-identical rank shares are
// packed after copy-out, and restores fan the one share out.
//
// Thread: the owner's (model worker) thread; never blocks.
#pragma once

#include <chrono>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "store/index/index.h"
#include "store/record/geometry.h"
#include "store/record/record_layout.h"
#include "store/tier/host_store.h"
#include "store/tier/record_handover.h"
#include "store/tier/retry_ledger.h"
#include "store/tier/store_clock.h"
#include "store/transfer/slab_records.h"
#include "store/transfer/transfer_plan.h"
#include "store/transfer/transfer_tracker.h"

namespace strata {

struct MemoryStoreOptions {
  uint64_t keep_free_slots = 0;  // slots allocation never takes (a composite's intake)
  uint64_t max_age_ms = 0;       // record expiry; 0 = off
  bool pack_replicated = true;   // pack byte-identical rank shares (TP > 1)
  std::chrono::milliseconds close_deadline{30'000};  // bound on Close's drain
  StoreClock clock{};                                // Close's deadline; default: the real clocks
};

class MemoryStore final : public HostStore, public RecordIntake, public RecordSource {
 public:
  // `pool` may be shared with a disk transport; `transfers` is this tier's own.
  MemoryStore(const CacheGeometry& geometry, std::shared_ptr<SlabPool> pool,
              std::unique_ptr<Transfers> transfers, MemoryStoreOptions options = {});
  ~MemoryStore() override;

  std::optional<HostHit> Lookup(const PrefixHistory& history, uint64_t resident_tokens,
                                uint64_t before) override;
  StoreOutcome Store(const PublishedCheckpoint& checkpoint) override;
  // Counts the evicted checkpoints still waiting for a re-offer as abandoned
  // retries (RetryLedger).
  void Evicted(std::span<const EvictionNotice> notices) override;
  Status Fetch(const HostHit& hit, const InboundTicket& ticket) override;
  void Poll(uint64_t now_ms, std::vector<StoreEvent>& events) override;
  void NotifyOnProgress(std::shared_ptr<WakeSignal> signal) override {
    transfers_->NotifyOnCompletion(std::move(signal));
  }
  StoreStats Stats() const override;
  Status Close() override;
  // A record from outside (a pool claim) as a committed local record; makes
  // room by eviction like Store. See RecordIntake.
  Status Import(const RecordView& record, uint64_t now_ms) override;
  bool Holds(const PrefixKey& key) const override;
  // From now on every committed record that eviction removes (not expiry) is
  // offered to `sink` before its slots free: this tier is the end of the local
  // chain (seed 2.15). Null (the default): evicted records are dropped.
  //
  // Demotion (record_handover.h): while more than total - total /
  // kDemotionHeadroomDivisor slots are in use and the sink takes demotions,
  // Poll offers the least recently used committed leaf never demoted (with
  // its held ancestors, up to one the sink accepted) with OnDemoted, keeping
  // it; one offer at a time, awaiting its outcome. Accepted: an unpinned
  // leaf is removed (counted as evicted and demoted); one that gained
  // children or pins stays, and its capacity eviction later drops it without
  // offering it again. Given up: it stays and is never demoted again.
  void SetEvictionSink(EvictionSink* sink) { eviction_sink_ = sink; }
  static constexpr uint64_t kDemotionHeadroomDivisor = 16;
  // After a scan found no leaf to demote, the next scan waits this long.
  static constexpr uint64_t kDemotionIdleMs = 1'000;
  // See RecordSource: views of the held chain ending at committed `key`.
  std::vector<RecordView> HeldChain(const PrefixKey& key, size_t ancestors_max) const override;

  const PrefixIndex& index() const { return index_; }
  // Slots a record of `tail_pages` pages and a row occupies before packing.
  uint64_t SlotsFor(uint64_t tail_pages) const { return records_.SlotsFor({tail_pages}); }

 private:
  struct Operation {
    enum class Kind : unsigned char { kCopyOut, kRestore } kind = Kind::kCopyOut;
    PrefixKey key;
    uint64_t checkpoint_id = 0;
    JobId ticket;
    std::vector<PrefixKey> pinned;
    std::vector<uint64_t> records;
  };

  // Store without the retry ledger; `cause` is set when it refuses for now.
  StoreOutcome Offer(const PublishedCheckpoint& checkpoint, RetryCause& cause);
  bool AllocateWithEviction(uint64_t count, std::vector<SlotId>& out);
  void ApplyEviction(const EvictionDecision& d);
  void ApplyRemoved(const std::vector<RemovedRecord>& removed);
  void ApplyRowDrop(const std::optional<RowDrop>& drop);
  void FinishCopyOut(const Operation& op, const FinishedOperation& f);
  void FinishRestore(const Operation& op, const FinishedOperation& f);
  void Unpin(const std::vector<PrefixKey>& keys);
  // Hands each evicted committed record to eviction_sink_, after the
  // ancestors still held (at most kOfferedAncestorsMax of them).
  static constexpr size_t kOfferedAncestorsMax = 64;
  void OfferEvicted(const std::vector<RemovedRecord>& removed);
  // Applies the sink's demotion outcomes, then offers the next demotion when
  // above the floor (see SetEvictionSink).
  void Demote();
  // The sink accepted demoted `key`: removes it if it is an unpinned ready
  // leaf, else marks it kAccepted.
  void ReleaseDemoted(const PrefixKey& key);
  // Views of the committed records from `up` towards the root that this tier
  // holds, nearest first, stopping at the first one it does not (at most
  // `max`).
  std::vector<RecordView> HeldAncestors(std::optional<PrefixKey> up, size_t max) const;
  RecordView ViewOf(const PrefixKey& key, uint64_t id, uint32_t tail_pages) const;

  struct Lineage {
    std::optional<PrefixKey> parent;
    Digest128 bucket{};
  };

  CacheGeometry geometry_;
  std::shared_ptr<SlabPool> pool_;
  SlabRecords records_;  // by NodeLocation value
  std::unique_ptr<Transfers> transfers_;
  TransferTracker tracker_;
  MemoryStoreOptions options_;
  EvictionSink* eviction_sink_ = nullptr;
  RetryLedger retries_;
  PrefixIndex index_;
  uint64_t page_bytes_all_ranks_ = 0;  // unpadded
  uint64_t row_bytes_all_ranks_ = 0;   // unpadded
  std::unordered_map<uint64_t, Operation> ops_;
  std::unordered_map<PrefixKey, Lineage> lineage_;  // of indexed records
  // Where a demotion left an indexed record (absent: never offered); erased
  // with the record, so one stored again starts afresh.
  enum class Demotion : uint8_t { kOffered, kAccepted, kGivenUp };
  std::unordered_map<PrefixKey, Demotion> demotions_;
  // Records offered whose outcome the sink has not reported yet (even if they
  // left the index since): no next demotion until it has.
  std::unordered_set<PrefixKey> awaiting_demotion_;
  uint64_t demotion_idle_until_ms_ = 0;
  std::vector<StoreEvent> events_;
  std::vector<FinishedOperation> finished_;
  uint64_t next_op_ = 1;
  uint64_t now_ms_ = 0;
  bool closed_ = false;
  StoreStats stats_;
};

}  // namespace strata
