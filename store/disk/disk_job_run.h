// Internal to the disk thread (disk_thread.cc, disk_write_run.cc,
// disk_read_run.cc): a job under way is a JobRun, a small state machine that
// issues BlockIo requests through a RequestSink and is told of each one's
// outcome. Everything here runs on the disk thread only.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "store/disk/disk_thread.h"
#include "store/io/block_io.h"
#include "store/io/file_system.h"

namespace strata::disk_internal {

// Counters the runs update; read from any thread.
struct SharedCounters {
  std::atomic<uint64_t> bytes_written{0};
  std::atomic<uint64_t> bytes_read{0};
  std::atomic<uint64_t> checksum_failures{0};
  std::atomic<uint64_t> header_mismatches{0};
  std::atomic<uint64_t> write_hash_ns{0};
  std::atomic<uint64_t> read_hash_ns{0};
};

// What every run may use.
struct RunContext {
  FileSystem& fs;
  int dir_fd;
  uint64_t max_request_bytes;
  SharedCounters& counters;
};

class JobRun;

class RequestSink {
 public:
  virtual ~RequestSink() = default;
  virtual bool HasRoom() const = 0;
  // Queues one request for `run`; `part` is returned to run->OnDone. The
  // iovecs (and for syncs, none) are kept by the sink until completion.
  virtual void Issue(JobRun& run, uint32_t part, BlockOp op, int fd, uint64_t offset,
                     std::vector<iovec> iov) = 0;
};

class JobRun {
 public:
  explicit JobRun(JobId id) : id_(id) {}
  virtual ~JobRun() = default;
  JobRun(const JobRun&) = delete;
  JobRun& operator=(const JobRun&) = delete;

  // Does synchronous steps and issues requests while the sink has room.
  virtual void Advance(RequestSink& sink) = 0;
  // Checksum work the run has deferred until its requests were issued (or,
  // for reads, until their bytes landed and the freed slots were refilled):
  // the thread calls HashSome, one bounded unit (a page or a row piece) at a
  // time, and takes new completions between units, so hashing never keeps
  // the disk's queue short. A run does not finish, nor write a header, while
  // work is pending.
  virtual bool HashPending() const { return false; }
  virtual void HashSome() {}
  // The request `part` finished: OK after all its bytes moved, else why not.
  virtual void OnDone(uint32_t part, const Status& status) = 0;
  // True once the run needs nothing more and has no request in flight.
  virtual bool Finished() const = 0;
  // Called once, after Finished().
  virtual DiskCompletion TakeCompletion() = 0;
  // Stop issuing requests and complete with `why` once in-flight ones drain.
  virtual void Abort(const Status& why) = 0;

  JobId id() const { return id_; }
  uint32_t inflight = 0;  // maintained by the thread

 private:
  JobId id_;
};

// A contiguous file range to be moved to or from an ordered list of pieces,
// cut into requests of at most `max_bytes` and IOV_MAX iovecs.
struct Chunk {
  uint64_t offset = 0;
  std::vector<iovec> iov;
  std::vector<uint32_t> iov_piece;  // the piece each iovec lies in
  uint32_t first_piece = 0;         // pieces this chunk touches, inclusive
  uint32_t last_piece = 0;
};
std::vector<Chunk> CutIntoChunks(const std::vector<IoPiece>& pieces, uint64_t file_offset,
                                 uint64_t max_bytes);

// Checks a job's shape before it is queued: kInvalidArgument naming the
// piece or count that is wrong.
Status ValidateJob(const DiskJobBody& body);

// A run that does one synchronous step (truncate, unlink) on its first Advance.
std::unique_ptr<JobRun> MakeSyncRun(JobId id, std::function<Status()> op);

std::unique_ptr<JobRun> MakeWriteRun(JobId id, WriteRecordJob job, const RunContext& ctx);
std::unique_ptr<JobRun> MakeReadRun(JobId id, ReadRecordJob job, const RunContext& ctx);

}  // namespace strata::disk_internal
