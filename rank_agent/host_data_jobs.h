// HostDataJobs: a peer's host-data jobs (RecordJob::host_data; docs/wire.md,
// JobData) and the memory they run on. A store's bytes arrive as JobData
// before its Job and are kept until the Job runs; a fetch gets a buffer when
// it starts, and its bytes go back as JobData before its answer. Every
// buffer is held until the job's answer (Finish; a fetch's until its bytes
// are sent), so the transport never runs on freed memory.
//
// Rank zero's chunks that break the rules (out of order, past the total,
// more pending bytes than the bound) are a protocol violation: OnData's
// error ends the session. A store whose bytes are not its share's size
// fails on this rank (Begin). Rank zero keeps its host-data bytes in flight
// within half the bound (ShardedTransport).
//
// Thread: one caller at a time (the agent's serving lock).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "rank_agent/host_data.h"
#include "store/base/aligned_buffer.h"
#include "store/record/record_layout.h"

namespace strata {

// Bytes of stores' JobData a peer holds before their Jobs, at most: twice
// what rank zero keeps in flight (kHostDataInFlightBytesMax), so bytes of a
// store abandoned partway (dropped only when the next Job comes) never make
// the next share break it.
inline constexpr uint64_t kHostDataPendingBytesMax = uint64_t{1} << 30;

// A host-data fetch's bytes on their way back to rank zero: the buffer it
// read into, held until its last chunk is handed to the link.
struct FetchedShare {
  std::unique_ptr<AlignedBuffer> bytes;
  HostBuffers buffers;  // over `bytes`
};

class HostDataJobs {
 public:
  HostDataJobs(RecordLayout layout, uint64_t pending_bytes_max = kHostDataPendingBytesMax)
      : layout_(std::move(layout)), pending_bytes_max_(pending_bytes_max) {}

  // A chunk of a store's bytes from rank zero (the first one of a job sizes
  // its buffer). kInvalidArgument naming what is wrong: end the session.
  Status OnData(const wire::JobData& chunk);

  // A Job with this id arrived. Rank zero sends a store's JobData and its
  // Job back to back, so bytes of other stores whose Job never came were
  // abandoned (a send refused partway): they are dropped.
  void OnJob(JobId id);

  // The buffers host-data job `job` runs on: a store's received bytes (all
  // of them, exactly its share's size), or a fetch's buffer (made on the
  // first call). kInvalidArgument when a store's bytes are missing or of
  // another size. Callable again for a job the transport held (kBusy).
  Result<HostBuffers> Begin(const RecordJob& job);

  // The job was answered: frees its buffer or, for a fetch whose answer is
  // OK, hands it back with the bytes it read, to send before the answer.
  std::optional<FetchedShare> Finish(JobId id, bool ok);

  // Buffers held (pending stores, running jobs).
  size_t held() const { return jobs_.size(); }

 private:
  struct Held {
    std::unique_ptr<AlignedBuffer> bytes;
    HostBuffers buffers;                       // over `bytes` (a store's: one piece until Begin)
    std::optional<HostDataReceiver> receiver;  // a store's, while its bytes arrive
    bool fetch = false;
    bool job_arrived = false;  // its Job came (OnJob)
  };
  // The share `job` moves, over `base`.
  HostBuffers SharePieces(const RecordJob& job, std::byte* base) const;
  uint64_t ShareBytes(const RecordJob& job) const;
  // Drops stores' bytes whose Job never came, but `keep`'s.
  void DropAbandoned(JobId keep);

  RecordLayout layout_;
  uint64_t pending_bytes_max_;
  uint64_t pending_bytes_ = 0;  // stores' buffers not yet begun
  std::map<JobId, Held> jobs_;
};

}  // namespace strata
