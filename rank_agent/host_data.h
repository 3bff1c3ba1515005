// The bytes of a host-data job (RecordJob::host_data) on a record link
// (docs/wire.md, JobData): one rank's share of a record as HostBuffers (the
// page records in order, then the row segment), cut into JobData chunks by
// the sender and put back together by the receiver, rank zero's
// ShardedTransport and a peer's RankAgent alike. Pure but for SendPaced,
// which hands chunks to a link.
#pragma once

#include <cstdint>
#include <vector>

#include "store/base/ids.h"
#include "store/base/status.h"
#include "store/tier/disk_transport.h"
#include "wire/link/link.h"
#include "wire/messages.h"

namespace strata {

// The bytes `buffers` covers: its pieces' sum.
uint64_t HostBytes(const HostBuffers& buffers);

// One share of job `id` on its way out as JobData chunks, cut one at a time
// from the pieces of `buffers` (which must outlive it): a share may be far
// larger than a link should queue at once.
class ShareCursor {
 public:
  ShareCursor(JobId id, const HostBuffers& buffers);

  bool done() const { return sent_ == total_; }
  uint64_t sent() const { return sent_; }
  uint64_t total() const { return total_; }
  // The next chunk (at most wire::kJobDataChunkBytesMax bytes), advancing
  // past it. Only while !done().
  wire::JobData Next();

 private:
  JobId id_;
  std::vector<IoPiece> pieces_;  // pages then row
  uint64_t total_ = 0;
  uint64_t sent_ = 0;
  size_t piece_ = 0;         // the piece the next byte comes from
  uint64_t piece_used_ = 0;  // bytes of it already sent
};

// `buffers` as the JobData chunks of job `id`, in order, each at most
// wire::kJobDataChunkBytesMax. Empty for empty buffers.
std::vector<wire::JobData> ChunksOf(JobId id, const HostBuffers& buffers);

// A paced sender stops while the link queues at least this many bytes
// (wire::MessageChannel::queued_bytes), or less where the link's send queue
// bound leaves less room for one more chunk, and goes on when the link
// drained (NotifyWhenDrained, LinkHandlers::on_drained).
inline constexpr size_t kPacedQueueBytes = size_t{16} << 20;

// Where a paced sender stops on `link`: kPacedQueueBytes, or the link's
// bound less one chunk's frame; at least 1 (a chunk always fits an empty
// queue: a link queues at least one frame of the largest size). With the
// default 64 MiB bound the frames that follow a share (its Job, an answer)
// always fit too; a bound near its 16 MiB minimum may refuse one (kBusy).
size_t PacedQueueLimit(const wire::MessageChannel& link);

// Sends `cursor`'s chunks on `link` while it queues less than
// PacedQueueLimit. True once every chunk is sent; false when it stopped
// for the queue, having asked the link for on_drained. A refused send is
// returned (the share cannot be finished).
Result<bool> SendPaced(wire::MessageChannel& link, ShareCursor& cursor);

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
