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

Status RemoteSlots::Exchange(std::span<const RecordWindow> windows, HashPipeline& hash,
                             const SendWindow& send, const TakeAnswer& take, Status& refused) {
  const auto fail = [&](Status why) REQUIRES(mu_) {
    broken_ = why;
    stream_->Shutdown();
    (void)hash.Digest();  // no piece handed to the pipeline is read after the return
    return why;
  };
  const uint64_t first_id = next_request_;
  size_t sent = 0;
  size_t answered = 0;
  refused = Status::Ok();
  while (answered < sent || (refused.ok() && sent < windows.size())) {
    while (refused.ok() && sent < windows.size() && sent - answered < credits()) {
      if (Status s = send(windows[sent], next_request_++); !s.ok()) return fail(s);
      ++sent;
    }
    Result<PoolMessage> answer = stream_->Receive(Deadline());
    if (!answer.ok()) return fail(answer.status());
    if (AnsweredRequest(*answer) != std::optional<uint64_t>(first_id + answered)) {
      return fail(Status::Corruption("the pool answered a window out of turn"));
    }
    Status refusal;
    if (Status s = take(windows[answered++], *answer, refusal); !s.ok()) return fail(s);
    if (!refusal.ok() && refused.ok()) refused = refusal;
  }
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
  hash.Reset();
  Status refused;
  STRATA_RETURN_IF_ERROR(Exchange(
      windows, hash,
      [&](const RecordWindow& w, uint64_t id) REQUIRES(mu_) {
        const std::span<const std::byte> piece = bytes.subspan(w.offset, w.bytes);
        hash.Update(piece);
        return stream_->Send(
            PoolSlotWrite{.request_id = id, .put = put, .offset = w.offset, .bytes = w.bytes},
            piece, Deadline());
      },
      [](const RecordWindow&, const PoolMessage& answer, Status& refusal) {
        const auto* done = std::get_if<PoolDone>(&answer);
        if (done == nullptr) {
          return Status::Corruption("the pool answered a write with something else");
        }
        refusal = done->status;
        return Status::Ok();
      },
      refused));
  const uint64_t checksum = hash.Digest();
  if (!refused.ok()) {
    return refused.WithContext("the pool refused a window of put " + std::to_string(put.value));
  }
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
  Status refused;
  STRATA_RETURN_IF_ERROR(Exchange(
      windows, hash,
      [&](const RecordWindow& w, uint64_t id) REQUIRES(mu_) {
        return stream_->Send(PoolSlotRead{.request_id = id,
                                          .claim = claim,
                                          .record = index,
                                          .offset = w.offset,
                                          .bytes = w.bytes},
                             {}, Deadline());
      },
      [&](const RecordWindow& w, const PoolMessage& answer, Status& refusal) REQUIRES(mu_) {
        const auto* data = std::get_if<PoolSlotData>(&answer);
        if (data == nullptr) {
          return Status::Corruption("the pool answered a read with something else");
        }
        if (!data->status.ok()) {
          if (data->bytes != 0) return Status::Corruption("a refused window carried bytes");
          refusal = data->status;
          return Status::Ok();
        }
        if (data->bytes != w.bytes) {
          return Status::Corruption("the pool sent " + std::to_string(data->bytes) +
                                    " bytes for a window of " + std::to_string(w.bytes));
        }
        const std::span<std::byte> landed = std::span<std::byte>(out).subspan(w.offset, w.bytes);
        STRATA_RETURN_IF_ERROR(stream_->ReadBytes(landed, Deadline()));
        hash.Update(landed);
        return Status::Ok();
      },
      refused));
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
