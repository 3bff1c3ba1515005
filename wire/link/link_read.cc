// Link::Impl: opening the stream and the read path (wire/link/link_impl.h).
#include <fmt/format.h>

#include "wire/link/link_impl.h"

namespace strata::wire {

void Link::Impl::OnOpened(Result<std::unique_ptr<internal::Stream>> opened) {
  if (closed()) {
    if (opened.ok()) (*opened)->Close();
    return;
  }
  if (!opened.ok() && opener_->HandshakeFailed()) {
    {
      MutexLock lock(mutex_);
      ++stats_.tls_handshake_failures;
    }
    FinishClose(CloseCause::kHandshakeFailed, opened.status());
    return;
  }
  if (!opened.ok()) {
    FinishClose(CloseCause::kConnectFailed, opened.status());
    return;
  }
  stream_ = std::move(*opened);
  {
    MutexLock lock(mutex_);
    state_.phase = LinkPhase::kOpen;
    local_ = stream_->local_endpoint();
    direct_ = stream_.get();
  }
  if (close_begun_) {
    MaybeEndStream();
  } else if (started_) {
    BeginReading();
  }
  KickWrites();
}

void Link::Impl::BeginReading() {
  if (handlers_.on_open) handlers_.on_open();
  reading_ = true;
  if (hello_accepted_io_) StartLiveness();
  ReadNext();
}

void Link::Impl::ReadNext() {
  if (closed()) return;
  stream_->AsyncReadExactly(
      reader_.NextBuffer(),
      [this, self = Self()](const std::error_code& error, size_t bytes) { OnRead(error, bytes); });
}

void Link::Impl::OnRead(const std::error_code& error, size_t bytes) {
  if (closed()) return;
  if (bytes > 0) {
    MutexLock lock(mutex_);
    stats_.bytes_in += bytes;
    if (liveness_) liveness_->Received(std::chrono::steady_clock::now());
  }
  if (error == asio::error::eof && bytes == 0 && reader_.at_frame_start()) {
    peer_ended_ = true;
    if (!close_begun_) {
      FinishClose(CloseCause::kPeerClosed, Status::Unavailable("the peer closed the connection"));
    } else {
      MaybeEndStream();
    }
    return;
  }
  if (error == asio::error::eof) {
    FinishClose(CloseCause::kIoError,
                Status::Unavailable("the peer ended the stream inside a frame"));
    return;
  }
  if (error) {
    FinishClose(CloseCause::kIoError, Status::Unavailable("read failed: " + error.message()));
    return;
  }
  // Before the segment table is sized: a Hello accepted meanwhile lifts the
  // limit for this frame already.
  reader_.set_frame_bytes_max(frame_limit_bytes_.load());
  switch (reader_.Advance()) {
    case FrameReader::Step::kNeedMore: ReadNext(); return;
    case FrameReader::Step::kRejected: Reject(reader_.rejection(), reader_.error()); return;
    case FrameReader::Step::kFrameReady: OnFrame(); return;
  }
}

void Link::Impl::OnFrame() {
  Result<Message> message = DecodeFrame(reader_.frame(), frame_limit_bytes_.load());
  if (!message.ok()) {
    const bool readable = message.status().code() == StatusCode::kInvalidArgument;
    Reject(readable ? FrameRejection::kInvalidMessage : FrameRejection::kMalformed,
           message.status());
    return;
  }
  {
    MutexLock lock(mutex_);
    ++stats_.frames_in;
  }
  reader_.Reset();
  if (!closing() && handlers_.on_message) handlers_.on_message(std::move(*message));
  ReadNext();
}

void Link::Impl::Reject(FrameRejection rejection, const Status& error) {
  {
    MutexLock lock(mutex_);
    ++stats_.rejected_frames[static_cast<size_t>(rejection)];
  }
  FinishClose(CloseCause::kRejectedFrame,
              error.WithContext(fmt::format("{} frame", FrameRejectionName(rejection))));
}

}  // namespace strata::wire
