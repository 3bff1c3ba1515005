// Link::Impl: the state and I/O-thread machinery behind wire/link/link.h. Internal
// to wire/: link.cc (construction, sends, writes), link_read.cc (opening and
// reading), link_close.cc (closing) and link_timers.cc (the Hello deadline,
// heartbeats and the silence timeout) implement it.
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "store/base/mutex.h"
#include "wire/codec.h"
#include "wire/link/link.h"
#include "wire/link/link_io_thread.h"
#include "wire/link/link_liveness.h"
#include "wire/stream.h"

namespace strata::wire {

// Frames handed to the stream in one gather write.
inline constexpr size_t kWriteBatchFramesMax = 64;
// Reads land in a buffer this large and frames are parsed from it, so a
// small frame costs one read and frames that arrive together share one; a
// frame part at least this large is read straight into the frame instead.
inline constexpr size_t kReadAheadBytes = size_t{16} << 10;

// Members marked [io] belong to the I/O thread; [mu] ones are guarded by
// mutex_; the rest are set in the constructor and then only read.
//
// Lifetime: on a shared LinkIoThread every handler the Impl hands to Asio
// holds it (Self()), so a closed link's last handlers, run after its Link is
// gone, still find it. On its own thread they do not (Self() is null): the
// join leaves none to run, and one posted after would hold the Impl that
// owns its io_context.
class Link::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(LinkOptions options, Endpoint remote, std::unique_ptr<internal::StreamOpener> opener);
  ~Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // Posts the opening of the stream; once, right after construction.
  void Open();
  void Start(LinkHandlers handlers);
  bool OnIoThread() const { return io_thread_->OnThread(); }
  Status Enqueue(Frame frame, std::string_view what);
  void Post(std::function<void()> fn);
  void Close();
  void AcceptHello();

  LinkState state() const {
    MutexLock lock(mutex_);
    return state_;
  }
  LinkStats stats() const;
  size_t queued_bytes() const {
    MutexLock lock(mutex_);
    return queued_bytes_;
  }
  void NotifyWhenDrained();
  Endpoint local_endpoint() const {
    MutexLock lock(mutex_);
    return local_;
  }
  const LinkOptions& options() const { return options_; }
  const Endpoint& remote() const { return remote_; }

 private:
  // What a handler holds to keep the Impl (above).
  std::shared_ptr<Impl> Self() { return own_io_thread_ ? nullptr : shared_from_this(); }
  bool closed() const { return state().phase == LinkPhase::kClosed; }
  bool closing() const {
    MutexLock lock(mutex_);
    return closing_;
  }

  // link_read.cc
  void OnOpened(Result<std::unique_ptr<internal::Stream>> opened);
  void BeginReading();
  void ReadNext();
  // `direct`: the read filled the reader's buffer; else it filled read_ahead_.
  void OnRead(const std::error_code& error, size_t bytes, bool direct);
  void ParseThenReadNext();
  // After the reader's buffer is full; false once the link closed.
  bool AdvanceReader();
  bool OnFrame();
  void Reject(FrameRejection rejection, const Status& error);
  // link.cc
  void KickWrites();
  void OnWritten(const std::error_code& error, size_t bytes);
  // link_close.cc
  void BeginLocalClose();
  void MaybeEndStream();
  void FinishClose(CloseCause cause, const Status& reason);
  void NotifyClosed();
  // link_timers.cc
  void ArmHelloDeadline();
  void OnHelloAccepted();
  void StartLiveness();
  void ArmLiveness(LinkLiveness::TimePoint at);
  void OnLivenessTimer();

  const LinkOptions options_;
  const Endpoint remote_;
  // The link's own I/O thread, unless options_.io_thread is shared. First:
  // destroyed after everything bound to its io_context.
  std::unique_ptr<LinkIoThread> own_io_thread_;
  LinkIoThread* const io_thread_;  // own_io_thread_ or options_.io_thread
  asio::io_context& io_;
  asio::steady_timer close_timer_;                  // [io]
  asio::steady_timer hello_timer_;                  // [io]
  asio::steady_timer liveness_timer_;               // [io]
  std::unique_ptr<internal::StreamOpener> opener_;  // [io]
  std::unique_ptr<internal::Stream> stream_;        // [io]
  FrameReader reader_;                              // [io]
  size_t filled_ = 0;                  // [io] bytes of reader_.NextBuffer() already filled
  std::vector<std::byte> read_ahead_;  // [io] kReadAheadBytes once reading
  size_t ahead_begin_ = 0;             // [io] read_ahead_[ahead_begin_, ahead_end_): unparsed
  size_t ahead_end_ = 0;               // [io]
  LinkHandlers handlers_;              // [io]
  std::vector<Frame> batch_;           // [io] frames being written
  bool started_ = false;               // [io] Start() reached the I/O thread
  bool reading_ = false;               // [io]
  bool write_in_flight_ = false;       // [io]
  bool close_begun_ = false;           // [io]
  bool stream_ended_ = false;          // [io] our end was sent
  bool peer_ended_ = false;            // [io] the peer's end was read
  bool closed_notified_ = false;       // [io]
  bool hello_accepted_io_ = false;     // [io] OnHelloAccepted ran (or admitted from the start)
  uint64_t heartbeat_sequence_ = 0;    // [io]

  // Incoming frames declaring more bytes are rejected: hello_frame_bytes_max
  // until the Hello is accepted, frame_bytes_max after. Written by
  // AcceptHello (any thread), read by the I/O thread before each frame.
  std::atomic<size_t> frame_limit_bytes_;

  mutable Mutex mutex_;
  LinkState state_ GUARDED_BY(mutex_);              // [mu]
  LinkStats stats_ GUARDED_BY(mutex_);              // [mu]
  Endpoint local_ GUARDED_BY(mutex_);               // [mu]
  bool closing_ GUARDED_BY(mutex_) = false;         // [mu] Close() began: no sends, no deliveries
  bool start_called_ GUARDED_BY(mutex_) = false;    // [mu]
  bool close_finished_ GUARDED_BY(mutex_) = false;  // [mu] FinishClose ran to its end
  CondVar close_finished_cv_;                       // Close() on a shared thread waits on it
  std::deque<Frame> queue_ GUARDED_BY(mutex_);      // [mu] frames not yet handed to the stream
  size_t front_written_ GUARDED_BY(mutex_) =
      0;  // [mu] bytes of queue_.front() a direct write already sent
  size_t queued_frames_ GUARDED_BY(mutex_) = 0;  // [mu] queue_ plus batch_
  size_t queued_bytes_ GUARDED_BY(mutex_) = 0;   // [mu] unwritten bytes of queue_ plus batch_
  bool write_scheduled_ GUARDED_BY(mutex_) =
      false;  // [mu] a KickWrites is posted or writes are running
  bool drain_wanted_ GUARDED_BY(mutex_) = false;  // [mu] NotifyWhenDrained armed on_drained
  // [mu] the open stream for Send()'s direct writes; null until open and
  // from the moment the link closes (before the stream is closed).
  internal::Stream* direct_ GUARDED_BY(mutex_) = nullptr;
  // [mu] when the link last accepted a frame to send and last read a byte;
  // set once the link is open, reading and its peer admitted.
  std::optional<LinkLiveness> liveness_ GUARDED_BY(mutex_);
  size_t batch_offset_ = 0;  // [io] bytes of batch_.front() written before the batch
};

}  // namespace strata::wire
