// Link::Impl: the local close, the peer's end, and the one FinishClose every
// cause goes through (wire/link/link_impl.h).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "wire/link/link_impl.h"

namespace strata::wire {

std::string_view CloseCauseName(CloseCause cause) {
  switch (cause) {
    case CloseCause::kNone: return "not closed";
    case CloseCause::kLocalClose: return "closed locally";
    case CloseCause::kPeerClosed: return "closed by the peer";
    case CloseCause::kIoError: return "I/O error";
    case CloseCause::kRejectedFrame: return "rejected frame";
    case CloseCause::kConnectFailed: return "connect failed";
    case CloseCause::kHandshakeFailed: return "TLS handshake failed";
    case CloseCause::kHelloTimeout: return "no Hello in time";
    case CloseCause::kPeerSilent: return "peer silent";
  }
  return "unknown";
}

std::string DescribeClose(const LinkState& state) {
  return std::string(CloseCauseName(state.cause)) +
         (state.reason.ok() ? "" : ": " + state.reason.message());
}

void Link::Impl::BeginLocalClose() {
  if (close_begun_) return;
  close_begun_ = true;
  const LinkPhase phase = state().phase;
  if (phase == LinkPhase::kClosed) return;
  if (phase == LinkPhase::kConnecting) {
    FinishClose(CloseCause::kLocalClose, Status::Aborted("closed while connecting"));
    return;
  }
  close_timer_.expires_after(options_.close_timeout);
  close_timer_.async_wait([this, self = Self()](const std::error_code& error) {
    if (error) return;
    size_t unsent_frames;
    {
      MutexLock lock(mutex_);
      unsent_frames = queued_frames_;
    }
    const std::string what = unsent_frames > 0 ? fmt::format("with {} frames unsent", unsent_frames)
                                               : std::string("before the peer ended its stream");
    FinishClose(CloseCause::kLocalClose,
                Status::Aborted(fmt::format("close deadline of {} ms passed {}",
                                            options_.close_timeout.count(), what)));
  });
  MaybeEndStream();
}

// Ends our stream once everything queued is written, then waits for the
// peer's end (unless nothing reads it), so closing never resets a peer that
// is still reading our last frames.
void Link::Impl::MaybeEndStream() {
  if (closed() || !stream_) return;
  if (!stream_ended_) {
    if (write_in_flight_) return;
    {
      MutexLock lock(mutex_);
      if (!queue_.empty()) return;
    }
    stream_->ShutdownSend();
    stream_ended_ = true;
  }
  if (peer_ended_ || !reading_) FinishClose(CloseCause::kLocalClose, Status::Ok());
}

void Link::Impl::FinishClose(CloseCause cause, const Status& reason) {
  std::deque<Frame> dropped;  // freed outside the lock
  {
    MutexLock lock(mutex_);
    if (state_.phase == LinkPhase::kClosed) return;
    state_.phase = LinkPhase::kClosed;
    state_.cause = cause;
    state_.reason = reason;
    closing_ = true;
    direct_ = nullptr;  // no direct write reaches the stream closed below
    stats_.frames_dropped += queued_frames_;
    dropped.swap(queue_);
    queued_frames_ = 0;
    queued_bytes_ = 0;
  }
  close_timer_.cancel();
  hello_timer_.cancel();
  liveness_timer_.cancel();
  if (opener_) opener_->Cancel();
  if (stream_) stream_->Close();
  if (cause == CloseCause::kLocalClose && reason.ok()) {
    spdlog::debug("link {} to {}: closed", options_.name, remote_.ToString());
  } else if (cause == CloseCause::kPeerClosed) {
    spdlog::info("link {} to {}: {}", options_.name, remote_.ToString(), CloseCauseName(cause));
  } else {
    spdlog::warn("link {} to {}: {}: {}", options_.name, remote_.ToString(), CloseCauseName(cause),
                 reason.ToString());
  }
  NotifyClosed();
  MutexLock lock(mutex_);
  close_finished_ = true;
  close_finished_cv_.NotifyAll();
}

void Link::Impl::NotifyClosed() {
  if (!started_ || closed_notified_) return;
  closed_notified_ = true;
  if (handlers_.on_closed) handlers_.on_closed(state());
}

}  // namespace strata::wire
