// PoolSocket: one connected Unix stream socket carrying pool frames
// (pool_codec.h), with file descriptors passed beside a frame (SCM_RIGHTS).
// Frames are split by wire's FrameReader, as on the record links and the
// attach channel (attach/client/unix_channel.h, whose mechanics this follows).
//
// Thread: one thread at a time.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "attach/client/unique_fd.h"
#include "coordinator/pool/pool_messages.h"
#include "store/base/status.h"
#include "wire/frame_reader.h"

namespace strata::pool {

// Fds passed with one frame at most (a HelloAccept passes one, the arena).
inline constexpr size_t kPoolFdsPerFrameMax = 4;

struct PoolReceived {
  PoolMessage message;
  std::vector<attach::UniqueFd> fds;  // the fds that arrived with this frame
};

class PoolSocket {
 public:
  explicit PoolSocket(attach::UniqueFd socket);

  // Writes the whole frame, with `fds` on its first byte. kUnavailable when the
  // peer is gone or read nothing within the socket's send timeout.
  Status Send(const PoolMessage& message, std::span<const int> fds = {});
  // Reads what is there without waiting: a message once a frame completed,
  // nullopt if none has. kUnavailable on EOF or a reset; kCorruption or
  // kInvalidArgument for a bad frame.
  Result<std::optional<PoolReceived>> TryReceive();
  // Waits up to `bound` for the next message (kUnavailable on timeout).
  Result<PoolReceived> Receive(std::chrono::milliseconds bound);

  int fd() const { return socket_.get(); }

 private:
  attach::UniqueFd socket_;
  wire::FrameReader reader_;
  size_t filled_ = 0;
  std::vector<attach::UniqueFd> pending_fds_;
};

// A listening Unix socket at `path` (an old socket file there is replaced),
// owner-only (0600). Non-blocking accepts.
Result<attach::UniqueFd> ListenUnix(const std::string& path);
// Connects to `path`, with `send_bound` as its send timeout.
Result<attach::UniqueFd> ConnectUnix(const std::string& path, std::chrono::milliseconds send_bound);

}  // namespace strata::pool
