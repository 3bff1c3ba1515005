// BlockIo: asynchronous reads, writes and syncs on open file descriptors, the
// one seam under the disk thread's data path. The real implementation is
// io_uring (store/io/uring_block_io.h); a fault-injecting one can wrap or replace
// it. Submit, Reap and destruction belong to one owner thread; Wake may be
// called from any thread.
#pragma once

#include <sys/uio.h>

#include <chrono>
#include <cstdint>
#include <span>

#include "store/base/status.h"

namespace strata {

enum class BlockOp : unsigned char {
  kRead,      // preadv
  kWrite,     // pwritev
  kSyncData,  // fdatasync
  kSync,      // fsync (directories)
};

struct BlockRequest {
  uint64_t tag = 0;  // returned in the completion; never ~0
  BlockOp op = BlockOp::kRead;
  int fd = -1;
  uint64_t offset = 0;
  // kRead / kWrite: the buffers. The iovec array and the memory it names must
  // stay valid and untouched until this request's completion is reaped.
  const iovec* iov = nullptr;
  uint32_t iov_count = 0;
};

struct BlockCompletion {
  uint64_t tag = 0;
  int64_t result = 0;  // bytes transferred (0 for syncs), or -errno
};

class BlockIo {
 public:
  virtual ~BlockIo() = default;

  // The most requests that may be outstanding (submitted, not yet reaped).
  // Callers never exceed it.
  virtual uint32_t capacity() const = 0;

  // Hands requests to the kernel. From this call on, each request belongs to
  // the BlockIo until its completion is reaped, and completes exactly once,
  // even when Submit returns an error: the error only says the kernel could
  // not take them now, and the next Submit or Reap retries.
  virtual Status Submit(std::span<const BlockRequest> requests) = 0;

  // Collects up to out.size() completions, waiting at most `max_wait` for the
  // first one. Returns the count, which is 0 after a timeout or a Wake().
  virtual Result<size_t> Reap(std::span<BlockCompletion> out,
                              std::chrono::nanoseconds max_wait) = 0;

  // Makes a blocked Reap (or the next one) return promptly. Any thread.
  virtual void Wake() = 0;
};

}  // namespace strata
