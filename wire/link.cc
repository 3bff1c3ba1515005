#include "wire/link.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <asio/executor_work_guard.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "wire/codec.h"
#include "wire/stream.h"

namespace strata::wire {

// Frames handed to the stream in one gather write.
constexpr size_t kWriteBatchFramesMax = 64;

std::string_view CloseCauseName(CloseCause cause) {
  switch (cause) {
    case CloseCause::kNone: return "not closed";
    case CloseCause::kLocalClose: return "closed locally";
    case CloseCause::kPeerClosed: return "closed by the peer";
    case CloseCause::kIoError: return "I/O error";
    case CloseCause::kRejectedFrame: return "rejected frame";
    case CloseCause::kConnectFailed: return "connect failed";
    case CloseCause::kHandshakeFailed: return "TLS handshake failed";
  }
  return "unknown";
}

// Members marked [io] belong to the I/O thread; [mu] ones are guarded by
// mutex_; the rest are set in the constructor and then only read.
class Link::Impl {
 public:
  Impl(LinkOptions options, Endpoint remote, std::unique_ptr<internal::StreamOpener> opener);
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  void Start(LinkHandlers handlers);
  Status Enqueue(Frame frame, std::string_view what);
  void Close();

  LinkState state() const {
    std::lock_guard lock(mutex_);
    return state_;
  }
  LinkStats stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
  }
  Endpoint local_endpoint() const {
    std::lock_guard lock(mutex_);
    return local_;
  }
  const LinkOptions& options() const { return options_; }
  const Endpoint& remote() const { return remote_; }

 private:
  void Run();
  bool OnIoThread() const { return std::this_thread::get_id() == io_thread_id_.load(); }
  bool closed() const { return state().phase == LinkPhase::kClosed; }
  bool closing() const {
    std::lock_guard lock(mutex_);
    return closing_;
  }

  void OnOpened(Result<std::unique_ptr<internal::Stream>> opened);
  void BeginReading();
  void ReadNext();
  void OnRead(const std::error_code& error, size_t bytes);
  void OnFrame();
  void Reject(FrameRejection rejection, const Status& error);
  void KickWrites();
  void OnWritten(const std::error_code& error, size_t bytes);
  void BeginLocalClose();
  void MaybeEndStream();
  void FinishClose(CloseCause cause, const Status& reason);
  void NotifyClosed();

  const LinkOptions options_;
  const Endpoint remote_;
  asio::io_context io_;  // first: destroyed after everything bound to it
  asio::executor_work_guard<asio::io_context::executor_type> work_;  // [io]
  asio::steady_timer close_timer_;                                   // [io]
  std::unique_ptr<internal::StreamOpener> opener_;                   // [io]
  std::unique_ptr<internal::Stream> stream_;                         // [io]
  FrameReader reader_;                                               // [io]
  LinkHandlers handlers_;                                            // [io]
  std::vector<Frame> batch_;                                         // [io] frames being written
  bool started_ = false;          // [io] Start() reached the I/O thread
  bool reading_ = false;          // [io]
  bool write_in_flight_ = false;  // [io]
  bool close_begun_ = false;      // [io]
  bool stream_ended_ = false;     // [io] our end was sent
  bool peer_ended_ = false;       // [io] the peer's end was read
  bool closed_notified_ = false;  // [io]

  mutable std::mutex mutex_;
  LinkState state_;               // [mu]
  LinkStats stats_;               // [mu]
  Endpoint local_;                // [mu]
  bool closing_ = false;          // [mu] Close() began: no sends, no deliveries
  bool start_called_ = false;     // [mu]
  std::deque<Frame> queue_;       // [mu] frames not yet handed to the stream
  size_t front_written_ = 0;      // [mu] bytes of queue_.front() a direct write already sent
  size_t queued_frames_ = 0;      // [mu] queue_ plus batch_
  size_t queued_bytes_ = 0;       // [mu] unwritten bytes of queue_ plus batch_
  bool write_scheduled_ = false;  // [mu] a KickWrites is posted or writes are running
  // [mu] the open stream for Send()'s direct writes; null until open and
  // from the moment the link closes (before the stream is closed).
  internal::Stream* direct_ = nullptr;
  size_t batch_offset_ = 0;  // [io] bytes of batch_.front() written before the batch

  std::atomic<std::thread::id> io_thread_id_{};
  std::thread thread_;  // last: starts once every member exists
};

Link::Impl::Impl(LinkOptions options, Endpoint remote,
                 std::unique_ptr<internal::StreamOpener> opener)
    : options_(std::move(options)),
      remote_(std::move(remote)),
      work_(io_.get_executor()),
      close_timer_(io_),
      opener_(std::move(opener)),
      reader_(options_.frame_bytes_max) {
  asio::post(io_, [this] {
    opener_->Open(io_, [this](Result<std::unique_ptr<internal::Stream>> opened) {
      OnOpened(std::move(opened));
    });
  });
  thread_ = std::thread([this] { Run(); });
}

Link::Impl::~Impl() {
  STRATA_ASSERT(!OnIoThread(), "a Link destroyed on its own I/O thread");
  Close();
}

void Link::Impl::Run() {
  io_thread_id_ = std::this_thread::get_id();
  for (;;) {
    try {
      io_.run();
      return;
    } catch (const std::exception& e) {
      FinishClose(CloseCause::kIoError,
                  Status::Internal(fmt::format("a link handler threw: {}", e.what())));
    } catch (...) {
      FinishClose(CloseCause::kIoError, Status::Internal("a link handler threw"));
    }
  }
}

void Link::Impl::Start(LinkHandlers handlers) {
  {
    std::lock_guard lock(mutex_);
    STRATA_ASSERT(!start_called_, "Link::Start called twice");
    start_called_ = true;
  }
  asio::post(io_, [this, handlers = std::move(handlers)]() mutable {
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
    std::lock_guard lock(mutex_);
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
  if (post_kick) asio::post(io_, [this] { KickWrites(); });
  return Status::Ok();
}

void Link::Impl::Close() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  if (OnIoThread()) {
    BeginLocalClose();
    work_.reset();
    return;
  }
  asio::post(io_, [this] {
    BeginLocalClose();
    work_.reset();
  });
  if (thread_.joinable()) thread_.join();
}

void Link::Impl::OnOpened(Result<std::unique_ptr<internal::Stream>> opened) {
  if (closed()) {
    if (opened.ok()) (*opened)->Close();
    return;
  }
  if (!opened.ok() && opener_->HandshakeFailed()) {
    {
      std::lock_guard lock(mutex_);
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
    std::lock_guard lock(mutex_);
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
  ReadNext();
}

void Link::Impl::ReadNext() {
  if (closed()) return;
  stream_->AsyncReadExactly(reader_.NextBuffer(), [this](const std::error_code& error,
                                                         size_t bytes) { OnRead(error, bytes); });
}

void Link::Impl::OnRead(const std::error_code& error, size_t bytes) {
  if (closed()) return;
  if (bytes > 0) {
    std::lock_guard lock(mutex_);
    stats_.bytes_in += bytes;
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
  switch (reader_.Advance()) {
    case FrameReader::Step::kNeedMore: ReadNext(); return;
    case FrameReader::Step::kRejected: Reject(reader_.rejection(), reader_.error()); return;
    case FrameReader::Step::kFrameReady: OnFrame(); return;
  }
}

void Link::Impl::OnFrame() {
  Result<Message> message = DecodeFrame(reader_.frame(), options_.frame_bytes_max);
  if (!message.ok()) {
    const bool readable = message.status().code() == StatusCode::kInvalidArgument;
    Reject(readable ? FrameRejection::kInvalidMessage : FrameRejection::kMalformed,
           message.status());
    return;
  }
  {
    std::lock_guard lock(mutex_);
    ++stats_.frames_in;
  }
  reader_.Reset();
  if (!closing() && handlers_.on_message) handlers_.on_message(std::move(*message));
  ReadNext();
}

void Link::Impl::Reject(FrameRejection rejection, const Status& error) {
  {
    std::lock_guard lock(mutex_);
    ++stats_.rejected_frames[static_cast<size_t>(rejection)];
  }
  FinishClose(CloseCause::kRejectedFrame,
              error.WithContext(fmt::format("{} frame", FrameRejectionName(rejection))));
}

void Link::Impl::KickWrites() {
  if (write_in_flight_ || !stream_ || closed()) return;
  {
    std::lock_guard lock(mutex_);
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
  stream_->AsyncWriteAll(std::move(buffers), [this](const std::error_code& error, size_t bytes) {
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
  {
    std::lock_guard lock(mutex_);
    stats_.frames_out += batch_.size();
    stats_.bytes_out += bytes;
    queued_frames_ -= batch_.size();
    queued_bytes_ -= bytes;
  }
  batch_.clear();
  KickWrites();
  if (close_begun_) MaybeEndStream();
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
  close_timer_.async_wait([this](const std::error_code& error) {
    if (error) return;
    size_t unsent_frames;
    {
      std::lock_guard lock(mutex_);
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
      std::lock_guard lock(mutex_);
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
    std::lock_guard lock(mutex_);
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
}

void Link::Impl::NotifyClosed() {
  if (!started_ || closed_notified_) return;
  closed_notified_ = true;
  if (handlers_.on_closed) handlers_.on_closed(state());
}

// ---- Link --------------------------------------------------------------------

namespace {
LinkOptions Sanitized(LinkOptions options) {
  options.send_queue_frames_max = std::max<size_t>(options.send_queue_frames_max, 1);
  options.send_queue_bytes_max = std::max(options.send_queue_bytes_max, kFrameBytesMax);
  return options;
}
}  // namespace

Link::Link(LinkOptions options, Endpoint remote, std::unique_ptr<internal::StreamOpener> opener)
    : impl_(std::make_unique<Impl>(Sanitized(std::move(options)), std::move(remote),
                                   std::move(opener))) {}

Link::~Link() = default;

void Link::Start(LinkHandlers handlers) { impl_->Start(std::move(handlers)); }

Status Link::Send(const Message& message) {
  STRATA_ASSIGN_OR_RETURN(Frame frame, EncodeFrame(message));
  return impl_->Enqueue(std::move(frame), MessageName(message));
}

void Link::Close() { impl_->Close(); }
LinkState Link::state() const { return impl_->state(); }
LinkStats Link::stats() const { return impl_->stats(); }
const std::string& Link::name() const { return impl_->options().name; }
const Endpoint& Link::remote_endpoint() const { return impl_->remote(); }
Endpoint Link::local_endpoint() const { return impl_->local_endpoint(); }

}  // namespace strata::wire
