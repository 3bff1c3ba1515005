// Transfers: moves a checkpoint window's page ids and state row between each
// rank's device planes and host slab memory (seed 2.5).
//
// A job names device page ids and a state slot; the host side is one page
// record per page (a slab slot, layout in record_layout.h) and the row segment
// as an ordered list of pieces. Id-to-address expansion happens on the
// per-rank threads, never on the caller's thread.
//
// Thread: Submit/Poll/Close are called from the store's thread only and never
// block (Close waits up to its deadline). Completions arrive through Poll.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "store/base/ids.h"
#include "store/base/status.h"
#include "store/base/wake_signal.h"

namespace strata {

enum class TransferDirection : unsigned char {
  kDeviceToHost,  // copy-out of a published checkpoint into slabs
  kHostToDevice,  // restore from slabs into free page ids and a state slot
};

// A contiguous piece of 4 KiB-aligned host memory the caller owns until the
// job completes.
struct HostPiece {
  uint8_t* data = nullptr;
  uint64_t bytes = 0;
};

// Bounds on one job and one copy batch (seed 2.5).
inline constexpr uint64_t kMaxWindowPages = 64;
inline constexpr uint64_t kMaxBatchBytes = 16ull << 20;
inline constexpr uint64_t kMaxBatchEntries = 4096;

struct TransferJob {
  JobId id;
  TransferDirection direction = TransferDirection::kDeviceToHost;
  // Device page ids of this window, at most kMaxWindowPages, and one host page
  // record per id (same order).
  std::vector<PageId> page_ids;
  std::vector<uint8_t*> page_records;
  // The row: the device state slot and the host row segment's pieces in order.
  std::optional<StateSlot> row_slot;
  std::vector<HostPiece> row_pieces;
  // The host side holds one share (rank 0's layout) that every rank reads on
  // restore; copy-out always writes the per-rank layout.
  bool replicated_pages = false;
  bool replicated_row = false;
  // Copy-out only: also compute the record checksums (XXH3, docs/formats.md)
  // of the host page records and row segment while copying, when the
  // transfers can (one rank, an engine that copies on its own thread); the
  // completion then carries them. A staged disk write passes them on so the
  // disk thread skips its own pass over the staging bytes.
  bool hash_records = false;
};

struct TransferCompletion {
  JobId id;
  Status status;       // first rank's error; reported only after every rank drained
  uint64_t bytes = 0;  // unpadded bytes moved, all ranks
  // Set only for a successful hash_records job the transfers could hash:
  // XXH3 of each page record (page_records order, page_record_bytes each)
  // and, when the job has a row, of the row segment (row_segment_bytes), over
  // the host bytes as they were left, padding included.
  std::vector<uint64_t> page_sums = {};
  std::optional<uint64_t> row_sum = std::nullopt;
};

class Transfers {
 public:
  virtual ~Transfers() = default;
  // Queues a job on every rank. kBusy when any rank's queue is full (nothing
  // queued then); kInvalidArgument for a malformed job; kAborted once stopped.
  virtual Status Submit(TransferJob job) = 0;
  // Appends finished jobs. Never blocks.
  virtual void Poll(std::vector<TransferCompletion>& out) = 0;
  // Blocks up to `timeout` until a completion is ready (tests, drains).
  virtual bool WaitForCompletion(std::chrono::milliseconds timeout) = 0;
  // From now on, whenever a completion becomes ready for Poll, also notifies
  // `signal` (the owner's one wait over several sources); null stops that. A
  // completion already ready notifies it at once.
  virtual void NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) = 0;
  // Finishes accepted jobs and stops the threads within `deadline`. An error
  // means copies may still run: the caller must keep host memory alive.
  virtual Status Close(std::chrono::milliseconds deadline) = 0;
  virtual uint32_t rank_count() const = 0;
};

}  // namespace strata
