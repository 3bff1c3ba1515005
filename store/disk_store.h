// DiskStore (seed 2.4, 2.14): an index rebuilt from a record directory's scan,
// a disk byte budget, and a DiskTransport that moves the bytes. It indexes,
// sizes, evicts and plans; the transport (Staged here, Sharded across hosts)
// runs every store, fetch, truncate and unlink. Files are charged from when a
// store is accepted until their unlink completes, so pending unlink and
// truncate bytes count against the limit.
//
// Thread: the owner's (model worker) thread; never blocks.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <unordered_map>

#include "store/disk_transport.h"
#include "store/geometry.h"
#include "store/host_store.h"
#include "store/index.h"
#include "store/record_layout.h"
#include "store/record_scan.h"

namespace strata {

struct DiskStoreOptions {
  uint64_t disk_limit_bytes = 0;  // record bytes on disk, including in-flight writes
  uint64_t max_age_ms = 0;        // record expiry; 0 = off
  std::chrono::milliseconds close_deadline{30'000};  // bound on Close's drain
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
                                                 DiskStoreOptions options);
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
  // Events stay queued for the next Poll. For tests, tools and drains.
  bool WaitIdle(std::chrono::milliseconds bound);
  uint64_t used_bytes() const { return used_bytes_; }
  // Records the transport could not delete (their bytes stay charged).
  uint64_t cleanup_failures() const { return cleanup_failures_; }

 private:
  struct File {
    uint32_t tail_pages = 0;
    bool has_row = true;
    bool replicated_pages = false;
    bool replicated_row = false;
    uint64_t bytes = 0;  // charged
  };
  struct Operation {
    enum class Kind : unsigned char { kStore, kFetch, kTruncate, kUnlink } kind = Kind::kStore;
    PrefixKey key;
    uint64_t checkpoint_id = 0;
    JobId ticket;
    std::vector<PrefixKey> pinned;
    std::deque<RecordJob> unsubmitted;
    uint32_t outstanding = 0;
    Status status;
    uint64_t bytes = 0;
    uint64_t release_bytes = 0;  // charge dropped when a truncate/unlink completes
  };

  DiskStore(const CacheGeometry& geometry, std::unique_ptr<DiskTransport> transport,
            DiskStoreOptions options);
  RecordJob JobFor(RecordJobKind kind, const PrefixKey& key) const;
  bool MakeRoom(uint64_t bytes);
  void Unlink(const PrefixKey& key, uint64_t file_id);
  void Truncate(const std::optional<RowDrop>& drop);
  void ApplyRemoved(const std::vector<RemovedRecord>& removed);
  uint64_t StartOperation(Operation op);
  void SubmitQueued(uint64_t id, Operation& op);
  void Pump();
  void FinishOperation(uint64_t id, Operation& op);
  void Unpin(const std::vector<PrefixKey>& keys);
  StoreOutcome Count(StoreOutcome o);

  CacheGeometry geometry_;
  RecordLayout layout_;
  std::unique_ptr<DiskTransport> transport_;
  DiskStoreOptions options_;
  PrefixIndex index_;
  uint64_t page_bytes_all_ranks_ = 0;
  uint64_t row_bytes_all_ranks_ = 0;
  std::unordered_map<uint64_t, File> files_;  // by NodeLocation value
  std::map<uint64_t, Operation> ops_;         // by operation id, ordered
  std::unordered_map<JobId, uint64_t> job_op_;
  std::vector<StoreEvent> events_;
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
  StoreStats stats_;
};

}  // namespace strata
