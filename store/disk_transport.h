// DiskTransport: runs a disk store's record jobs (seed 2.4, 2.14). The disk
// store indexes, sizes, evicts and plans; the transport moves bytes between
// device planes and record files. Staged runs jobs on this process's ranks
// through host staging slabs and the disk thread; Sharded (coordinator/) runs
// each job on rank zero's Staged and sends the same job to every peer, and
// reports it only when every rank finished it.
//
// A job names its record by key (the file "<key stem>.ckpt" in each rank's
// record directory) and carries what every rank needs to build the same file
// from its own geometry: no host addresses, so a job can cross the wire.
//
// Thread: the store's thread. Submit and Poll never block.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "store/digest.h"
#include "store/disk_thread.h"
#include "store/ids.h"
#include "store/prefix_key.h"
#include "store/status.h"
#include "store/wake_signal.h"

namespace strata {

enum class RecordJobKind : unsigned char {
  kStore,     // copy device pages + row out and write the record file
  kFetch,     // read a page suffix (+ row) of the file into device ids
  kTruncate,  // drop the file's row segment
  kUnlink,    // delete the file (a missing file is success)
};
std::string_view RecordJobKindName(RecordJobKind kind);

struct RecordJob {
  JobId id;
  RecordJobKind kind = RecordJobKind::kStore;
  PrefixKey key;
  // kStore: the header fields every rank writes.
  std::optional<PrefixKey> parent;
  Digest128 bucket{};
  uint32_t tail_pages = 0;  // kStore, kFetch, kTruncate: page records in the file
  // kStore: device ids of the file's pages, in order (copy-out sources).
  // kFetch: destination ids for file pages [first_page, tail_pages).
  std::vector<PageId> page_ids;
  uint32_t first_page = 0;  // kFetch
  // kStore: the row to copy out; kFetch: where the row goes. Absent: no row
  // (kStore writes a page-only file; kFetch reads pages only).
  std::optional<StateSlot> row_slot;
  bool replicated_pages = false;  // kStore/kFetch: the file holds one page share
  bool replicated_row = false;
  friend bool operator==(const RecordJob&, const RecordJob&) = default;
};

struct RecordJobDone {
  JobId id;
  Status status;         // the first failure among ranks, or OK
  bool fs_full = false;  // some rank ran out of space: defer and retry later
  uint64_t bytes = 0;    // payload bytes moved, all ranks
};

// Host memory that a kStore job writes its file from, or a kFetch job reads
// into, instead of device ids: the record in its stored layout (a composite's
// write_from and read_into, seed 2.4). The caller owns the memory until the
// job's completion is polled.
struct HostBuffers {
  std::vector<IoPiece> pages;  // one piece per stored page record (kFetch: from first_page)
  std::vector<IoPiece> row;    // the stored row segment; empty: no row
};

class DiskTransport {
 public:
  virtual ~DiskTransport() = default;
  // kBusy when full (nothing started); kAborted once stopped or closed;
  // kInvalidArgument for a malformed job.
  virtual Status Submit(RecordJob job) = 0;
  // Runs a kStore or kFetch job against host memory instead of device ids;
  // the job's replicated flags describe `buffers`. Only a transport over this
  // process's own ranks can; the default refuses with kFailedPrecondition.
  virtual Status SubmitHost(const RecordJob& job, const HostBuffers& buffers);
  // Appends finished jobs. Never blocks.
  virtual void Poll(std::vector<RecordJobDone>& out) = 0;
  // Blocks up to `timeout` until a completion is ready; returns at once when
  // one is already waiting for Poll.
  virtual bool WaitForCompletion(std::chrono::milliseconds timeout) = 0;
  // From now on, whenever Poll may have something new (a completion, or
  // progress that changes what Submit accepts), also notifies `signal`: an
  // owner that waits on several sources sleeps on one signal and polls all
  // of them when it rises. Null goes back to the transport's own signal.
  // Notifies at once when a completion is already waiting.
  virtual void NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) = 0;
  // A transport that can no longer report a job it accepted (a peer lost with
  // a job outstanding, a job timeout) stops: it reports no completion for
  // that job and accepts no new one; the owner must stop and never reuse the
  // job's device ids. OK while running.
  virtual Status stopped() const = 0;
  // Finishes accepted jobs within `deadline`, then releases threads. An error
  // means copies may still run: keep device and host memory alive.
  virtual Status Close(std::chrono::milliseconds deadline) = 0;
};

}  // namespace strata
