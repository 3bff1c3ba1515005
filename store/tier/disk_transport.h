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
// Thread: one caller at a time, the store's thread (on a peer rank, whichever
// thread holds its agent's serving state: rank_agent/rank_agent.h). Submit
// and Poll never block.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "store/base/ids.h"
#include "store/base/record_job.h"
#include "store/base/status.h"
#include "store/base/wake_signal.h"
#include "store/disk/disk_thread.h"
#include "store/record/record_scan.h"

namespace strata {

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
  // Runs a host-data kStore or kFetch job (RecordJob::host_data) on every
  // rank at once, each rank's share in `shares[rank]` (share_count() of
  // them, each as SubmitHost takes it for that rank's layout). The default
  // (one rank) is SubmitHost of the one share; a transport over ranks in
  // separate processes moves the peers' shares over their record links.
  // kInvalidArgument for another number of shares.
  virtual Status SubmitShares(const RecordJob& job, std::span<const HostBuffers> shares);
  // How many shares a record's host bytes come in: 1, or the world size of
  // a transport over ranks in separate processes.
  virtual uint32_t share_count() const { return 1; }
  // The largest share (one rank's bytes of a record) SubmitShares moves.
  virtual uint64_t share_bytes_max() const { return UINT64_MAX; }
  // Remembers the row checksums of the records a scan kept (the rescan
  // after rank zero's agreement, seed 2.14), for the fetches and truncates
  // that follow. Call before the first Submit that touches them. A
  // transport that keeps no per-record state ignores it (the default).
  virtual void Seed(const ScanReport& report) { (void)report; }
  // Whether a store or fetch on device ids (Submit) stages its record
  // through the host slab pool it shares with a composite's memory tier, so
  // that the composite must leave room for it (the staged transport: true,
  // the default). The direct transport moves files and GPU planes without
  // host memory: false.
  virtual bool device_jobs_stage() const { return true; }
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
