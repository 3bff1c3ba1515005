// DiskThread: one thread that moves record files between a record directory
// and caller-owned, 4 KiB-aligned memory through a BlockIo (io_uring in
// production), running with SCHED_BATCH and a positive nice value.
//
// Jobs: write a record from buffer pieces, read a whole record or a page
// suffix plus the row into pieces, truncate a record at its row, unlink one.
// Submit never blocks: it fails with kBusy when max_outstanding_jobs jobs are
// submitted and not yet polled. Completions are collected with Poll (never
// blocks) or, in tests and tools, WaitForCompletion (bounded).
//
// Jobs on one record (one key) must not overlap: the caller (the index, which
// pins a record while a job uses its file) serializes them.
//
// Buffers: a piece must stay valid and untouched from Submit until its job's
// completion is polled; if Shutdown reports that the drain missed its
// deadline, the buffers must be kept alive for good (the kernel may still
// write into them). Writes compute one xxh3 per stored page record and one
// over the row (unless the job brings them); reads check the file's header against the expected one
// before any payload I/O and verify every page and row they read.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "store/base/idle_spin.h"
#include "store/base/ids.h"
#include "store/base/wake_signal.h"
#include "store/io/block_io.h"
#include "store/io/file_system.h"
#include "store/record/record_file.h"
#include "store/record/record_header.h"

namespace strata {

// A caller-owned span of memory: address and length multiples of 4 KiB.
struct IoPiece {
  std::byte* data = nullptr;
  uint64_t bytes = 0;
};

// Writes "<key>.ckpt" through a temporary file. `pages` holds one piece per
// stored page record, each exactly the header's stored page-record bytes;
// `row` covers the stored row segment in order, or is empty to write the
// record without its row. The thread fills in the checksums; the caller's
// header supplies everything else (including created_unix_ns).
//
// A caller that already hashed the bytes while they were in its cache (the
// staged transport's copy-out, issue 18) passes the sums: then the thread
// writes them instead of hashing again. They must be XXH3 (Xxh3) of exactly
// the bytes the pieces hold from Submit on, or the record is written with
// wrong checksums and every later read of it fails as corrupt.
struct WriteRecordJob {
  RecordHeader header;
  std::vector<IoPiece> pages;
  std::vector<IoPiece> row;
  Durability durability = Durability::kNone;
  std::vector<uint64_t> page_sums = {};            // empty, or one per piece of `pages`
  std::optional<uint64_t> row_sum = std::nullopt;  // only with a row
};

// Reads pages [first_page, tail_page_count) into `pages` (one piece per page
// record) and, when `row` is non-empty, the row segment into `row`. The file's
// header must equal `expected` (ignoring creation time) before anything else
// is read.
struct ReadRecordJob {
  RecordHeader expected;
  uint32_t first_page = 0;
  std::vector<IoPiece> pages;
  std::vector<IoPiece> row;
};

// Truncates "<key>.ckpt" at its row segment offset (drops the row).
struct TruncateRecordJob {
  RecordHeader expected;
  Durability durability = Durability::kNone;
};

// Unlinks "<key>.ckpt"; a missing file is success.
struct UnlinkRecordJob {
  PrefixKey key;
  Durability durability = Durability::kNone;
};

using DiskJobBody = std::variant<WriteRecordJob, ReadRecordJob, TruncateRecordJob, UnlinkRecordJob>;

struct DiskJob {
  JobId id;
  DiskJobBody body;
};

struct DiskCompletion {
  JobId id;
  Status status;
  uint64_t payload_bytes = 0;          // page and row bytes moved
  std::optional<RecordHeader> header;  // writes: the header as written (with row checksum)
  std::optional<uint32_t> bad_page;    // reads: the first page that failed its checksum
};

struct DiskThreadOptions {
  uint32_t max_outstanding_jobs = 64;       // submitted and not yet polled
  uint32_t max_active_jobs = 8;             // jobs with I/O under way at once
  uint32_t max_inflight_requests = 32;      // BlockIo requests at once (<= its capacity)
  uint64_t max_request_bytes = 8ull << 20;  // one read or write: 8 MiB
  int nice = 10;                            // positive: below serving threads
  // With no job under way, how long the thread checks for a new one
  // without sleeping (store/base/idle_spin.h); zero on small machines.
  std::chrono::microseconds idle_spin = DefaultIdleSpin();
};

struct DiskThreadStats {
  uint64_t jobs_completed = 0;
  uint64_t jobs_failed = 0;
  uint64_t bytes_written = 0;       // payload bytes of committed writes
  uint64_t bytes_read = 0;          // payload bytes of verified reads
  uint64_t checksum_failures = 0;   // reads with a page or row that failed
  uint64_t header_mismatches = 0;   // reads refused before payload I/O
  uint64_t write_hash_ns = 0;       // thread CPU time computing checksums on writes
  uint64_t read_hash_ns = 0;        // thread CPU time verifying checksums on reads
  uint64_t busy_ns = 0;             // wall time not waiting for completions (syscalls, hashing)
  uint64_t idle_spin_ns = 0;        // wall time spinning for a new job (idle_spin), not in busy_ns
  bool scheduling_applied = false;  // SCHED_BATCH and the nice value took effect
};

class DiskThread {
 public:
  // Starts the thread over the record directory open at `dir_fd` (borrowed:
  // it must outlive the DiskThread). Probes O_DIRECT first: a filesystem that
  // refuses it fails here with kFailedPrecondition naming it.
  static Result<std::unique_ptr<DiskThread>> Start(FileSystem& fs, std::unique_ptr<BlockIo> io,
                                                   int dir_fd, std::string dir_path,
                                                   DiskThreadOptions options);
  // Calls Shutdown with kDefaultShutdownDeadline if it was not called.
  ~DiskThread();
  DiskThread(const DiskThread&) = delete;
  DiskThread& operator=(const DiskThread&) = delete;

  static constexpr std::chrono::milliseconds kDefaultShutdownDeadline{10'000};

  // Owner thread. kInvalidArgument for a malformed job (checked here),
  // kBusy when max_outstanding_jobs are outstanding, kAborted after Shutdown.
  Status Submit(DiskJob job);
  // Owner thread. Appends every available completion; never blocks.
  size_t Poll(std::vector<DiskCompletion>& out);
  // Owner thread. Waits at most `bound` until a completion is available.
  bool WaitForCompletion(std::chrono::milliseconds bound);
  // Owner thread. From now on every completion also notifies `signal` (the
  // owner's one wait over several sources); null stops that. A completion
  // already waiting for Poll notifies it at once.
  void NotifyOnCompletion(std::shared_ptr<WakeSignal> signal);

  // Stops the thread: queued jobs complete with kAborted, jobs under way stop
  // issuing I/O and complete with kAborted once the kernel has returned every
  // buffer. Returns kAborted if that drain misses `deadline`: the buffers must
  // stay allocated, and a later call may wait again. If the DiskThread is
  // destroyed undrained, its thread is detached and keeps the state alive;
  // the caller must then never release the buffers.
  Status Shutdown(std::chrono::milliseconds deadline);

  DiskThreadStats stats() const;
  // The kernel thread id, once started (for checking its scheduling).
  int thread_id() const;

  struct State;  // shared with the thread; defined in disk_thread.cc

 private:
  explicit DiskThread(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
  std::optional<Status> shutdown_result_;  // set once the thread was joined
};

}  // namespace strata
