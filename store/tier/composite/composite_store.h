// CompositeStore (seed 2.4, 2.5, 2.12): a memory tier and a disk tier in one
// process, sharing one slab pool.
//
//   Store    copies the checkpoint out into memory slabs (the memory tier);
//            the record is indexed in the disk tier as kInFlight, then
//            kParked, without charging file space. A record memory cannot
//            hold, even by evicting clean records, streams straight to disk
//            through the staging (intake) slots instead. With options.direct
//            (the direct transport, seed 2.6) the store fans out: the
//            record's file is written straight from the GPU pages while the
//            memory copy runs (HeldRecords::WriteFromDevice), so the record
//            is clean once both finish, and its kStored (or kStoreFailed)
//            event waits for both, since both read the pinned GPU pages. A
//            fan-out write with no room under the disk limit is not started:
//            the record parks and spills from memory later, as without it.
//   Poll     when free + clean slots fall below 2 x intake, writes the
//            coldest parked records to disk from their slabs (write_from,
//            the memory tier's packing decision kept), as the SpillPolicy
//            (spill_policy.h) chooses; a committed write
//            makes the memory copy durable (clean). A full filesystem or a
//            full disk budget keeps the record parked and retries after a
//            backoff; a terminal I/O error discards it (and its descendants)
//            and is counted.
//   Lookup   runs on the disk index: ready records and parked or spilling
//            ones (whose complete memory copy supplies them).
//   Fetch    walks the chain: resident records upload from their slabs;
//            disk-only ones are read into memory slabs first (read_into,
//            evicting clean unused residents) and become durable residents.
//            A chain memory cannot hold streams from disk through staging
//            straight to the ticket (the disk tier's own fetch).
//            With options.direct a
//            chain whole on disk and not all in memory goes straight from its
//            files to the ticket, and memory is warmed through publication:
//            a Store of a record already on disk but not in memory (the
//            runtime publishing the restored checkpoint) copies it in from
//            the GPU as a durable resident (kWarming, then kDurable), when
//            every ancestor record is in memory already (their rows are not
//            on the GPU: a chain with an ancestor only on disk keeps
//            restoring from its files).
//
// The disk tier is a DiskStore (streamed stores and fetches) and, over its
// files, a HeldRecords (held_records.h: the records held in memory).
//
// Invariants: every memory copy has a disk-index entry (memory is a subset
// of disk, counting writes in flight); memory evicts only durable records no
// transfer uses; disk eviction, expiry and discards remove the memory copy;
// a dropped row is dropped in both tiers; every memory use pins the disk
// entry, so the index never drops a row a transfer reads.
//
// Thread: the owner's (model worker) thread; never blocks, except Close.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <unordered_map>

#include "store/tier/composite/spill_policy.h"
#include "store/tier/disk_store.h"
#include "store/tier/held_records.h"
#include "store/tier/retry_ledger.h"
#include "store/tier/store_clock.h"
#include "store/transfer/slab_records.h"
#include "store/transfer/transfer_tracker.h"

namespace strata {

// What Close does with records held only in memory (seed 2.5,
// `drain_on_shutdown`).
struct ShutdownDrain {
  enum class Mode : unsigned char {
    kOff,        // a stop loses memory-only records
    kUntilDone,  // write every memory-only record before releasing memory
    kBounded,    // start no new write after `write_limit`
  };
  Mode mode = Mode::kOff;
  std::chrono::milliseconds write_limit{0};  // kBounded
};

struct CompositeStoreOptions {
  uint64_t disk_limit_bytes = 0;  // record bytes on disk, including writes in flight
  uint64_t max_age_ms = 0;        // record expiry through the disk index; 0 = off
  bool pack_replicated = true;    // pack byte-identical rank shares (TP > 1)
  uint64_t spill_retry_ms = 200;  // backoff after a full filesystem or disk budget
  ShutdownDrain drain;            // default off
  // Bound on Close's wait for accepted copies, spills and reads to drain.
  std::chrono::milliseconds close_deadline{30'000};
  // The disk tier's operation latencies (DiskStoreOptions::latencies).
  std::shared_ptr<DiskJobLatencies> latencies = nullptr;
  // The disk transport moves record files to and from the GPU planes
  // without host staging (the direct transport): fan out on store, restore
  // chains whole on disk straight from their files, and warm memory when
  // the runtime publishes the restored checkpoint (above).
  bool direct = false;
  StoreClock clock{};  // deadlines and latencies; default: the real clocks
  std::function<Result<uint64_t>()> free_bytes = nullptr;  // DiskStoreOptions::free_bytes
};

class CompositeStore final : public HostStore, private DiskTierListener {
 public:
  // `pool` is shared with the staged `transport` (its intake slots are the
  // staging the disk tier streams through); `memory_transfers` is the memory
  // tier's own. `records` are what the directory scan kept.
  static Result<std::unique_ptr<CompositeStore>> Open(const CacheGeometry& geometry,
                                                      std::shared_ptr<SlabPool> pool,
                                                      std::unique_ptr<Transfers> memory_transfers,
                                                      std::unique_ptr<DiskTransport> transport,
                                                      const std::vector<ScannedRecord>& records,
                                                      const CompositeStoreOptions& options);
  ~CompositeStore() override;

  std::optional<HostHit> Lookup(const PrefixHistory& history, uint64_t resident_tokens,
                                uint64_t before) override;
  StoreOutcome Store(const PublishedCheckpoint& checkpoint) override;
  // Counts the evicted checkpoints still waiting for a re-offer as abandoned
  // retries (RetryLedger; the disk tier's refusals included).
  void Evicted(std::span<const EvictionNotice> notices) override;
  Status Fetch(const HostHit& hit, const InboundTicket& ticket) override;
  void Poll(uint64_t now_ms, std::vector<StoreEvent>& events) override;
  // Both tiers' copies and disk jobs notify `signal`.
  void NotifyOnProgress(std::shared_ptr<WakeSignal> signal) override {
    transfers_->NotifyOnCompletion(signal);
    disk_->NotifyOnProgress(std::move(signal));
  }
  StoreStats Stats() const override;
  // Drains accepted copies, then (drain_on_shutdown) writes memory-only
  // records, most recent endpoints first after their parked ancestors, then
  // lets accepted writes finish before memory is released.
  Status Close() override;

  const DiskStore& disk() const { return *disk_; }
  // The disk tier is the end of the local chain: its capacity evictions go to
  // `sink` (DiskStore::SetEvictionSink); memory still evicts only to disk.
  void SetEvictionSink(EvictionSink* sink) { disk_->SetEvictionSink(sink); }
  // The disk tier's held-record face (the same index as disk()).
  const HeldRecords& held() const { return *held_; }
  // Whether `key` has a memory copy, and whether that copy is durable.
  bool resident(const PrefixKey& key) const { return residents_.count(key) != 0; }
  bool durable(const PrefixKey& key) const;
  // True when no copy, upload, spill, read or disk job is under way.
  bool idle() const;
  // Polls and maintains (at `now_ms`) until idle or `bound` passes. Events
  // stay queued for Poll.
  bool WaitIdle(uint64_t now_ms, std::chrono::milliseconds bound);
  // Checks the invariants above, and, when idle, that no pin, user or slot
  // is left over. O(records). For tests.
  Status CheckInvariants() const;

 private:
  // Where a memory copy stands; the disk entry's state follows it.
  enum class Residence : unsigned char {
    kCopying,   // copy-out under way; its fan-out write may be too (disk: kInFlight)
    kParked,    // complete, no file (disk: kParked)
    kSpilling,  // complete, its file being written, from it or the GPU (disk: kSpilling)
    kDurable,   // complete, its file committed (disk: kReady): clean
    kReading,   // being read from its file (disk: kReady); not yet usable
    kWarming,   // copied in from the GPU, its file committed (disk: kReady); not yet usable
  };
  static constexpr size_t kResidences = 6;
  struct Resident {
    uint64_t record = 0;  // in records_
    Residence state = Residence::kCopying;
    uint64_t tick = 0;         // position in lru_
    uint64_t retry_at_ms = 0;  // kParked: no spill before this
    uint64_t read = 0;         // kReading: the read's tag
    // Complete and usable by a restore: not kCopying, kReading or
    // kWarming. (A fan-out write can commit, and the index show the record
    // kReady, before the composite hears of it; its copy is still running.)
    bool usable() const {
      return state != Residence::kCopying && state != Residence::kReading &&
             state != Residence::kWarming;
    }
  };
  struct CopyOut {
    PrefixKey key;
    uint64_t checkpoint_id = 0;
    uint64_t record = 0;
    uint64_t write = 0;  // the fan-out write's tag in spills_; 0: none
  };
  struct Read {
    PrefixKey key;
    uint64_t record = 0;
    std::vector<uint64_t> waiting;  // fetches waiting for it
  };
  struct Spill {
    PrefixKey key;
    uint64_t record = 0;
    bool from_device = false;  // a fan-out write (from the GPU), not from the slabs
    // A fan-out write's checkpoint event, held while the write still reads
    // the GPU pages after the memory copy finished.
    std::optional<StoreEvent> event = std::nullopt;
  };
  struct FetchOp {
    InboundTicket ticket;
    PrefixKey endpoint;
    std::vector<PrefixKey> chain;   // pinned in the disk index
    std::vector<uint64_t> records;  // one user each
    uint64_t skip_pages = 0;
    uint32_t reads_left = 0;
    bool uploading = false;
    Status failed;
  };

  CompositeStore(const CacheGeometry& geometry, std::shared_ptr<SlabPool> pool,
                 std::unique_ptr<Transfers> memory_transfers, CompositeStoreOptions options);

  // DiskTierListener: the disk entry is gone / lost its row.
  void OnRecordRemoved(const PrefixKey& key) override;
  void OnRowDropped(const PrefixKey& key) override;

  // Memory tier (composite_store.cc).
  Resident& AddResident(const PrefixKey& key, uint64_t record, Residence state);
  void SetResidence(Resident& r, Residence state);
  void Account(const Resident& r, int64_t sign);
  void TouchResident(Resident& r);
  void EraseResident(const PrefixKey& key);
  // Takes `count` warm slots (leaving the intake free), evicting the coldest
  // durable unused residents if that makes room; takes nothing otherwise.
  bool ReserveWarm(uint64_t count, std::vector<SlotId>& out);
  // Evicts the coldest durable unused residents until `slots` are free, if
  // they suffice; evicts nothing otherwise.
  bool MakeFree(uint64_t slots);
  // Warm slots a record of `key` read from disk needs; 0 when resident.
  uint64_t SlotsToRead(const PrefixKey& key) const;
  StoreOutcome Count(StoreOutcome o);
  // Store without the retry ledger; `cause` is set when it refuses for now.
  StoreOutcome Offer(const PublishedCheckpoint& checkpoint, RetryCause& cause);
  // options_.direct: a Store of `cp` whose record is on disk and not
  // in memory: kQueued with a copy-in under way (kWarming), else kPresent.
  StoreOutcome Warm(const PublishedCheckpoint& cp);
  void PollOnce();
  void FinishCopyOut(const CopyOut& c, const FinishedOperation& f);
  // Emits a copy-out's checkpoint event now, or, while its fan-out write
  // still runs, when that write finishes.
  void EmitAfterWrite(const CopyOut& c, StoreEvent event);
  void OnHostDone(const HostJobDone& d);

  // Restores (composite_fetch.cc).
  Status StartFetch(const HostHit& hit, const InboundTicket& ticket, bool& fits);
  // The disk tier's own fetch of `hit` into `ticket`, once room for the
  // largest record's staging is free (kBusy when clean residents cannot
  // make it).
  Status StreamFromDisk(const HostHit& hit, const InboundTicket& ticket);
  void FinishRead(const HostJobDone& d);
  void StartUpload(uint64_t fetch);
  // `status` by value: it may live in the fetch entry this erases.
  void FinishFetch(uint64_t fetch, Status status, uint64_t bytes);

  // Write-behind and shutdown (composite_spill.cc), as policy_ chooses.
  void Maintain();
  SlotRoom Room() const;
  // The parked records in LRU order (coldest first) or its reverse.
  enum class Order : unsigned char { kColdestFirst, kMostRecentFirst };
  std::vector<ParkedRecord> Parked(Order order) const;
  SpillStart StartSpill(const PrefixKey& key);
  void FinishSpill(const HostJobDone& d);
  void Drain(std::chrono::steady_clock::time_point until);

  CacheGeometry geometry_;
  std::shared_ptr<SlabPool> pool_;
  SlabRecords records_;
  std::unique_ptr<Transfers> transfers_;  // the memory tier's own
  TransferTracker tracker_;
  CompositeStoreOptions options_;
  SpillPolicy policy_;
  std::unique_ptr<DiskStore> disk_;
  std::unique_ptr<HeldRecords> held_;  // over disk_'s files; destroyed first

  std::unordered_map<PrefixKey, Resident> residents_;
  std::map<uint64_t, PrefixKey> lru_;  // tick -> key, coldest first
  uint64_t slots_in_[kResidences] = {};
  uint64_t next_tick_ = 0;  // LRU order

  std::unordered_map<uint64_t, CopyOut> copy_outs_;  // by tracker op
  std::map<uint64_t, FetchOp> fetches_;              // by id (= its upload's tracker op)
  std::unordered_map<uint64_t, Read> reads_;         // by tag
  std::unordered_map<uint64_t, Spill> spills_;       // by tag
  std::vector<HostJobDone> host_done_;
  std::vector<FinishedOperation> finished_;
  std::vector<StoreEvent> events_;
  std::vector<StoreEvent> disk_events_;
  uint64_t next_op_ = 1;
  uint64_t now_ms_ = 0;
  uint64_t page_bytes_all_ranks_ = 0;
  uint64_t row_bytes_all_ranks_ = 0;
  bool closed_ = false;
  RetryLedger retries_;
  StoreStats stats_;
};

}  // namespace strata
