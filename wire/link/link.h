// Link: one connection to one peer rank, carrying one message per frame.
//
// Threads: each link owns one I/O thread (an Asio io_context), or shares one
// with other links (LinkOptions::io_thread), that connects,
// reads, decodes and delivers messages, and writes queued frames. Send()
// encodes on the caller's thread; on an open link with nothing queued it
// hands the frame to the kernel itself with one non-blocking write (no
// wake-up of the I/O thread on the latency path), and queues whatever the
// socket buffer did not take. Otherwise it appends to a bounded queue that
// the I/O thread writes. It never waits for the network. A peer that stops
// reading fills the socket buffer, then the queue, and Send() returns kBusy:
// the caller fails the job instead of stalling.
//
// Every incoming frame is size-checked before it is allocated and decoded
// with a traversal limit; a frame that fails closes the link with a logged,
// counted reason (LinkStats::rejected_frames).
//
// Admission: a link a Listener accepted starts unadmitted (kAwaitHello):
// until its owner calls AcceptHello(), frames are limited to
// hello_frame_bytes_max and a link not admitted within hello_timeout closes
// (kHelloTimeout). Liveness: an open, admitted link sends a Heartbeat after
// a heartbeat interval without a send, and closes (kPeerSilent) when it
// reads nothing for the silence timeout (wire/link/link_liveness.h).
//
// Idle spin (LinkOptions::idle_spin, default off): after the I/O thread runs
// out of ready work it keeps polling its sockets and timers without
// sleeping, for up to that budget, before it sleeps in the kernel. A frame
// that arrives meanwhile is read without waking the thread, which saves a
// cross-core wake-up (5-20 us on idle virtual CPUs) on a job's round trip;
// it costs up to the budget of CPU per idle period, within the process's
// spin slots (store/base/idle_spin.h).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "store/base/status.h"
#include "wire/endpoint.h"
#include "wire/frame_reader.h"
#include "wire/link/link_liveness.h"
#include "wire/messages.h"
#include "wire/tls.h"

namespace strata::wire {

namespace internal {
class StreamOpener;
}
class LinkIoThread;

// Frame limit of an unadmitted link: a Hello encodes in well under 1 KiB.
inline constexpr size_t kHelloFrameBytesMax = size_t{64} << 10;
// How long an accepted connection may take to have its Hello accepted.
inline constexpr std::chrono::milliseconds kHelloTimeoutDefault{5000};

enum class LinkAdmission : uint8_t {
  kAdmitted,    // full limits and liveness from the start (dialed links)
  kAwaitHello,  // small frames and a deadline until AcceptHello() (accepted links)
};

struct LinkOptions {
  // Names the link in logs and errors, e.g. "rank 3".
  std::string name = "link";
  // Incoming frames declaring more bytes close the link. Default kFrameBytesMax.
  size_t frame_bytes_max = kFrameBytesMax;
  // Bounds on frames accepted by Send() and not yet written (including the
  // batch being written). At least one frame of kFrameBytesMax always fits.
  size_t send_queue_frames_max = 1024;
  size_t send_queue_bytes_max = size_t{64} << 20;
  // Dial(): connecting longer than this closes the link (kConnectFailed).
  std::chrono::milliseconds connect_timeout{5000};
  // Close(): how long queued frames may take to drain and the peer to
  // acknowledge the end of the stream before the connection is dropped.
  std::chrono::milliseconds close_timeout{2000};
  // Mutual TLS (wire/tls.h) when set; plaintext TCP when null (default).
  // The TLS handshake must also finish within connect_timeout.
  std::shared_ptr<const TlsContext> tls;
  // Default kAdmitted; a Listener sets kAwaitHello on every link it accepts
  // (ListenerOptions::admission).
  LinkAdmission admission = LinkAdmission::kAdmitted;
  // kAwaitHello: the frame limit before AcceptHello() (at most
  // frame_bytes_max), and the deadline from the link's creation.
  size_t hello_frame_bytes_max = kHelloFrameBytesMax;
  std::chrono::milliseconds hello_timeout = kHelloTimeoutDefault;
  // Heartbeats and the silence timeout, once open and admitted. Default 1 s
  // and 10 s.
  LivenessOptions liveness;
  // How long the idle I/O thread polls before it sleeps (above). Default 0:
  // it sleeps at once. Not used with a shared io_thread (it has its own).
  std::chrono::microseconds idle_spin{0};
  // Null (default): the link makes and owns its I/O thread. Set: the link
  // runs on this shared one (wire/link/link_io_thread.h), which must outlive
  // it; its handlers then run one at a time with every other link's there.
  LinkIoThread* io_thread = nullptr;
};

enum class LinkPhase : uint8_t { kConnecting, kOpen, kClosed };

enum class CloseCause : uint8_t {
  kNone,             // not closed
  kLocalClose,       // Close() or the destructor
  kPeerClosed,       // the peer ended the stream between frames
  kIoError,          // a socket error, or the stream ended inside a frame
  kRejectedFrame,    // an incoming frame failed its checks (see rejected_frames)
  kConnectFailed,    // Dial() could not connect within connect_timeout
  kHandshakeFailed,  // the TLS handshake failed (see tls_handshake_failures)
  kHelloTimeout,     // kAwaitHello: AcceptHello() was not called within hello_timeout
  kPeerSilent,       // nothing was read for the silence timeout
};
std::string_view CloseCauseName(CloseCause cause);

struct LinkState {
  LinkPhase phase = LinkPhase::kConnecting;
  CloseCause cause = CloseCause::kNone;
  // Why it closed: OK for a clean local close whose queue drained; otherwise
  // an error naming what happened.
  Status reason;
};
// "cause" or "cause: reason" of a closed link, for messages.
std::string DescribeClose(const LinkState& state);

// Counters since the link was made. Bytes are those read from and written to
// the stream; frames_in counts decoded frames, frames_out written ones.
struct LinkStats {
  uint64_t frames_in = 0;
  uint64_t frames_out = 0;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  std::array<uint64_t, kFrameRejectionCount> rejected_frames{};  // by FrameRejection
  uint64_t send_queue_full = 0;                                  // Send() calls refused with kBusy
  uint64_t frames_out_direct = 0;  // of frames_out: written whole by Send() itself
  uint64_t frames_dropped = 0;     // queued frames never written (closed first)
  // TLS handshakes that failed: a plaintext peer, a certificate from another
  // CA, expired or missing, or no handshake within connect_timeout.
  uint64_t tls_handshake_failures = 0;
  uint64_t heartbeats_out = 0;  // of frames accepted to send: Heartbeats the link sent itself
  // Idle spin: times a poll during a spin found work (a frame, a posted
  // function or a timer) the I/O thread would otherwise have slept for,
  // each a wake-up saved; and the time it spent polling. Both are recorded
  // when the spin ends, just after that work ran. 0 on a shared I/O
  // thread, which counts its own (LinkIoThread::stats).
  uint64_t idle_spin_hits = 0;
  uint64_t idle_spin_ns = 0;

  uint64_t rejected(FrameRejection r) const { return rejected_frames[static_cast<size_t>(r)]; }
};

// Callbacks run on the link's I/O thread, one at a time, never after Close()
// returns. They may call Send() and Close(); they must not destroy the link
// and should not block (the link reads nothing while they run).
struct LinkHandlers {
  // Once the link is open and started. Optional.
  std::function<void()> on_open;
  // Each decoded message, in arrival order. Not called once Close() began.
  std::function<void(Message)> on_message;
  // Exactly once, when the link closes for any reason. Optional.
  std::function<void(const LinkState&)> on_closed;
  // After NotifyWhenDrained(), once the send queue is empty (requests made
  // while one is pending get one call): a sender pacing its frames
  // (queued_bytes()) may queue more. Optional.
  std::function<void()> on_drained;
};

// What the owner of one peer connection uses once it is open: send, close,
// and look at its state and counters. Link is the production one; a
// deterministic simulation (tests/sim) serves the same interface over its
// simulated network. Thread: as Link's.
class MessageChannel {
 public:
  virtual ~MessageChannel() = default;
  // Never blocks. kBusy: the peer is not reading fast enough; kUnavailable:
  // closed; kInvalidArgument: the message fails CheckMessage.
  virtual Status Send(const Message& message) = 0;
  // Idempotent; the channel's handlers get their on_closed.
  virtual void Close() = 0;
  virtual LinkState state() const = 0;
  virtual LinkStats stats() const = 0;
  // Bytes accepted by Send() and not yet handed to the kernel, now. A sender
  // of bulk data keeps it well below send_queue_bytes_max() and, when it
  // stops for it, calls NotifyWhenDrained to learn when to go on. The
  // defaults: a channel that delivers at once and queues nothing.
  virtual size_t queued_bytes() const { return 0; }
  virtual size_t send_queue_bytes_max() const { return SIZE_MAX; }
  // Asks for one on_drained (LinkHandlers) once the send queue is empty: on
  // the I/O thread, soon after the write that empties it, or at once if it
  // is empty now. Any thread.
  virtual void NotifyWhenDrained() {}
};

class Link final : public MessageChannel {
 public:
  // Use Dial() or a Listener; the opener produces the stream on the I/O thread.
  Link(LinkOptions options, Endpoint remote, std::unique_ptr<internal::StreamOpener> opener);
  // Close(). Must not run on the I/O thread (nor on a shared one).
  ~Link() override;
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  // Begins reading and delivering events; call once. Nothing is read before
  // (the peer's frames wait in the kernel). A link already closed gets
  // on_closed at once, on the I/O thread.
  void Start(LinkHandlers handlers);

  // Queues one message; never blocks on the network. Errors:
  // kInvalidArgument (the message fails CheckMessage), kBusy (the send queue
  // is full: the peer is not reading fast enough), kUnavailable (closed or
  // closing). Frames queued while connecting are written once open.
  Status Send(const Message& message) override;

  // Stops accepting sends, writes what is queued, ends the stream and waits
  // for the peer's end, all within close_timeout; then drops the connection
  // and joins the I/O thread (a shared one: waits for the close to finish
  // there, on_closed included). Idempotent. From a handler it only begins
  // the close (the destructor waits).
  void Close() override;

  // Runs `fn` on the I/O thread, after the handlers and posted functions
  // already queued there (so in order with them). Like on_message, it is not
  // called once Close() began, and never after Close() returns: a function
  // still queued then is dropped. It may call Send() and Close(); it must not
  // block or destroy the link. Any thread; never blocks.
  void Post(std::function<void()> fn);

  // The owner accepted the peer's Hello (kAwaitHello links; a no-op on
  // others): lifts the frame limit to frame_bytes_max, cancels the Hello
  // deadline and starts heartbeats. Call before sending the answer, so the
  // peer's next frames meet the full limit. Any thread.
  void AcceptHello();

  LinkState state() const override;
  LinkStats stats() const override;
  size_t queued_bytes() const override;
  size_t send_queue_bytes_max() const override;
  void NotifyWhenDrained() override;
  const std::string& name() const;
  // The peer: the dialed address, or the address an accepted peer came from.
  const Endpoint& remote_endpoint() const;
  // This side's address once open (empty address before).
  Endpoint local_endpoint() const;

 private:
  class Impl;
  std::shared_ptr<Impl> impl_;  // shared with its handlers on a shared I/O thread
};

// Connects to a numeric address (no name lookup, so the connect timeout
// bounds everything) and returns at once with a link in kConnecting. A
// failed or timed-out connect closes the link with kConnectFailed.
// Errors: kInvalidArgument when the address is not a numeric IP.
Result<std::unique_ptr<Link>> Dial(const Endpoint& remote, LinkOptions options);

}  // namespace strata::wire
