// HeldRecords: a composite store's disk tier for records whose bytes sit in
// host memory (seed 2.4). Over the DiskFiles of a DiskStore, it indexes such
// records without charging file space (kInFlight while copied out, then
// kParked), writes them from that memory on request (kSpilling, charged; the
// file commits as kReady), and reads committed files back into host memory.
// A listener hears of every record that leaves the index and every row the
// index drops, so a memory copy never outlives its disk entry.
//
// Thread: the owner's (model worker) thread; never blocks.
#pragma once

#include <vector>

#include "store/tier/disk_files.h"

namespace strata {

// The completion of a held record's Spill or ReadInto.
struct HostJobDone {
  enum class Kind : unsigned char { kSpill, kReadInto };
  uint64_t tag = 0;  // the caller's
  PrefixKey key{};
  Kind kind = Kind::kSpill;
  Status status{};  // OK, or why not
  // kSpill: no file, and the record stays held in host memory, to spill
  // from there later: out of space, or a fan-out write (WriteFromDevice)
  // that failed, whose host copy does not depend on it.
  bool kept = false;
  uint64_t bytes = 0;  // payload bytes moved
};

// Which shares of a record's file are stored once for every rank (packed).
struct SharePacking {
  bool pages = false;
  bool row = false;
};

class HeldRecords final : private DiskOperationOwner {
 public:
  // `files` (a DiskStore's files()) must outlive this tier, and this tier
  // every spill and read it started (close the store first).
  explicit HeldRecords(DiskFiles& files) : files_(files) {}
  HeldRecords(const HeldRecords&) = delete;
  HeldRecords& operator=(const HeldRecords&) = delete;

  const PrefixIndex& index() const { return files_.index(); }
  // Not owned; null: nobody listens.
  void SetListener(DiskTierListener* listener) { files_.SetListener(listener); }
  // A lookup over records in `states`, counted in no statistic.
  std::optional<HostHit> LookupIn(const PrefixHistory& history, uint64_t resident_tokens,
                                  uint64_t before, StateSet states) const {
    return files_.LookupIn(history, resident_tokens, before, states);
  }
  // The file layout of an indexed record.
  std::optional<FileShape> ShapeOf(const PrefixKey& key) const { return files_.ShapeOf(key); }

  // Indexes a checkpoint whose bytes are being copied into host memory, as
  // kInFlight and charging no file space; returns its tail pages (relative to
  // cp.parent when indexed, else the whole chain). kAlreadyExists when the
  // key is indexed; kBusy while an earlier file of that name is still being
  // written; kAborted once closed or stopped.
  Result<uint32_t> InsertHeld(const PublishedCheckpoint& cp);
  // The held bytes are complete: kInFlight -> kParked, or kSpilling while a
  // WriteFromDevice of the record is in flight. A record whose
  // WriteFromDevice already committed (kReady) stays so.
  Status MarkCopied(const PrefixKey& key);
  // Removes a held record whose bytes never arrived, with its descendants.
  void DropHeld(const PrefixKey& key) { files_.RemoveWithDescendants(key); }
  // Starts writing a kParked record's file from `buffers` (its stored
  // layout, shares as `packing` says; the row only if the index still holds
  // it): kSpilling, charged, pinned until the write completes (HostJobDone).
  // kBusy: no room under the disk limit now; the record stays parked.
  Status Spill(const PrefixKey& key, SharePacking packing, HostBuffers buffers, uint64_t tag);
  // Starts writing a held record's file straight from the device pages it
  // was published from (`page_ids`: its tail's ids; `row_slot`: its row),
  // while or after its host copy runs: the direct transport's fan-out on
  // store (seed 2.6). A kInFlight record stays kInFlight (MarkCopied then
  // makes it kSpilling), a kParked one becomes kSpilling; charged, pinned
  // until the write completes (HostJobDone, kSpill; the file commits as
  // kReady). kBusy: no room under the disk limit now, nothing started. A
  // write that fails for any reason (out of space, an I/O error, the
  // transport refusing it) leaves the record where its host copy stands
  // (kInFlight or kParked; HostJobDone::kept), counted in
  // fanout_write_failures: unlike a spill's, its failure loses nothing.
  Status WriteFromDevice(const PrefixKey& key, std::vector<PageId> page_ids, StateSlot row_slot,
                         uint64_t tag);
  // Reads a kReady record's pages [first_page, tail) and, when buffers.row
  // is set, its row into host memory; pinned until done (HostJobDone). A
  // record that fails its checksums is discarded.
  Status ReadInto(const PrefixKey& key, uint32_t first_page, HostBuffers buffers, uint64_t tag);
  // Moves completed Spill and ReadInto jobs to `out`.
  void TakeHostDone(std::vector<HostJobDone>& out);

  // A pin keeps a record from eviction, compaction and expiry (index.h).
  Status Pin(const PrefixKey& key) { return files_.index().Pin(key); }
  void Unpin(const std::vector<PrefixKey>& keys) { files_.Unpin(keys); }
  Status Touch(const PrefixKey& key, uint64_t now_ms) { return files_.index().Touch(key, now_ms); }

 private:
  // DiskOperationOwner: a spill or read finished.
  void FinishOperation(DiskOperation& op) override;
  // Checks that held record `key` (a kParked one, or with `in_flight_too` a
  // kInFlight one too) can be written now with its shares as `packing`
  // says, then charges its file, marks it writing and pins it; returns the
  // file's id. kBusy: no room under the disk limit.
  Result<uint64_t> BeginWrite(const PrefixKey& key, SharePacking packing, bool in_flight_too);
  void FinishSpill(DiskOperation& op);
  void FinishReadInto(DiskOperation& op);

  DiskFiles& files_;
  std::vector<HostJobDone> done_;
};

}  // namespace strata
