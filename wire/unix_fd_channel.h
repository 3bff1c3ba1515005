// UnixFdChannel: one connected Unix stream socket carrying frames (split by
// FrameReader, as on the record links), with file descriptors passed beside a
// frame (SCM_RIGHTS); or a TCP socket, in the clear or through a TlsSession
// (UseTls), which pass no fds. It knows frames, not messages: a protocol's channel
// (attach's UnixChannel, the pool's PoolSocket) encodes its messages into
// frames and hands its decoder to TryReceive / Receive.
//
// Thread: one thread at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "store/base/status.h"
#include "wire/frame_reader.h"
#include "wire/tls_session.h"
#include "wire/unique_fd.h"

namespace strata::wire {

// The kernel's SCM_MAX_FD: no channel may pass more fds with one frame.
inline constexpr size_t kUnixFdsPerFrameKernelMax = 253;

struct UnixFdChannelLimits {
  // A frame declaring more is refused before its body is allocated.
  size_t frame_bytes_max = 0;
  // Fds sent or received with one frame (at most kUnixFdsPerFrameKernelMax).
  size_t fds_per_frame_max = 0;
  // Names the channel in every error ("attach socket"); static storage.
  std::string_view name;
};

// One decoded message and the fds that arrived with its frame.
template <typename Message>
struct FdMessage {
  Message message;
  std::vector<UniqueFd> fds;
};

// A protocol's frame decoder: `words` is exactly one frame.
template <typename Message>
using FrameDecoder = Result<Message> (*)(std::span<const uint64_t> words);

class UnixFdChannel {
 public:
  UnixFdChannel(UniqueFd socket, UnixFdChannelLimits limits);

  // Writes the whole frame, with `fds` on its first byte. kInvalidArgument for
  // more fds than the limit; kUnavailable when the peer is gone or read
  // nothing within the socket's send timeout (SetSendTimeout).
  Status Send(std::span<const std::byte> frame, std::span<const int> fds);

  // Reads what is there without waiting: a message once a frame completed,
  // nullopt if none has. Errors: kUnavailable on EOF or a reset (the peer
  // closed or died); kInvalidArgument for more fds than the limit; the
  // reader's or `decode`'s error (kCorruption / kInvalidArgument) for a bad
  // frame. The fds of a frame that fails to decode are closed.
  template <typename Message>
  Result<std::optional<FdMessage<Message>>> TryReceive(FrameDecoder<Message> decode) {
    STRATA_ASSIGN_OR_RETURN(const bool ready, ReadUntilFrame());
    if (!ready) return std::optional<FdMessage<Message>>();
    Result<Message> message = decode(reader_.frame());
    std::vector<UniqueFd> fds = TakeFrame();
    if (!message.ok()) return message.status();
    return std::optional<FdMessage<Message>>(
        FdMessage<Message>{std::move(*message), std::move(fds)});
  }

  // Waits up to `bound` for the next message (kUnavailable on timeout).
  template <typename Message>
  Result<FdMessage<Message>> Receive(FrameDecoder<Message> decode,
                                     std::chrono::milliseconds bound) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    while (true) {
      STRATA_ASSIGN_OR_RETURN(std::optional<FdMessage<Message>> received, TryReceive(decode));
      if (received) return std::move(*received);
      STRATA_RETURN_IF_ERROR(WaitReadable(deadline));
    }
  }

  int fd() const { return socket_.get(); }
  // The largest frame accepted from now on (a server raises it once the peer
  // is known: a stranger's first frame is allocated only up to a small cap).
  void set_frame_bytes_max(size_t bytes) { reader_.set_frame_bytes_max(bytes); }

  // From now on every byte goes through `tls` (bound to this socket, its
  // handshake done): Send refuses fds, and a wait sees bytes the session
  // holds already decrypted.
  void UseTls(std::unique_ptr<TlsSession> tls) { tls_ = std::move(tls); }

  // The socket and its TLS session (null: none), for a caller that reads
  // and writes the stream itself from now on (the pool's data connections).
  // Only between frames (nothing of a next frame read yet); the channel is
  // empty afterwards.
  std::pair<UniqueFd, std::unique_ptr<TlsSession>> Release() {
    return {std::move(socket_), std::move(tls_)};
  }

 private:
  // Reads without waiting; true once reader_ holds a complete frame.
  Result<bool> ReadUntilFrame();
  // Starts the next frame; returns the fds that came with the finished one.
  std::vector<UniqueFd> TakeFrame();
  // Waits for the socket to be readable; kUnavailable once `deadline` passed.
  Status WaitReadable(std::chrono::steady_clock::time_point deadline) const;

  UniqueFd socket_;
  UnixFdChannelLimits limits_;
  FrameReader reader_;
  size_t filled_ = 0;                  // bytes of reader_.NextBuffer() already read
  std::vector<UniqueFd> pending_fds_;  // arrived during the frame being read
  std::unique_ptr<TlsSession> tls_;    // null: the socket's own bytes
};

// Bounds a blocking socket write (SO_SNDTIMEO).
Status SetSendTimeout(int socket, std::chrono::milliseconds bound);

}  // namespace strata::wire
