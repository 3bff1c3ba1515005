// The baseline of `strata bench disk` and `strata bench store`: a plain sequential O_DIRECT write
// or read of one file through io_uring (BlockIo), with nothing of the record path (no checksums,
// headers, temporary names or renames).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "store/io/block_io.h"
#include "store/io/file_system.h"
#include "store/record/record_file.h"

namespace strata {

struct SequentialIoSpec {
  BlockOp op = BlockOp::kWrite;  // kWrite creates and preallocates the file; kRead reads it
  std::string name;              // the file, in the directory open at dir_fd
  uint64_t total_bytes = 0;
  uint64_t request_bytes = 0;                 // a multiple of 4 KiB
  uint32_t requests = 1;                      // in flight at once
  std::span<std::byte> memory;                // 4 KiB aligned; cycled through request by request
  Durability durability = Durability::kNone;  // kSync: one fdatasync after a write
  int nice = 0;  // the loop runs on a thread with SCHED_BATCH and this nice
};

struct SequentialIoResult {
  uint64_t bytes = 0;
  double seconds = 0;              // from the open (a write's create and fallocate included)
  double cpu_seconds = 0;          // process CPU time over the same span
  std::vector<double> latency_ms;  // per request
};

Result<SequentialIoResult> RunSequentialIo(FileSystem& fs, int dir_fd,
                                           const SequentialIoSpec& spec);

// Whether the directory `dir` (open at `dir_fd`) takes O_DIRECT files: a
// probe file is created with O_DIRECT and removed. kFailedPrecondition with
// a sentence naming `dir` when the filesystem refuses O_DIRECT (EINVAL: tmpfs
// before Linux 6.6, some FUSE and network filesystems); the benchmarks that
// write record files call it first, so such a --dir is a clear error.
Status CheckDirectIo(int dir_fd, const std::string& dir);

// CPU seconds per GB of one pass that reads every byte of `memory` once
// (summing 64-bit words, the next 4 KiB prefetched), on a thread scheduled
// like the disk thread (RunLikeWorkerThreads, `nice`), in whatever cache
// state the caller left it: right after plain O_DIRECT reads landed in it,
// the state a record read's checksums find their bytes in. A checksum must
// read every byte at least once, whatever the hash, so with plain O_DIRECT
// I/O's own CPU this is the floor of a checksummed disk path's CPU per GB
// (docs/performance.md, "Disk-path CPU cost"). 0 for an empty span.
double ReadPassCpuSecondsPerGb(std::span<const std::byte> memory, int nice);

// User + system CPU seconds of this process so far.
double ProcessCpuSeconds();

// Runs `work` on a new thread scheduled like Strata's worker threads
// (SCHED_BATCH, `nice`) and waits for it: baselines get the CPU share the
// transfer and disk threads get.
void RunLikeWorkerThreads(int nice, const std::function<void()>& work);

}  // namespace strata
