// DiskFiles: what the two faces of a disk tier share (seed 2.4, 2.14). An
// index rebuilt from a record directory's scan, the file behind each index
// entry and the byte budget they are charged against, and the operations
// (stores, fetches, spills, reads, truncates, unlinks) that run them as jobs
// on a DiskTransport.
//
// Files are charged from when a write is accepted until their unlink or
// truncate completes, so pending unlink and truncate bytes count against the
// limit. Every record that leaves the index and every row the index drops is
// told to the listener at once.
//
// The limit in force (limit_bytes) starts at the configured one and is lowered
// when a write fails because the filesystem is full (space_limit.h): to what
// the filesystem held at that moment less a margin, evicting least-recently-
// used records down to it. It stays lowered while eviction can make room
// under it; when nothing is left to evict (the filesystem was full of other
// files, say), the configured limit is tried again once a second at most
// (kRetryConfiguredLimitMs) and another failed write lowers it again.
//
// Two faces drive it: DiskStore (a HostStore) and HeldRecords (a composite's
// held-record tier). A face finishes its own operations (DiskOperationOwner);
// truncates and unlinks are finished here.
//
// Thread: the owner's (model worker) thread; never blocks, except the waits.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "store/base/latency_histogram.h"
#include "store/index/index.h"
#include "store/record/geometry.h"
#include "store/record/record_layout.h"
#include "store/record/record_scan.h"
#include "store/tier/disk_transport.h"
#include "store/tier/host_store.h"
#include "store/tier/record_handover.h"
#include "store/tier/store_clock.h"

namespace strata {

// Told, at once and on the owner's thread, what leaves a disk tier's index.
class DiskTierListener {
 public:
  virtual ~DiskTierListener() = default;
  virtual void OnRecordRemoved(const PrefixKey& key) = 0;
  virtual void OnRowDropped(const PrefixKey& key) = 0;
};

// How a record's file stores its pages and row.
struct FileShape {
  uint32_t tail_pages = 0;
  bool has_row = true;
  bool replicated_pages = false;
  bool replicated_row = false;
};

// Bytes of a record file of `shape` (docs/formats.md, "Record files").
uint64_t RecordFileBytes(const RecordLayout& layout, const FileShape& shape);

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
  StoreClock clock{};  // deadlines and latencies; default: the real clocks
  // Free bytes of the filesystem holding this process's record directory
  // (LocalDisk::FreeBytes), read only when a write fails for want of space.
  // Null, or an error: taken as none free.
  std::function<Result<uint64_t>()> free_bytes = nullptr;
};

class DiskOperationOwner;
struct DiskHandover;  // disk_handover.h

// One record's transport jobs, submitted as the transport has room (kBusy
// keeps a job queued) and finished once every submitted job has reported.
struct DiskOperation {
  enum class Kind : unsigned char {
    kStore,
    kFetch,
    kTruncate,
    kUnlink,
    kSpill,
    kReadInto,
    kHandover,  // reads an evicted record (and its held ancestors) for the sink
    kImport,    // writes a record from outside (DiskStore::Import)
  } kind = Kind::kStore;
  // Finishes the operation; null for truncates and unlinks (DiskFiles').
  DiskOperationOwner* owner = nullptr;
  PrefixKey key{};
  uint64_t file_id = 0;  // kStore, kSpill: the file being written
  uint64_t checkpoint_id = 0;
  uint64_t tag = 0;  // kSpill, kReadInto: the caller's
  std::optional<HostBuffers> host{};
  // kHandover: each job's host buffers, one per rank share
  // (DiskTransport::SubmitShares), by the record it reads, and what owns
  // their memory and the records' metadata.
  std::unordered_map<PrefixKey, std::vector<HostBuffers>> host_by_key{};
  std::shared_ptr<DiskHandover> handover{};
  // What the host buffers point into, when the operation owns it (kImport).
  std::shared_ptr<const void> keep_alive{};
  JobId ticket{};
  std::vector<PrefixKey> pinned{};  // unpinned by whoever finishes it
  std::deque<RecordJob> unsubmitted{};
  uint32_t outstanding = 0;
  Status status{};
  PrefixKey failed_key{};  // the record whose job set `status` (a fetch's chain)
  uint64_t bytes = 0;
  uint64_t release_bytes = 0;  // charge dropped when a truncate/unlink completes
  std::chrono::steady_clock::time_point started{};  // for options.latencies
  // DiskFiles' limit epoch when the operation started: a write that was
  // already in flight when the limit was lowered does not lower it again.
  uint64_t limit_epoch = 0;
};

// A face that finishes the operations it started. Called from DiskFiles'
// pump on the owner's thread, after the operation left the table.
class DiskOperationOwner {
 public:
  virtual void FinishOperation(DiskOperation& op) = 0;

 protected:
  ~DiskOperationOwner() = default;
};

// How a write (a store or a spill) ended, as FinishWrite settled it.
enum class WriteEnd : unsigned char {
  kOrphaned,   // the record was dropped while written: what committed is unlinked
  kCommitted,  // the file committed: the record is kReady and unpinned
  kFailed,     // no file; the charge is released, the index entry left to the face
};

class DiskFiles {
 public:
  // One index entry's file.
  struct File {
    uint32_t tail_pages = 0;
    bool has_row = true;
    bool replicated_pages = false;
    bool replicated_row = false;
    uint64_t bytes = 0;    // charged
    bool written = true;   // false: held in host memory, no file yet
    bool writing = false;  // a store or spill of it is in flight
    // As indexed: what a handover offers after the index forgot the record.
    std::optional<PrefixKey> parent = std::nullopt;
    Digest128 bucket{};
    // Where a demotion (record_handover.h) left it: offered and awaiting
    // the sink's outcome, accepted but kept (it has children or pins: its
    // capacity eviction later unlinks it without a read), or given up
    // (never demoted again; its capacity eviction hands it over as usual).
    enum class Demotion : uint8_t { kNone, kOffered, kAccepted, kGivenUp };
    Demotion demotion = Demotion::kNone;
  };

  DiskFiles(const CacheGeometry& geometry, std::unique_ptr<DiskTransport> transport,
            DiskStoreOptions options);
  DiskFiles(const DiskFiles&) = delete;
  DiskFiles& operator=(const DiskFiles&) = delete;

  // Indexes what the scan kept; records the index rejects or prunes are
  // unlinked through the transport.
  Status Load(const std::vector<ScannedRecord>& records);

  const CacheGeometry& geometry() const { return geometry_; }
  const RecordLayout& layout() const { return layout_; }
  const DiskStoreOptions& options() const { return options_; }
  const StoreClock& clock() const { return options_.clock; }
  const PrefixIndex& index() const { return index_; }
  PrefixIndex& index() { return index_; }
  StoreStats& stats() { return stats_; }
  // Statistics with the record count and charged bytes filled in.
  StoreStats Stats() const;
  uint64_t now_ms() const { return now_ms_; }
  bool closed() const { return closed_; }
  // OK while the transport runs (see DiskTransport::stopped).
  Status stopped() const { return transport_->stopped(); }
  // Neither closed nor stopped.
  bool accepting() const { return !closed_ && transport_->stopped().ok(); }
  // An earlier file of `key` is still being written (its name is taken).
  bool NameTaken(const PrefixKey& key) const {
    return orphaned_names_.count(key) != 0 || handing_over_.count(key) != 0;
  }
  uint64_t used_bytes() const { return used_bytes_; }
  // The limit in force: the configured one, or lower after the filesystem
  // filled up (see the file comment).
  uint64_t limit_bytes() const { return limit_bytes_; }
  // The configured limit: a record larger than it never fits (oversize).
  uint64_t configured_limit_bytes() const { return options_.disk_limit_bytes; }
  // Records the transport could not delete (their bytes stay charged).
  uint64_t cleanup_failures() const { return cleanup_failures_; }
  // Operations under way.
  size_t operations() const { return ops_.size(); }
  // DiskTransport::device_jobs_stage of this tier's transport.
  bool device_jobs_stage() const { return transport_->device_jobs_stage(); }
  // How many shares a record's host bytes come in (DiskTransport::share_count).
  uint32_t share_count() const { return transport_->share_count(); }
  uint64_t share_bytes_max() const { return transport_->share_bytes_max(); }

  // A lookup over records in `states`, counted in no statistic.
  std::optional<HostHit> LookupIn(const PrefixHistory& history, uint64_t resident_tokens,
                                  uint64_t before, StateSet states) const;
  // The file layout of an indexed record.
  std::optional<FileShape> ShapeOf(const PrefixKey& key) const;
  // The transport job of `kind` for an indexed record (parent, tail, shares).
  RecordJob JobFor(RecordJobKind kind, const PrefixKey& key) const;

  // ---- Files and their charge ----
  uint64_t AddFile(const File& file);  // returns its id
  File& file(uint64_t id) { return files_.at(id); }
  void EraseFile(uint64_t id) { files_.erase(id); }
  void Charge(uint64_t bytes) { used_bytes_ += bytes; }
  void Uncharge(uint64_t bytes) { used_bytes_ -= bytes; }
  // Evicts ready records until `bytes` more fit under the limit; false if
  // they cannot (what was evicted stays evicted).
  bool MakeRoom(uint64_t bytes);
  // How long a lowered limit stands before, with nothing left to evict, the
  // configured limit is tried again.
  static constexpr uint64_t kRetryConfiguredLimitMs = 1'000;

  // ---- Handover below the instance (seed 2.15, disk_handover.cc) ----
  // From now on every committed record that capacity eviction (MakeRoom, not
  // expiry or failures) removes is read back and offered to `sink` before
  // its file is unlinked: this tier is the end of the local chain. The
  // listener hears of the removal at once; the file's bytes stay charged
  // and its name taken until the read ends and the unlink completes. Null
  // (the default): evicted records are unlinked at once.
  void SetEvictionSink(EvictionSink* sink) { eviction_sink_ = sink; }
  // Handovers whose read is under way.
  size_t handovers() const { return handing_over_.size(); }
  // Demotion (record_handover.h): while the charge is above the limit less
  // limit / kDemotionHeadroomDivisor and the sink takes demotions, Poll
  // reads the least recently used committed leaf never demoted (with its
  // held ancestors never demoted) and offers it with OnDemoted, keeping it;
  // the next only once the sink reported every outcome of the last. Each Poll applies the outcomes
  // the sink reports: an accepted record that is still an unpinned leaf leaves the index and its
  // file is unlinked (counted as evicted and demoted); one that gained children or pins stays,
  // marked so that its eviction needs no read; a record given up stays and is not demoted again.
  static constexpr uint64_t kDemotionHeadroomDivisor = 16;

  // ---- Removal ----
  void SetListener(DiskTierListener* listener) { listener_ = listener; }
  DiskTierListener* listener() const { return listener_; }
  // A record left the index: tell the listener and delete its file, at once
  // or, while the file is still being written, once that write is done.
  void Drop(const PrefixKey& key, uint64_t file_id);
  // Removes `key` and its descendants from the index and drops each.
  void RemoveWithDescendants(const PrefixKey& key);
  // Unpins `keys`, truncating any row the index dropped meanwhile.
  void Unpin(const std::vector<PrefixKey>& keys);
  // A read of `key` (fetch or read-into) failed with `status`. True when the
  // status is kCorruption (its file failed its checksums): the failure is
  // counted (fetch_checksum_failures) and logged, and the caller removes the
  // record so the next lookup misses. False, doing nothing, otherwise.
  bool NoteCorruptRead(const PrefixKey& key, const Status& status);

  // ---- Operations ----
  // Queues `op`'s unsubmitted jobs and pumps.
  void Start(DiskOperation op);
  // Submits `job` now, as `op`'s only job. An error means nothing started.
  Status StartNow(DiskOperation op, RecordJob job);
  // Settles a finished store or spill in the index, its file and charge.
  WriteEnd FinishWrite(DiskOperation& op);
  // Applies what the transport finished and submits what it has room for.
  void Pump();
  // Advances to `now_ms`, pumps, and expires records (max_age_ms).
  void Poll(uint64_t now_ms);
  // Whenever the transport may have finished a job, also notifies `signal`
  // (HostStore::NotifyOnProgress).
  void NotifyOnProgress(std::shared_ptr<WakeSignal> signal) {
    transport_->NotifyOnCompletion(std::move(signal));
  }
  // Polls until idle or `bound` passes, waiting on the transport's completions.
  // A stopped transport ends the wait at once: false.
  bool WaitIdle(std::chrono::milliseconds bound);
  // Waits up to `bound` for one transport completion, then pumps.
  void WaitForCompletion(std::chrono::milliseconds bound);
  // Drains operations (close_deadline), then closes the transport. An error
  // means copies may still run (the transport is leaked, not destroyed).
  Status Close();

 private:
  void Unlink(const PrefixKey& key, uint64_t file_id);
  void Truncate(const std::optional<RowDrop>& drop);
  void ApplyRemoved(const std::vector<RemovedRecord>& removed);
  // Capacity eviction's removals: handed over to eviction_sink_ when set
  // and the records are committed files, dropped otherwise.
  void ApplyEvicted(const std::vector<RemovedRecord>& removed);
  // Applies eviction decision `d` (counted), handing its records over.
  void ApplyEvictionDecision(const EvictionDecision& d);
  // Reads `removed` (evicted) or, with `demote`, that held record, with the
  // held ancestors above, for the sink.
  void StartHandover(const std::vector<RemovedRecord>& removed, std::optional<PrefixKey> demote);
  // Whether a handover can carry file `f`: committed, not being written, and
  // one rank's share within the transport's bound.
  bool Handable(const File& f) const;
  // Applies the sink's demotion outcomes, then starts a demotion when above
  // the floor (see kDemotionHeadroomDivisor).
  void Demote();
  // The sink accepted demoted record `key`: let it go if it is an unpinned
  // leaf, else mark it accepted.
  void ReleaseDemoted(const PrefixKey& key);
  // Sets the demotion state of `key`'s file to `to` if it is still indexed
  // and in state `from`.
  void MarkDemotion(const PrefixKey& key, File::Demotion from, File::Demotion to);
  // After a scan found no leaf to demote, the next scan waits this long.
  static constexpr uint64_t kDemotionIdleMs = 1'000;
  void FinishHandover(DiskOperation& op);
  void PumpOnce();
  void Finish(DiskOperation& op);
  void FinishCleanup(const DiskOperation& op);
  void RecordLatency(const DiskOperation& op);
  // A write failed for want of space: lower the limit and make headroom.
  void LowerLimitAfterFull(const DiskOperation& op);
  // MakeRoom found nothing to evict for `bytes` under a lowered limit.
  void RetryConfiguredLimit(uint64_t bytes);
  // A write of a dropped record finished: delete what it committed.
  bool FinishOrphanedWrite(const DiskOperation& op);

  CacheGeometry geometry_;
  RecordLayout layout_;
  std::unique_ptr<DiskTransport> transport_;
  DiskStoreOptions options_;
  PrefixIndex index_;
  uint64_t page_bytes_all_ranks_ = 0;         // unpadded
  uint64_t row_bytes_all_ranks_ = 0;          // unpadded
  std::unordered_map<uint64_t, File> files_;  // by NodeLocation value
  // Dropped records whose file write was still in flight, by file id: their
  // names stay taken (and bytes charged) until that write is resolved.
  std::unordered_map<uint64_t, File> orphaned_writes_;
  std::unordered_map<PrefixKey, uint64_t> orphaned_names_;  // key -> file id
  std::map<uint64_t, DiskOperation> ops_;                   // by operation id, ordered
  struct JobRef {
    uint64_t op = 0;  // operation id
    PrefixKey key{};  // the record the job moves
  };
  std::unordered_map<JobId, JobRef> job_op_;
  DiskTierListener* listener_ = nullptr;
  EvictionSink* eviction_sink_ = nullptr;
  // Evicted records being read for the sink: key -> file id (still in files_).
  std::unordered_map<PrefixKey, uint64_t> handing_over_;
  bool demoting_ = false;  // a demotion's read is under way
  // Records a demotion offered whose outcome the sink has not reported yet
  // (even if they left the index since): no next demotion until it has.
  std::unordered_set<PrefixKey> awaiting_demotion_;
  uint64_t demotion_idle_until_ms_ = 0;  // no demotion scan before now_ms_ reaches it
  std::vector<RecordJobDone> done_;
  uint64_t next_file_ = 1;
  uint64_t next_op_ = 1;
  uint64_t next_job_ = 1;
  uint64_t used_bytes_ = 0;
  uint64_t limit_bytes_ = 0;      // in force; options_.disk_limit_bytes until lowered
  uint64_t limit_epoch_ = 0;      // times limit_bytes_ was lowered
  uint64_t lowered_at_ms_ = 0;    // now_ms_ when it was last lowered
  uint64_t releasing_bytes_ = 0;  // charged bytes whose unlink/truncate is in flight
  uint64_t cleanup_failures_ = 0;
  uint64_t now_ms_ = 0;
  bool closed_ = false;
  bool pumping_ = false;  // Pump is running: a nested call only asks for another pass
  bool repump_ = false;
  StoreStats stats_;
};

}  // namespace strata
