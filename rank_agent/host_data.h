// The bytes of a host-data job (RecordJob::host_data) on a record link
// (docs/wire.md, JobData): one rank's share of a record as HostBuffers (the
// page records in order, then the row segment), cut into JobData chunks by
// the sender and put back together by the receiver, rank zero's
// ShardedTransport and a peer's RankAgent alike. Pure: no I/O.
#pragma once

#include <cstdint>
#include <vector>

#include "store/base/ids.h"
#include "store/base/status.h"
#include "store/tier/disk_transport.h"
#include "wire/messages.h"

namespace strata {

// The bytes `buffers` covers: its pieces' sum.
uint64_t HostBytes(const HostBuffers& buffers);

// `buffers` as the JobData chunks of job `id`, in order, each at most
// wire::kJobDataChunkBytesMax. Empty for empty buffers.
std::vector<wire::JobData> ChunksOf(JobId id, const HostBuffers& buffers);

// Puts one share back together from its chunks, into the pieces of the
// HostBuffers it was made with (which must outlive it).
class HostDataReceiver {
 public:
  explicit HostDataReceiver(const HostBuffers& buffers);

  // Copies one chunk in. kInvalidArgument naming what is wrong, and nothing
  // copied, for a chunk out of order, declaring another total, or past the
  // end.
  Status Add(const wire::JobData& chunk);
  bool complete() const { return received_ == total_; }
  uint64_t received() const { return received_; }
  uint64_t total() const { return total_; }

 private:
  std::vector<IoPiece> pieces_;  // pages then row
  uint64_t total_ = 0;
  uint64_t received_ = 0;
  size_t piece_ = 0;         // the piece the next byte lands in
  uint64_t piece_used_ = 0;  // bytes of it already filled
};

}  // namespace strata
