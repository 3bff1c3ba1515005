// StagedTransport (seed 2.4): the DiskTransport of one process's ranks. A
// store job copies the record's device pages and row into staging slots of
// the shared slab pool (Transfers), then the disk thread writes the file; a
// fetch reads a page suffix (+ row) into staging slots, then copies them into
// the destination ids. Jobs wait, in order and within a bound, for staging
// slots; slot use never blocks. Host jobs (SubmitHost: a composite's
// write_from and read_into) skip staging and the copies: the disk thread
// writes the file from, or reads it into, the caller's slabs.
//
// It remembers each record's row checksum (from the startup scan and its own
// writes) so every read checks the file's whole header before payload I/O.
//
// Thread: one caller at a time, its owner's (on a peer rank, whichever
// thread holds the agent's serving state). Submit, Poll never block.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <unordered_map>

#include "store/disk/disk_thread.h"
#include "store/record/geometry.h"
#include "store/record/record_header.h"
#include "store/record/record_scan.h"
#include "store/tier/disk_transport.h"
#include "store/tier/row_checksums.h"
#include "store/tier/store_clock.h"
#include "store/transfer/slab_pool.h"
#include "store/transfer/transfer_tracker.h"

namespace strata {

struct StagedOptions {
  uint32_t max_waiting_jobs = 256;            // accepted jobs waiting for slots or the disk thread
  Durability durability = Durability::kNone;  // fdatasync + directory fsync per record
  // Only `wall` is read (record headers' creation time): the waits sleep on
  // the wake signal, which keeps real time. Default: the real clocks.
  StoreClock clock{};
  // Shared with the other transports over the same record directory
  // (row_checksums.h; LocalDisk sets it); null: the transport keeps its own.
  std::shared_ptr<RowChecksums> row_checksums = nullptr;
};

struct StagedStats {
  uint64_t jobs_done = 0;
  uint64_t jobs_failed = 0;
  uint64_t bytes_written = 0;
  uint64_t bytes_read = 0;
  uint64_t fs_full = 0;
};

class StagedTransport final : public DiskTransport {
 public:
  // `geometry` holds this process's ranks; `fingerprint` is the one the record
  // directory is named by. The pool may be shared with a memory store.
  StagedTransport(const CacheGeometry& geometry, const NamespaceIdentity& identity,
                  const LayoutFingerprint& fingerprint, std::shared_ptr<SlabPool> pool,
                  std::unique_ptr<Transfers> transfers, std::unique_ptr<DiskThread> disk,
                  StagedOptions options = {});
  ~StagedTransport() override;

  // Remembers the row checksums of the records a scan kept.
  void Seed(const ScanReport& report) override;

  Status Submit(RecordJob job) override;
  Status SubmitHost(const RecordJob& job, const HostBuffers& buffers) override;
  void Poll(std::vector<RecordJobDone>& out) override;
  // Sleeps on one signal that the disk thread and the transfers both raise,
  // so a completion from either wakes it at once.
  bool WaitForCompletion(std::chrono::milliseconds timeout) override;
  void NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) override;
  Status stopped() const override { return Status::Ok(); }
  Status Close(std::chrono::milliseconds deadline) override;

  // The header every rank of this process writes for `job` (kStore fields).
  RecordHeader HeaderFor(const RecordJob& job) const;
  // Slots a store or fetch of `job` stages through.
  uint64_t SlotsFor(const RecordJob& job) const;
  const StagedStats& stats() const { return stats_; }

 private:
  enum class Phase : unsigned char { kWaiting, kCopyOut, kWrite, kRead, kCopyIn, kDisk };
  struct Active {
    RecordJob job;
    Phase phase = Phase::kWaiting;
    std::vector<SlotId> slots;
    RecordHeader header;
    uint64_t bytes = 0;
    std::optional<HostBuffers> host;  // a host job: no staging, no copies
  };

  void StartWaiting();
  bool Begin(Active& a);
  void BeginHost(Active& a);
  Status Accept(RecordJob job, std::optional<HostBuffers> host);
  void SubmitDisk(Active& a, DiskJobBody body, Phase phase);
  void Finish(uint64_t id, Status status);
  std::vector<IoPiece> PagePieces(const Active& a, uint64_t pages) const;
  std::vector<IoPiece> RowPieces(const Active& a, uint64_t first_slot, uint64_t bytes) const;

  CacheGeometry geometry_;
  RecordLayout layout_;
  NamespaceIdentity identity_;
  LayoutFingerprint fingerprint_;
  RecordShape shape_;
  std::shared_ptr<SlabPool> pool_;
  std::unique_ptr<Transfers> transfers_;
  std::unique_ptr<DiskThread> disk_;
  std::shared_ptr<WakeSignal> signal_;  // raised by disk_ and transfers_; never null
  TransferTracker tracker_;
  StagedOptions options_;
  uint64_t row_slots_;
  std::map<uint64_t, Active> active_;  // by job id, ordered: older jobs start first
  std::deque<std::pair<uint64_t, DiskJob>> disk_backlog_;  // refused with kBusy
  std::shared_ptr<RowChecksums> row_checksums_;            // options_.row_checksums or its own
  std::vector<RecordJobDone> done_;
  std::vector<FinishedOperation> finished_;
  std::vector<DiskCompletion> disk_done_;
  bool closed_ = false;
  // Close drained (or gave up on) the copies and the disk thread: Poll only
  // hands out what Close kept, touching neither.
  bool shut_down_ = false;
  StagedStats stats_;
};

}  // namespace strata
