#include "coordinator/pool/remote_slots.h"

#include <algorithm>
#include <string>
#include <utility>

#include "coordinator/pool/hashed_copy.h"
#include "coordinator/pool/pool_hello_proof.h"
#include "coordinator/pool/pool_tcp_open.h"

namespace strata::pool {

std::vector<RecordWindow> RecordWindows(uint64_t record_bytes, uint64_t slot_bytes,
                                        uint64_t window_bytes) {
  std::vector<RecordWindow> windows;
  if (slot_bytes == 0 || window_bytes == 0) return windows;
  for (uint64_t at = 0; at < record_bytes;) {
    const uint64_t slot_left = slot_bytes - at % slot_bytes;
    const uint64_t n = std::min({window_bytes, slot_left, record_bytes - at});
    windows.push_back({.offset = at, .bytes = n});
    at += n;
  }
  return windows;
}

Result<std::unique_ptr<RemoteSlots>> RemoteSlots::Open(const DataChannelOptions& options) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DataStream> stream, OpenStream(options));
  return std::unique_ptr<RemoteSlots>(new RemoteSlots(options, std::move(stream)));
}

Result<std::unique_ptr<DataStream>> RemoteSlots::OpenStream(const DataChannelOptions& options) {
  if (options.window_bytes == 0 || options.window_credits == 0) {
    return Status::InvalidArgument("a data channel without windows or credits");
  }
  const auto deadline = std::chrono::steady_clock::now() + options.bound;
  STRATA_ASSIGN_OR_RETURN(PoolTcpOpened opened,
                          OpenPoolTcp(options.address, options.tls, options.bound, deadline));
  const PoolDataHello hello{.instance = options.instance,
                            .token = options.token,
                            .proof = ProvePoolData(options.job_secret, opened.challenge,
                                                   options.instance, options.token)};
  STRATA_RETURN_IF_ERROR(opened.socket.Send(hello));
  STRATA_ASSIGN_OR_RETURN(
      PoolReceived answer,
      opened.socket.Receive(std::max(std::chrono::milliseconds(1),
                                     std::chrono::duration_cast<std::chrono::milliseconds>(
                                         deadline - std::chrono::steady_clock::now()))));
  const auto* accept = std::get_if<PoolDataAccept>(&answer.message);
  if (accept == nullptr) {
    return Status::Corruption("the pool answered a data connection's hello with something else");
  }
  if (!accept->status.ok()) {
    return Status::FailedPrecondition("the pool refused a data connection: " +
                                      accept->status.ToString());
  }
  auto [socket, tls] = opened.socket.Release();
  return std::make_unique<DataStream>(std::move(socket), std::move(tls));
}

Status RemoteSlots::Usable() {
  if (broken_.ok()) return Status::Ok();
  // The connection broke (a stall, a manager that dropped it): a new one of
  // the same session, once per copy; refused once the session has ended.
  Result<std::unique_ptr<DataStream>> stream = OpenStream(options_);
  if (!stream.ok()) return stream.status().WithContext("reopening a data connection");
  stream_ = std::move(*stream);
  broken_ = Status::Ok();
  return Status::Ok();
}

Result<uint64_t> RemoteSlots::CopyIn(PutId put, std::span<const SlotId> slots,
                                     std::span<const std::byte> bytes, HashPipeline& hash) {
  MutexLock lock(mu_);
  STRATA_RETURN_IF_ERROR(Usable());
  STRATA_RETURN_IF_ERROR(
      CheckSlotsFit(slots, bytes.size(), options_.slot_bytes, options_.slot_count));
  const std::vector<RecordWindow> windows =
      RecordWindows(bytes.size(), options_.slot_bytes, options_.window_bytes);
  const auto fail = [&](Status why) REQUIRES(mu_) {
    broken_ = why;
    stream_->Shutdown();
    (void)hash.Digest();  // no piece of `bytes` is read after the return
    return why;
  };
  hash.Reset();
  const uint64_t first_id = next_request_;
  size_t sent = 0;
  size_t answered = 0;
  Status refused;  // the first window the manager refused: no more are sent
  while (answered < sent || (refused.ok() && sent < windows.size())) {
    while (refused.ok() && sent < windows.size() && sent - answered < credits()) {
      const RecordWindow w = windows[sent];
      const std::span<const std::byte> piece = bytes.subspan(w.offset, w.bytes);
      hash.Update(piece);
      const PoolSlotWrite write{
          .request_id = next_request_++, .put = put, .offset = w.offset, .bytes = w.bytes};
      if (Status s = stream_->Send(write, piece, Deadline()); !s.ok()) return fail(s);
      ++sent;
    }
    Result<PoolMessage> answer = stream_->Receive(Deadline());
    if (!answer.ok()) return fail(answer.status());
    const auto* done = std::get_if<PoolDone>(&*answer);
    if (done == nullptr || done->request_id != first_id + answered) {
      return fail(Status::Corruption("the pool answered a window out of turn"));
    }
    if (!done->status.ok() && refused.ok()) refused = done->status;
    ++answered;
  }
  const uint64_t checksum = hash.Digest();
  if (!refused.ok())
    return refused.WithContext("the pool refused a window of put " + std::to_string(put.value));
  return checksum;
}

Status RemoteSlots::CopyOut(ClaimId claim, uint32_t index, const ClaimedRecord& r,
                            std::vector<std::byte>& out, HashPipeline& hash) {
  MutexLock lock(mu_);
  STRATA_RETURN_IF_ERROR(Usable());
  STRATA_RETURN_IF_ERROR(CheckSlotsFit(r.slots, r.bytes, options_.slot_bytes, options_.slot_count));
  // Reset first: it waits for any piece still being hashed, which may lie in `out`.
  hash.Reset();
  out.resize(r.bytes);
  const std::vector<RecordWindow> windows =
      RecordWindows(r.bytes, options_.slot_bytes, options_.window_bytes);
  const auto fail = [&](Status why) REQUIRES(mu_) {
    broken_ = why;
    stream_->Shutdown();
    (void)hash.Digest();
    return why;
  };
  const uint64_t first_id = next_request_;
  size_t sent = 0;
  size_t answered = 0;
  Status refused;
  while (answered < sent || (refused.ok() && sent < windows.size())) {
    while (refused.ok() && sent < windows.size() && sent - answered < credits()) {
      const RecordWindow w = windows[sent];
      const PoolSlotRead read{.request_id = next_request_++,
                              .claim = claim,
                              .record = index,
                              .offset = w.offset,
                              .bytes = w.bytes};
      if (Status s = stream_->Send(read, {}, Deadline()); !s.ok()) return fail(s);
      ++sent;
    }
    Result<PoolMessage> answer = stream_->Receive(Deadline());
    if (!answer.ok()) return fail(answer.status());
    const auto* data = std::get_if<PoolSlotData>(&*answer);
    if (data == nullptr || data->request_id != first_id + answered) {
      return fail(Status::Corruption("the pool answered a window out of turn"));
    }
    const RecordWindow w = windows[answered++];
    if (!data->status.ok()) {
      if (data->bytes != 0) return fail(Status::Corruption("a refused window carried bytes"));
      if (refused.ok()) refused = data->status;
      continue;
    }
    if (data->bytes != w.bytes) {
      return fail(Status::Corruption("the pool sent " + std::to_string(data->bytes) +
                                     " bytes for a window of " + std::to_string(w.bytes)));
    }
    const std::span<std::byte> landed = std::span<std::byte>(out).subspan(w.offset, w.bytes);
    if (Status s = stream_->ReadBytes(landed, Deadline()); !s.ok()) return fail(s);
    hash.Update(landed);
  }
  const uint64_t checksum = hash.Digest();
  if (!refused.ok()) {
    return refused.WithContext("the pool refused a window of claim " + std::to_string(claim.value));
  }
  if (checksum != r.checksum) {
    return Status::Corruption("pooled record " + r.key.ToFileStem() + " fails its checksum");
  }
  return Status::Ok();
}

}  // namespace strata::pool
