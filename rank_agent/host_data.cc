#include "rank_agent/host_data.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace strata {
namespace {

std::vector<IoPiece> PiecesOf(const HostBuffers& buffers) {
  std::vector<IoPiece> out = buffers.pages;
  out.insert(out.end(), buffers.row.begin(), buffers.row.end());
  return out;
}

}  // namespace

uint64_t HostBytes(const HostBuffers& buffers) {
  uint64_t n = 0;
  for (const IoPiece& p : buffers.pages) n += p.bytes;
  for (const IoPiece& p : buffers.row) n += p.bytes;
  return n;
}

ShareCursor::ShareCursor(JobId id, const HostBuffers& buffers)
    : id_(id), pieces_(PiecesOf(buffers)), total_(HostBytes(buffers)) {}

wire::JobData ShareCursor::Next() {
  wire::JobData chunk{.id = id_, .offset = sent_, .total = total_, .data = {}};
  const uint64_t n = std::min<uint64_t>(total_ - sent_, wire::kJobDataChunkBytesMax);
  chunk.data.reserve(n);
  while (chunk.data.size() < n) {
    const IoPiece& p = pieces_[piece_];
    const uint64_t take = std::min<uint64_t>(p.bytes - piece_used_, n - chunk.data.size());
    chunk.data.insert(chunk.data.end(), p.data + piece_used_, p.data + piece_used_ + take);
    piece_used_ += take;
    if (piece_used_ == p.bytes) {
      ++piece_;
      piece_used_ = 0;
    }
  }
  sent_ += n;
  return chunk;
}

std::vector<wire::JobData> ChunksOf(JobId id, const HostBuffers& buffers) {
  ShareCursor cursor(id, buffers);
  std::vector<wire::JobData> out;
  while (!cursor.done()) out.push_back(cursor.Next());
  return out;
}

size_t PacedQueueLimit(const wire::MessageChannel& link) {
  // A chunk's frame: its bytes and the envelope around them.
  constexpr size_t kChunkFrameBytes = wire::kJobDataChunkBytesMax + (size_t{64} << 10);
  const size_t bound = link.send_queue_bytes_max();
  const size_t room = bound > kChunkFrameBytes ? bound - kChunkFrameBytes : 0;
  return std::max<size_t>(1, std::min(kPacedQueueBytes, room));
}

Result<bool> SendPaced(wire::MessageChannel& link, ShareCursor& cursor) {
  const size_t limit = PacedQueueLimit(link);
  while (!cursor.done()) {
    if (link.queued_bytes() >= limit) {
      link.NotifyWhenDrained();  // at once if it drained since
      return false;
    }
    STRATA_RETURN_IF_ERROR(link.Send(cursor.Next()));
  }
  return true;
}

HostDataReceiver::HostDataReceiver(const HostBuffers& buffers)
    : pieces_(PiecesOf(buffers)), total_(HostBytes(buffers)) {}

Status HostDataReceiver::Add(const wire::JobData& chunk) {
  const std::string job = "job " + std::to_string(chunk.id.value);
  if (chunk.total != total_) {
    return Status::InvalidArgument("JobData of " + job + " declares " +
                                   std::to_string(chunk.total) + " bytes, the share holds " +
                                   std::to_string(total_));
  }
  if (chunk.offset != received_) {
    return Status::InvalidArgument("JobData of " + job + " at offset " +
                                   std::to_string(chunk.offset) + ", expected " +
                                   std::to_string(received_));
  }
  if (chunk.data.size() > total_ - received_) {
    return Status::InvalidArgument("JobData of " + job + " runs past the share's " +
                                   std::to_string(total_) + " bytes");
  }
  uint64_t done = 0;
  while (done < chunk.data.size()) {
    const IoPiece& p = pieces_[piece_];
    const uint64_t n = std::min<uint64_t>(p.bytes - piece_used_, chunk.data.size() - done);
    std::memcpy(p.data + piece_used_, chunk.data.data() + done, n);
    done += n;
    piece_used_ += n;
    if (piece_used_ == p.bytes) {
      ++piece_;
      piece_used_ = 0;
    }
  }
  received_ += chunk.data.size();
  return Status::Ok();
}

}  // namespace strata
