// Link::Impl: the Hello deadline of an unadmitted link, and heartbeats and
// the silence timeout of an admitted one (wire/link/link_impl.h). The decisions
// are LinkLiveness's; this file owns the timers and acts on them.
#include <fmt/format.h>

#include <asio/post.hpp>

#include "wire/link/link_impl.h"

namespace strata::wire {

using Clock = std::chrono::steady_clock;

void Link::Impl::ArmHelloDeadline() {
  if (options_.admission != LinkAdmission::kAwaitHello || hello_accepted_io_) return;
  hello_timer_.expires_after(options_.hello_timeout);
  hello_timer_.async_wait([this, self = Self()](const std::error_code& error) {
    if (error || hello_accepted_io_) return;
    FinishClose(CloseCause::kHelloTimeout,
                Status::Unavailable(fmt::format("no Hello accepted within {} ms of the connection",
                                                options_.hello_timeout.count())));
  });
}

void Link::Impl::AcceptHello() {
  if (options_.admission != LinkAdmission::kAwaitHello) return;
  // At once, not on the I/O thread: the peer answers HelloAccept with large
  // frames, which must meet the full limit.
  frame_limit_bytes_ = options_.frame_bytes_max;
  asio::post(io_, [this, self = Self()] { OnHelloAccepted(); });
}

void Link::Impl::OnHelloAccepted() {
  if (hello_accepted_io_) return;
  hello_accepted_io_ = true;
  hello_timer_.cancel();
  if (reading_ && !closed()) StartLiveness();
}

void Link::Impl::StartLiveness() {
  const Clock::time_point now = Clock::now();
  LinkLiveness::Decision first;
  {
    MutexLock lock(mutex_);
    if (liveness_) return;
    liveness_.emplace(options_.liveness, now);
    first = liveness_->Check(now);
  }
  ArmLiveness(first.next_check);
}

void Link::Impl::ArmLiveness(LinkLiveness::TimePoint at) {
  if (at == LinkLiveness::TimePoint::max()) return;  // both rules off
  liveness_timer_.expires_at(at);
  liveness_timer_.async_wait([this, self = Self()](const std::error_code& error) {
    if (!error) OnLivenessTimer();
  });
}

void Link::Impl::OnLivenessTimer() {
  if (closed() || close_begun_) return;
  const Clock::time_point now = Clock::now();
  LinkLiveness::Decision d;
  std::chrono::milliseconds silent_for{0};
  {
    MutexLock lock(mutex_);
    d = liveness_->Check(now);
    silent_for = liveness_->silent_for(now);
  }
  switch (d.action) {
    case LinkLiveness::Action::kCloseSilent:
      FinishClose(CloseCause::kPeerSilent,
                  Status::Unavailable(fmt::format(
                      "nothing read for {} ms (silence timeout {} ms): the peer is lost",
                      silent_for.count(), options_.liveness.silence_timeout.count())));
      return;
    case LinkLiveness::Action::kSendHeartbeat: {
      // A full queue (kBusy) means frames wait for the peer: not idle.
      Result<Frame> frame = EncodeFrame(Heartbeat{++heartbeat_sequence_});
      if (frame.ok() && Enqueue(std::move(*frame), "Heartbeat").ok()) {
        MutexLock lock(mutex_);
        ++stats_.heartbeats_out;
      }
      break;
    }
    case LinkLiveness::Action::kNone: break;
  }
  // A sent Heartbeat moved the send clock; a refused one is retried one
  // interval on (Check's next_check for a due heartbeat).
  {
    MutexLock lock(mutex_);
    d = liveness_->Check(Clock::now());
  }
  ArmLiveness(d.next_check);
}

}  // namespace strata::wire
