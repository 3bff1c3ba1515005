// DiskStore (seed 2.4, 2.14): a HostStore over record files. Its DiskFiles
// (an index rebuilt from a record directory's scan, a disk byte budget, and a
// DiskTransport that moves the bytes) indexes, sizes, evicts and plans; the
// transport (Staged here, Sharded across hosts) runs every store, fetch,
// truncate and unlink.
//
// A composite store drives the same files through a second face, its
// held-record tier (HeldRecords, held_records.h), made over files().
//
// Thread: the owner's (model worker) thread; never blocks, except the waits.
#pragma once

#include <chrono>
#include <memory>

#include "store/tier/disk_files.h"
#include "store/tier/host_store.h"
#include "store/tier/record_handover.h"
#include "store/tier/retry_ledger.h"

namespace strata {

// Where a record Import began stands.
enum class ImportState : unsigned char {
  kLanded,   // committed on every rank: Lookup and Fetch see it
  kWriting,  // its files are being written
  kGone,     // not held: its write failed, or it was removed since
};

class DiskStore final : public HostStore, public RecordIntake, private DiskOperationOwner {
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
  // Store without this store's retry ledger, for an owner that keeps its own
  // (a composite's); `cause` is set when it refuses for now.
  StoreOutcome Offer(const PublishedCheckpoint& checkpoint, RetryCause& cause);
  // Counts the evicted checkpoints still waiting for a re-offer as abandoned
  // retries (RetryLedger).
  void Evicted(std::span<const EvictionNotice> notices) override;
  Status Fetch(const HostHit& hit, const InboundTicket& ticket) override;
  // `now_ms`: milliseconds since the Unix epoch (record ages follow file mtimes).
  void Poll(uint64_t now_ms, std::vector<StoreEvent>& events) override;
  void NotifyOnProgress(std::shared_ptr<WakeSignal> signal) override {
    files_.NotifyOnProgress(std::move(signal));
  }
  StoreStats Stats() const override;
  Status Close() override;

  const PrefixIndex& index() const { return files_.index(); }
  // True when no store, fetch, truncate or unlink is under way.
  bool idle() const { return files_.operations() == 0; }
  // Polls until idle or `bound` passes, waiting on the transport's completions.
  // A stopped transport ends the wait at once (its jobs never finish): false.
  // Events stay queued for the next Poll. For tests, tools and drains.
  bool WaitIdle(std::chrono::milliseconds bound) { return files_.WaitIdle(bound); }
  // Waits up to `bound` for one transport completion, then applies what
  // finished. For drains and tools.
  void WaitForCompletion(std::chrono::milliseconds bound) { files_.WaitForCompletion(bound); }
  uint64_t used_bytes() const { return files_.used_bytes(); }
  uint64_t limit_bytes() const { return files_.limit_bytes(); }  // in force (DiskFiles)
  uint64_t configured_limit_bytes() const { return files_.configured_limit_bytes(); }
  // Records the transport could not delete (their bytes stay charged).
  uint64_t cleanup_failures() const { return files_.cleanup_failures(); }
  // OK while the transport runs (see DiskTransport::stopped).
  Status stopped() const { return files_.stopped(); }
  // Operations under way (stores, fetches, spills, reads, truncates, unlinks).
  size_t operations() const { return files_.operations(); }

  // This tier as the end of the local chain: capacity evictions are read
  // back and offered to `sink` before their files go (DiskFiles::SetEvictionSink).
  void SetEvictionSink(EvictionSink* sink) { files_.SetEvictionSink(sink); }

  // The shared core, for a held-record tier over the same files (a
  // composite's); valid for this store's life.
  DiskFiles& files() { return files_; }

  // RecordIntake (disk_store_import.cc): starts writing a record from
  // outside the instance (a pool claim). It enters the index at once,
  // in flight (not restorable, not evictable), and is committed once every
  // rank wrote its share (Imported says kLanded). `record` is in this
  // instance's layout; with ranks in separate processes (the transport's
  // share_count() above one) each page record and the row segment hold every
  // rank's share side by side, rank order, as the handover offers them
  // (disk_handover.cc), and each rank writes its own. The bytes are copied:
  // the caller may reuse them at once. Errors, nothing started:
  // kAlreadyExists (held or being written), kBusy (no room under the limit,
  // or the file name still taken), kFailedPrecondition (a tail that
  // disagrees with the index, or larger than the disk limit),
  // kInvalidArgument (pieces of the wrong size), kAborted (closed or
  // stopped).
  Status Import(const RecordView& record, uint64_t now_ms) override;
  bool Holds(const PrefixKey& key) const override;
  ImportState Imported(const PrefixKey& key) const;

 private:
  DiskStore(const CacheGeometry& geometry, std::unique_ptr<DiskTransport> transport,
            DiskStoreOptions options);
  // DiskOperationOwner: a store or fetch finished.
  void FinishOperation(DiskOperation& op) override;
  void FinishStore(DiskOperation& op);
  void FinishImport(DiskOperation& op);
  void FinishFetch(DiskOperation& op);
  StoreOutcome Count(StoreOutcome o);

  DiskFiles files_;
  RetryLedger retries_;
  std::vector<StoreEvent> events_;
  bool stopped_reported_ = false;
};

}  // namespace strata
