// UnixChannel: one connected Unix stream socket carrying attach frames
// (attach_codec.h), with file descriptors passed beside a frame (SCM_RIGHTS):
// wire's UnixFdChannel with the attach codec.
//
// Thread: one thread at a time.
#pragma once

#include <chrono>
#include <optional>
#include <span>

#include "attach/client/attach_messages.h"
#include "attach/client/unique_fd.h"
#include "store/base/status.h"
#include "wire/unix_fd_channel.h"

namespace strata::attach {

// Fds passed with one frame at most (a Hello's allocations).
inline constexpr size_t kAttachFdsPerFrameMax = wire::kUnixFdsPerFrameKernelMax;

// A message and the fds that arrived with its frame.
using Received = wire::FdMessage<AttachMessage>;

class UnixChannel {
 public:
  explicit UnixChannel(UniqueFd socket);

  // Writes the whole frame, with `fds` on its first byte. kUnavailable when
  // the peer is gone or a write blocks longer than the socket's send timeout.
  Status Send(const AttachMessage& message, std::span<const int> fds = {});
  // Reads what is there without waiting: a message once a frame completed,
  // nullopt if none has. Errors: kUnavailable on EOF or a reset (the peer
  // detached or died), kCorruption / kInvalidArgument for a bad frame.
  Result<std::optional<Received>> TryReceive();
  // Waits up to `bound` for the next message (kUnavailable on timeout).
  Result<Received> Receive(std::chrono::milliseconds bound);

  int fd() const { return channel_.fd(); }

 private:
  wire::UnixFdChannel channel_;
};

using wire::SetSendTimeout;

}  // namespace strata::attach
