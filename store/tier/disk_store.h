// DiskStore (seed 2.4, 2.14): an index rebuilt from a record directory's scan,
// a disk byte budget, and a DiskTransport that moves the bytes. It indexes,
// sizes, evicts and plans; the transport (Staged here, Sharded across hosts)
// runs every store, fetch, truncate and unlink. Files are charged from when a
// store is accepted until their unlink completes, so pending unlink and
// truncate bytes count against the limit.
//
// A composite store uses one as its disk tier (the "held record" calls):
// records whose bytes sit in host memory are indexed without charging file
// space (kInFlight while copied out, then kParked), written from that memory
// on request (kSpilling, charged), and become kReady when the file commits.
// A listener hears of every record that leaves the index and every row the
// index drops, so a memory copy never outlives its disk entry.
//
// Thread: the owner's (model worker) thread; never blocks.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <unordered_map>

#include "store/base/latency_histogram.h"
#include "store/index/index.h"
#include "store/record/geometry.h"
#include "store/record/record_layout.h"
#include "store/record/record_scan.h"
#include "store/tier/disk_transport.h"
#include "store/tier/host_store.h"

namespace strata {

// Told, at once and on the owner's thread, what leaves a disk tier's index.
class DiskTierListener {
 public:
  virtual ~DiskTierListener() = default;
  virtual void OnRecordRemoved(const PrefixKey& key) = 0;
  virtual void OnRowDropped(const PrefixKey& key) = 0;
};

// The completion of a held record's Spill or ReadInto.
struct HostJobDone {
  uint64_t tag = 0;  // the caller's
  PrefixKey key;
  bool spill = false;    // Spill, else ReadInto
  Status status;         // OK, or why not
  bool fs_full = false;  // Spill: out of space; the record is parked again
  uint64_t bytes = 0;    // payload bytes moved
};

// How a record's file stores its pages and row.
struct FileShape {
  uint32_t tail_pages = 0;
  bool has_row = true;
  bool replicated_pages = false;
  bool replicated_row = false;
};

// Latency of the store's disk operations from start to completion on every
// rank, by kind (a spill counts as a store, a read into memory as a fetch).
// Recorded on the store's owner thread, read from any thread (metrics).
struct DiskJobLatencies {
  LatencyHistogram store;
  LatencyHistogram fetch;
  LatencyHistogram truncate;
  LatencyHistogram unlink;
};

struct DiskStoreOptions {
  uint64_t disk_limit_bytes = 0;  // record bytes on disk, including in-flight writes
  uint64_t max_age_ms = 0;        // record expiry; 0 = off
  std::chrono::milliseconds close_deadline{30'000};  // bound on Close's drain
  // Where operation latencies go; none recorded when null.
  std::shared_ptr<DiskJobLatencies> latencies = nullptr;
};

// Bytes of a record file with `tail_pages` page records, with or without its
// row (docs/formats.md, "Record files").
uint64_t RecordFileBytes(const RecordLayout& layout, uint64_t tail_pages, bool with_row,
                         bool replicated_pages = false, bool replicated_row = false);

class DiskStore final : public HostStore {
 public:
  // `geometry` is this process's ranks (the file layout); `records` are what
  // the scan kept (after any agreement between ranks). Records the index
  // rejects or prunes are unlinked through the transport.
  static Result<std::unique_ptr<DiskStore>> Open(const CacheGeometry& geometry,
                                                 std::unique_ptr<DiskTransport> transport,
                                                 const std::vector<ScannedRecord>& records,
                                                 const DiskStoreOptions& options);
  ~DiskStore() override;

  std::optional<HostHit> Lookup(const PrefixHistory& history, uint64_t resident_tokens,
                                uint64_t before) override;
  StoreOutcome Store(const PublishedCheckpoint& checkpoint) override;
  Status Fetch(const HostHit& hit, const InboundTicket& ticket) override;
  // `now_ms`: milliseconds since the Unix epoch (record ages follow file mtimes).
  void Poll(uint64_t now_ms, std::vector<StoreEvent>& events) override;
  StoreStats Stats() const override;
  Status Close() override;

  const PrefixIndex& index() const { return index_; }
  // True when no store, fetch, truncate or unlink is under way.
  bool idle() const { return ops_.empty(); }
  // Polls until idle or `bound` passes, waiting on the transport's completions.
  // A stopped transport ends the wait at once (its jobs never finish): false.
  // Events stay queued for the next Poll. For tests, tools and drains.
  bool WaitIdle(std::chrono::milliseconds bound);
  // Waits up to `bound` for one transport completion, then applies what
  // finished. For drains and tools.
  void WaitForCompletion(std::chrono::milliseconds bound);
  uint64_t used_bytes() const { return used_bytes_; }
  uint64_t limit_bytes() const { return options_.disk_limit_bytes; }
  // Records the transport could not delete (their bytes stay charged).
  uint64_t cleanup_failures() const { return cleanup_failures_; }

  // ---- Held records: a composite store's disk tier (disk_store_held.cc) ----
  // Not owned; null: nobody listens.
  void SetListener(DiskTierListener* listener) { listener_ = listener; }
  // A lookup over records in `states`, counted in no statistic.
  std::optional<HostHit> LookupIn(const PrefixHistory& history, uint64_t resident_tokens,
                                  uint64_t before, StateSet states) const;
  // Indexes a checkpoint whose bytes are being copied into host memory, as
  // kInFlight and charging no file space; returns its tail pages (relative to
  // cp.parent when indexed, else the whole chain). kAlreadyExists when the
  // key is indexed; kBusy while an earlier file of that name is still being
  // written; kAborted once closed or stopped.
  Result<uint32_t> InsertHeld(const PublishedCheckpoint& cp);
  // kInFlight -> kParked: the held bytes are complete.
  Status MarkParked(const PrefixKey& key);
  // Removes a held record whose bytes never arrived, with its descendants.
  void DropHeld(const PrefixKey& key);
  // Starts writing a kParked record's file from `buffers` (its stored
  // layout, shares as `shape` says; the row only if the index still holds
  // it): kSpilling, charged, pinned until the write completes (HostJobDone).
  // kBusy: no room under the disk limit now; the record stays parked.
  Status Spill(const PrefixKey& key, bool replicated_pages, bool replicated_row,
               HostBuffers buffers, uint64_t tag);
  // Reads a kReady record's pages [first_page, tail) and, when buffers.row
  // is set, its row into host memory; pinned until done (HostJobDone). A
  // record that fails its checksums is discarded.
  Status ReadInto(const PrefixKey& key, uint32_t first_page, HostBuffers buffers, uint64_t tag);
  // Moves completed Spill and ReadInto jobs to `out`.
  void TakeHostDone(std::vector<HostJobDone>& out);
  // The file layout of an indexed record.
  std::optional<FileShape> ShapeOf(const PrefixKey& key) const;
  // A pin keeps a record from eviction, compaction and expiry (index.h).
  Status Pin(const PrefixKey& key) { return index_.Pin(key); }
  void Unpin(const std::vector<PrefixKey>& keys);
  Status Touch(const PrefixKey& key, uint64_t now_ms) { return index_.Touch(key, now_ms); }
  // OK while the transport runs (see DiskTransport::stopped).
  Status stopped() const { return transport_->stopped(); }
  // Operations under way (stores, fetches, spills, reads, truncates, unlinks).
  size_t operations() const { return ops_.size(); }

 private:
  struct File {
    uint32_t tail_pages = 0;
    bool has_row = true;
    bool replicated_pages = false;
    bool replicated_row = false;
    uint64_t bytes = 0;    // charged
    bool written = true;   // false: held in host memory, no file yet
    bool writing = false;  // a store or spill of it is in flight
  };
  struct Operation {
    enum class Kind : unsigned char {
      kStore,
      kFetch,
      kTruncate,
      kUnlink,
      kSpill,
      kReadInto
    } kind = Kind::kStore;
    PrefixKey key;
    uint64_t file_id = 0;  // kStore, kSpill: the file being written
    uint64_t checkpoint_id = 0;
    uint64_t tag = 0;  // kSpill, kReadInto
    std::optional<HostBuffers> host;
    JobId ticket;
    std::vector<PrefixKey> pinned;
    std::deque<RecordJob> unsubmitted;
    uint32_t outstanding = 0;
    Status status;
    uint64_t bytes = 0;
    uint64_t release_bytes = 0;  // charge dropped when a truncate/unlink completes
    std::chrono::steady_clock::time_point started;  // for options_.latencies
  };

  DiskStore(const CacheGeometry& geometry, std::unique_ptr<DiskTransport> transport,
            DiskStoreOptions options);
  RecordJob JobFor(RecordJobKind kind, const PrefixKey& key) const;
  bool MakeRoom(uint64_t bytes);
  void Unlink(const PrefixKey& key, uint64_t file_id);
  // A record left the index: tell the listener and delete its file, at once
  // or, while the file is still being written, once that write is done.
  void Drop(const PrefixKey& key, uint64_t file_id);
  void Truncate(const std::optional<RowDrop>& drop);
  void ApplyRemoved(const std::vector<RemovedRecord>& removed);
  uint64_t StartOperation(Operation op);
  Status SubmitJob(const Operation& op, const RecordJob& job);
  void Pump();
  void PumpOnce();
  void FinishOperation(uint64_t id, Operation& op);
  void RecordLatency(const Operation& op);
  void FinishStore(Operation& op);
  void FinishSpill(Operation& op);
  void FinishReadInto(Operation& op);
  // A write of a dropped record finished: delete what it committed.
  bool FinishOrphanedWrite(const Operation& op);
  StoreOutcome Count(StoreOutcome o);

  CacheGeometry geometry_;
  RecordLayout layout_;
  std::unique_ptr<DiskTransport> transport_;
  DiskStoreOptions options_;
  PrefixIndex index_;
  uint64_t page_bytes_all_ranks_ = 0;
  uint64_t row_bytes_all_ranks_ = 0;
  std::unordered_map<uint64_t, File> files_;  // by NodeLocation value
  // Dropped records whose file write was still in flight, by file id: their
  // names stay taken (and bytes charged) until that write is resolved.
  std::unordered_map<uint64_t, File> orphaned_writes_;
  std::unordered_map<PrefixKey, uint64_t> orphaned_names_;  // key -> file id
  std::map<uint64_t, Operation> ops_;                       // by operation id, ordered
  std::unordered_map<JobId, uint64_t> job_op_;
  std::vector<StoreEvent> events_;
  std::vector<HostJobDone> host_done_;
  DiskTierListener* listener_ = nullptr;
  std::vector<RecordJobDone> done_;
  uint64_t next_file_ = 1;
  uint64_t next_op_ = 1;
  uint64_t next_job_ = 1;
  uint64_t used_bytes_ = 0;
  uint64_t releasing_bytes_ = 0;  // charged bytes whose unlink/truncate is in flight
  uint64_t cleanup_failures_ = 0;
  uint64_t now_ms_ = 0;
  bool closed_ = false;
  bool stopped_reported_ = false;
  bool pumping_ = false;  // Pump is running: a nested call only asks for another pass
  bool repump_ = false;
  StoreStats stats_;
};

}  // namespace strata
