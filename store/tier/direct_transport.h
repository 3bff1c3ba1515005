// DirectTransport (seed 2.6): the DiskTransport of one process's ranks (or of
// one rank's share of a job, with an attached runtime's planes) over
// GPUDirect Storage. Record bytes move between device planes and the record
// file without host staging, through two seams: DirectFileIo (cuFile batch
// I/O, store/tier/direct_file_io.h) and DeviceRecordChecksums (the GPU XXH3
// kernel, store/tier/device_record_checksums.h). Only the header and the
// checksum segment go through the host (FileSystem::WriteAt / ReadAt). The
// files are byte-identical to StagedTransport's (docs/formats.md "Record
// files"), so either transport reads what the other wrote.
//
// A store hashes the device pages and row, creates the temporary file and
// preallocates it (BeginRecordWrite), writes header and checksum segment,
// then the entries (PlanDirectJob), fdatasyncs under Durability::kSync,
// renames (CommitRecordWrite) and fsyncs the directory. A fetch checks the
// file's header against the expected one, reads the checksum segment, the
// entries into the job's page ids and row slot, then verifies the checksums
// on the device: a mismatch fails the job with kCorruption (as the staged
// read does) and counts in stats().checksum_failures. A failed entry fails
// its job only; later jobs run.
//
// Jobs run in submission order on one worker thread the transport owns;
// Submit, Poll and NotifyOnCompletion never block on I/O. SubmitHost is not
// offered (the default refusal): host buffers go through the staged path.
//
// Thread: the owner's (Submit, Poll, WaitForCompletion, NotifyOnCompletion,
// Close); the seams run on the worker.
#pragma once

#include <deque>
#include <memory>
#include <thread>
#include <unordered_map>

#include "store/base/mutex.h"
#include "store/io/file_system.h"
#include "store/record/record_file.h"
#include "store/record/record_scan.h"
#include "store/tier/device_record_checksums.h"
#include "store/tier/direct_file_io.h"
#include "store/tier/direct_transport_job.h"
#include "store/tier/disk_transport.h"
#include "store/tier/row_checksums.h"
#include "store/tier/store_clock.h"
#include "store/transfer/plane_bases.h"

namespace strata {

struct DirectOptions {
  uint32_t max_waiting_jobs = 256;            // accepted jobs not yet reported
  Durability durability = Durability::kNone;  // fdatasync + directory fsync per record
  DirectBatchBounds batch;                    // cuFile batch bounds
  StoreClock clock{};                         // only `wall` (header creation time)
  // Shared with the other transports over the same record directory
  // (row_checksums.h; LocalDisk sets it); null: the transport keeps its own.
  std::shared_ptr<RowChecksums> row_checksums = nullptr;
};

struct DirectStats {
  uint64_t jobs_done = 0;
  uint64_t jobs_failed = 0;
  uint64_t bytes_written = 0;
  uint64_t bytes_read = 0;
  uint64_t checksum_failures = 0;
  uint64_t header_mismatches = 0;
};

class DirectTransport final : public DiskTransport {
 public:
  // `fs` and the directory at `dir_fd` (the record directory) outlive the
  // transport; `planes` gives one RankPlanes per rank of `geometry`, device
  // addresses that `io` and `checksums` accept. Submit reads its
  // current_bases() for each store and fetch, and the job runs on that
  // snapshot (plane_bases.h's contract: an attached runtime's planes that
  // may open elsewhere on each attach); none mapped refuses the job.
  DirectTransport(const CacheGeometry& geometry, const NamespaceIdentity& identity,
                  const LayoutFingerprint& fingerprint, FileSystem& fs, int dir_fd,
                  std::shared_ptr<const PlaneBaseSource> planes, std::unique_ptr<DirectFileIo> io,
                  std::unique_ptr<DeviceRecordChecksums> checksums, DirectOptions options = {});
  ~DirectTransport() override;
  DirectTransport(const DirectTransport&) = delete;
  DirectTransport& operator=(const DirectTransport&) = delete;

  // Remembers the row checksums of the records a scan kept (call before the
  // first Submit that fetches them).
  void Seed(const ScanReport& report) override;

  // kUnavailable for a store or fetch while `planes` has none mapped.
  Status Submit(RecordJob job) override;
  bool device_jobs_stage() const override { return false; }
  void Poll(std::vector<RecordJobDone>& out) override;
  bool WaitForCompletion(std::chrono::milliseconds timeout) override;
  void NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) override;
  Status stopped() const override { return Status::Ok(); }
  // Runs the accepted jobs within `deadline` and joins the worker. On
  // timeout kAborted is returned and the worker is left to finish the job it
  // is running (with what it uses: device memory must stay alive); the jobs
  // still queued fail with kAborted, unrun, reported by the next Poll (so
  // whoever counted them, an attach gate, hears of them). Either way the worker releases
  // the seams (the DirectFileIo's registrations) as it ends, whether or not
  // the transport is ever destroyed.
  Status Close(std::chrono::milliseconds deadline) override;

  DirectStats stats() const;

 private:
  struct Worker;
  std::shared_ptr<Worker> worker_;  // shared with the worker thread
  std::thread thread_;
  bool closed_ = false;
};

}  // namespace strata
