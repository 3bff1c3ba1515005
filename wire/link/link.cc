#include "wire/link/link.h"

#include <fmt/format.h>

#include <algorithm>
#include <asio/post.hpp>

#include "wire/link/link_impl.h"

namespace strata::wire {

Link::Impl::Impl(LinkOptions options, Endpoint remote,
                 std::unique_ptr<internal::StreamOpener> opener)
    : options_(std::move(options)),
      remote_(std::move(remote)),
      own_io_thread_(
          options_.io_thread != nullptr
              ? nullptr
              : std::make_unique<LinkIoThread>(
                    options_.name, options_.idle_spin,
                    // Its only link: a handler that threw closes it.
                    [this](const Status& thrown) { FinishClose(CloseCause::kIoError, thrown); })),
      io_thread_(own_io_thread_ ? own_io_thread_.get() : options_.io_thread),
      io_(io_thread_->context()),
      close_timer_(io_),
      hello_timer_(io_),
      liveness_timer_(io_),
      opener_(std::move(opener)),
      reader_(options_.frame_bytes_max),
      frame_limit_bytes_(options_.admission == LinkAdmission::kAwaitHello
                             ? options_.hello_frame_bytes_max
                             : options_.frame_bytes_max) {
  hello_accepted_io_ = options_.admission == LinkAdmission::kAdmitted;
}

void Link::Impl::Open() {
  asio::post(io_, [this, self = Self()] {
    ArmHelloDeadline();
    opener_->Open(io_, [this, self](Result<std::unique_ptr<internal::Stream>> opened) {
      OnOpened(std::move(opened));
    });
  });
}

LinkStats Link::Impl::stats() const {
  LinkStats s;
  {
    MutexLock lock(mutex_);
    s = stats_;
  }
  if (own_io_thread_) {  // a shared thread's spin is its own (LinkIoThread::stats)
    const LinkIoStats io = own_io_thread_->stats();
    s.idle_spin_hits = io.idle_spin_hits;
    s.idle_spin_ns = io.idle_spin_ns;
  }
  return s;
}

void Link::Impl::Start(LinkHandlers handlers) {
  {
    MutexLock lock(mutex_);
    STRATA_ASSERT(!start_called_, "Link::Start called twice");
    start_called_ = true;
  }
  asio::post(io_, [this, self = Self(), handlers = std::move(handlers)]() mutable {
    handlers_ = std::move(handlers);
    started_ = true;
    const LinkPhase phase = state().phase;
    if (phase == LinkPhase::kClosed) {
      NotifyClosed();
    } else if (phase == LinkPhase::kOpen && !close_begun_) {
      BeginReading();
    }
  });
}

Status Link::Impl::Enqueue(Frame frame, std::string_view what) {
  const size_t bytes = frame.size_bytes();
  bool post_kick = false;
  {
    MutexLock lock(mutex_);
    if (closing_ || state_.phase == LinkPhase::kClosed) {
      return Status::Unavailable(fmt::format(
          "link {} to {} is {}: {} not sent", options_.name, remote_.ToString(),
          state_.phase == LinkPhase::kClosed ? "closed (" + state_.reason.ToString() + ")"
                                             : std::string("closing"),
          what));
    }
    if (queued_frames_ + 1 > options_.send_queue_frames_max ||
        queued_bytes_ + bytes > options_.send_queue_bytes_max) {
      ++stats_.send_queue_full;
      return Status::Busy(fmt::format(
          "link {} to {}: send queue full ({} frames, {} bytes queued): {} not sent; the peer is "
          "not reading fast enough",
          options_.name, remote_.ToString(), queued_frames_, queued_bytes_, what));
    }
    if (liveness_) liveness_->Sent(std::chrono::steady_clock::now());
    size_t written = 0;
    if (direct_ != nullptr && !write_scheduled_) {
      // Open, nothing queued and no write running: this frame is next on
      // the wire, so the sending thread may write it itself.
      const asio::const_buffer whole(frame.words.data(), bytes);
      written = direct_->TryWriteNow(std::span(&whole, 1));
      stats_.bytes_out += written;
      if (written == bytes) {
        ++stats_.frames_out;
        ++stats_.frames_out_direct;
        return Status::Ok();
      }
      front_written_ = written;  // the queue is empty: this frame becomes its front
    }
    queue_.push_back(std::move(frame));
    ++queued_frames_;
    queued_bytes_ += bytes - written;
    post_kick = !write_scheduled_;
    write_scheduled_ = true;
  }
  if (post_kick) asio::post(io_, [this, self = Self()] { KickWrites(); });
  return Status::Ok();
}

void Link::Impl::NotifyWhenDrained() {
  {
    MutexLock lock(mutex_);
    if (queued_bytes_ > 0) {
      drain_wanted_ = true;  // OnWritten calls it once the queue empties
      return;
    }
  }
  asio::post(io_, [this, self = Self()] {
    if (started_ && !closing() && handlers_.on_drained) handlers_.on_drained();
  });
}

void Link::Impl::Post(std::function<void()> fn) {
  asio::post(io_, [this, self = Self(), fn = std::move(fn)] {
    if (!closing()) fn();
  });
}

void Link::Impl::Close() {
  {
    MutexLock lock(mutex_);
    closing_ = true;
  }
  if (OnIoThread()) {
    BeginLocalClose();
    if (own_io_thread_) own_io_thread_->ReleaseWork();
    return;
  }
  asio::post(io_, [this, self = Self()] {
    BeginLocalClose();
    if (own_io_thread_) own_io_thread_->ReleaseWork();
  });
  if (own_io_thread_) {
    own_io_thread_->Join();  // its loop ends once the close left nothing to run
    return;
  }
  // A shared thread runs on: wait for this link's close to finish there
  // (on_closed included). Its last handlers hold the Impl (Self()).
  MutexLock lock(mutex_);
  while (!close_finished_) close_finished_cv_.Wait(lock);
}

void Link::Impl::KickWrites() {
  if (write_in_flight_ || !stream_ || closed()) return;
  {
    MutexLock lock(mutex_);
    if (queue_.empty()) {
      write_scheduled_ = false;
      return;
    }
    batch_offset_ = front_written_;
    front_written_ = 0;
    while (!queue_.empty() && batch_.size() < kWriteBatchFramesMax) {
      batch_.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
  }
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(batch_.size());
  for (const Frame& frame : batch_) buffers.emplace_back(frame.words.data(), frame.size_bytes());
  buffers.front() += batch_offset_;  // a direct write sent the start of the first frame
  write_in_flight_ = true;
  stream_->AsyncWriteAll(std::move(buffers),
                         [this, self = Self()](const std::error_code& error, size_t bytes) {
                           OnWritten(error, bytes);
                         });
}

void Link::Impl::OnWritten(const std::error_code& error, size_t bytes) {
  write_in_flight_ = false;
  if (closed()) {
    batch_.clear();
    return;
  }
  if (error) {
    FinishClose(CloseCause::kIoError, Status::Unavailable("write failed: " + error.message()));
    batch_.clear();
    return;
  }
  bool drained = false;
  {
    MutexLock lock(mutex_);
    stats_.frames_out += batch_.size();
    stats_.bytes_out += bytes;
    queued_frames_ -= batch_.size();
    queued_bytes_ -= bytes;
    drained = drain_wanted_ && queue_.empty() && !closing_;
    if (drained) drain_wanted_ = false;
  }
  batch_.clear();
  KickWrites();
  if (close_begun_) MaybeEndStream();
  if (drained && handlers_.on_drained) handlers_.on_drained();
}

// ---- Link --------------------------------------------------------------------

namespace {
LinkOptions Sanitized(LinkOptions options) {
  options.send_queue_frames_max = std::max<size_t>(options.send_queue_frames_max, 1);
  options.send_queue_bytes_max = std::max(options.send_queue_bytes_max, kFrameBytesMax);
  options.hello_frame_bytes_max = std::min(options.hello_frame_bytes_max, options.frame_bytes_max);
  return options;
}
}  // namespace

Link::Link(LinkOptions options, Endpoint remote, std::unique_ptr<internal::StreamOpener> opener)
    : impl_(std::make_shared<Impl>(Sanitized(std::move(options)), std::move(remote),
                                   std::move(opener))) {
  impl_->Open();  // after make_shared: its handlers hold the Impl
}

Link::~Link() {
  STRATA_ASSERT(!impl_->OnIoThread(), "a Link destroyed on its I/O thread");
  impl_->Close();
}

void Link::Start(LinkHandlers handlers) { impl_->Start(std::move(handlers)); }

Status Link::Send(const Message& message) {
  STRATA_ASSIGN_OR_RETURN(Frame frame, EncodeFrame(message));
  return impl_->Enqueue(std::move(frame), MessageName(message));
}

void Link::Post(std::function<void()> fn) { impl_->Post(std::move(fn)); }
void Link::Close() { impl_->Close(); }
void Link::AcceptHello() { impl_->AcceptHello(); }
LinkState Link::state() const { return impl_->state(); }
LinkStats Link::stats() const { return impl_->stats(); }
size_t Link::queued_bytes() const { return impl_->queued_bytes(); }
size_t Link::send_queue_bytes_max() const { return impl_->options().send_queue_bytes_max; }
void Link::NotifyWhenDrained() { impl_->NotifyWhenDrained(); }
const std::string& Link::name() const { return impl_->options().name; }
const Endpoint& Link::remote_endpoint() const { return impl_->remote(); }
Endpoint Link::local_endpoint() const { return impl_->local_endpoint(); }

}  // namespace strata::wire
