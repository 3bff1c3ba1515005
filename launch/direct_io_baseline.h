// The disk baseline benchmarks print beside their results: a plain
// sequential O_DIRECT write or read of a given number of bytes over one
// preallocated file in the record directory, through io_uring with a fixed
// request size and queue depth, on a thread with the disk thread's
// scheduling (SCHED_BATCH, same nice), measured in the same run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "store/block_io.h"
#include "store/file_system.h"

namespace strata {

struct DirectIoBaseline {
  uint32_t requests = 8;                // in flight
  uint64_t request_bytes = 8ull << 20;  // per request
  int nice = 10;                        // the disk thread's default
};

struct DirectIoResult {
  uint64_t bytes = 0;
  double seconds = 0;
  double cpu_seconds = 0;
  std::vector<double> latency_ms;  // per request
  double gbps() const { return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0; }
};

// Writes (op kWrite: creates and preallocates `name`, timed with the I/O)
// or reads back (kRead) `bytes` sequentially in `dir_fd`, from or into
// `memory` block by block, wrapping around. `memory` must be 4 KiB aligned
// and hold at least one request. The file stays for a read; remove it with
// fs.Unlink.
Result<DirectIoResult> RunDirectIoBaseline(FileSystem& fs, int dir_fd, const std::string& name,
                                           BlockOp op, uint64_t bytes, std::span<std::byte> memory,
                                           const DirectIoBaseline& options);

// CPU seconds of this process so far (user + system).
double ProcessCpuSeconds();

// Runs `work` on a new thread scheduled like Strata's worker threads
// (SCHED_BATCH, `nice`), and waits for it: baselines get the CPU share the
// transfer and disk threads get.
void RunLikeWorkerThreads(int nice, const std::function<void()>& work);

}  // namespace strata
