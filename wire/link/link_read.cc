// Link::Impl: opening the stream and the read path (wire/link/link_impl.h).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

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

// Reads only once every read-ahead byte is parsed.
void Link::Impl::ReadNext() {
  if (closed()) return;
  const std::span<std::byte> rest = reader_.NextBuffer().subspan(filled_);
  if (rest.size() >= kReadAheadBytes) {
    stream_->AsyncReadExactly(rest,
                              [this, self = Self()](const std::error_code& error, size_t bytes) {
                                OnRead(error, bytes, /*direct=*/true);
                              });
    return;
  }
  if (read_ahead_.empty()) read_ahead_.resize(kReadAheadBytes);
  stream_->AsyncReadSome(read_ahead_,
                         [this, self = Self()](const std::error_code& error, size_t bytes) {
                           OnRead(error, bytes, /*direct=*/false);
                         });
}

void Link::Impl::OnRead(const std::error_code& error, size_t bytes, bool direct) {
  if (closed()) return;
  if (bytes > 0) {
    MutexLock lock(mutex_);
    stats_.bytes_in += bytes;
    if (liveness_) liveness_->Received(std::chrono::steady_clock::now());
  }
  if (error == asio::error::eof && bytes == 0 && reader_.at_frame_start() && filled_ == 0) {
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
  if (direct) {
    if (!AdvanceReader()) return;
  } else {
    ahead_begin_ = 0;
    ahead_end_ = bytes;
  }
  ParseThenReadNext();
}

// Hands the read-ahead bytes to the frame reader, delivering every frame
// they complete, then reads again (the rest of a frame, or the next).
void Link::Impl::ParseThenReadNext() {
  for (;;) {
    if (closed()) return;
    const std::span<std::byte> rest = reader_.NextBuffer().subspan(filled_);
    const size_t n = std::min(rest.size(), ahead_end_ - ahead_begin_);
    if (n > 0) std::memcpy(rest.data(), read_ahead_.data() + ahead_begin_, n);
    ahead_begin_ += n;
    filled_ += n;
    if (n < rest.size()) break;  // every read-ahead byte is used
    if (!AdvanceReader()) return;
  }
  ReadNext();
}

bool Link::Impl::AdvanceReader() {
  filled_ = 0;
  // Before the segment table is sized: a Hello accepted meanwhile lifts the
  // limit for this frame already.
  reader_.set_frame_bytes_max(frame_limit_bytes_.load());
  switch (reader_.Advance()) {
    case FrameReader::Step::kNeedMore: return true;
    case FrameReader::Step::kRejected: Reject(reader_.rejection(), reader_.error()); return false;
    case FrameReader::Step::kFrameReady: return OnFrame();
  }
  return false;
}

bool Link::Impl::OnFrame() {
  Result<Message> message = DecodeFrame(reader_.frame(), frame_limit_bytes_.load());
  if (!message.ok()) {
    const bool readable = message.status().code() == StatusCode::kInvalidArgument;
    Reject(readable ? FrameRejection::kInvalidMessage : FrameRejection::kMalformed,
           message.status());
    return false;
  }
  {
    MutexLock lock(mutex_);
    ++stats_.frames_in;
  }
  reader_.Reset();
  if (!closing() && handlers_.on_message) handlers_.on_message(std::move(*message));
  return true;
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
