// PoolSocket: one connected Unix stream socket carrying pool frames
// (pool_codec.h), with file descriptors passed beside a frame (SCM_RIGHTS):
// wire's UnixFdChannel with the pool codec, as attach/client/unix_channel.h
// is with the attach codec.
//
// Thread: one thread at a time.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "coordinator/pool/pool_messages.h"
#include "store/base/status.h"
#include "wire/unique_fd.h"
#include "wire/unix_fd_channel.h"

namespace strata::pool {

// Fds passed with one frame at most (a HelloAccept passes one, the arena).
inline constexpr size_t kPoolFdsPerFrameMax = 4;

// A message and the fds that arrived with its frame.
using PoolReceived = wire::FdMessage<PoolMessage>;

class PoolSocket {
 public:
  explicit PoolSocket(wire::UniqueFd socket);

  // Writes the whole frame, with `fds` on its first byte. kUnavailable when the
  // peer is gone or read nothing within the socket's send timeout.
  Status Send(const PoolMessage& message, std::span<const int> fds = {});
  // Reads what is there without waiting: a message once a frame completed,
  // nullopt if none has. kUnavailable on EOF or a reset; kCorruption or
  // kInvalidArgument for a bad frame.
  Result<std::optional<PoolReceived>> TryReceive();
  // Waits up to `bound` for the next message (kUnavailable on timeout).
  Result<PoolReceived> Receive(std::chrono::milliseconds bound);

  int fd() const { return channel_.fd(); }

 private:
  wire::UnixFdChannel channel_;
};

// A listening Unix socket at `path` (an old socket file there is replaced),
// owner-only (0600). Non-blocking accepts.
Result<wire::UniqueFd> ListenUnix(const std::string& path);
// Connects to `path`, with `send_bound` as its send timeout.
Result<wire::UniqueFd> ConnectUnix(const std::string& path, std::chrono::milliseconds send_bound);

}  // namespace strata::pool
