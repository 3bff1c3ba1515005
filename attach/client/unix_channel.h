// UnixChannel: one connected Unix stream socket carrying attach frames
// (attach_codec.h), with file descriptors passed beside a frame (SCM_RIGHTS).
// Frames are split by wire's FrameReader, as on the record links.
//
// Thread: one thread at a time.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <vector>

#include "attach/client/attach_messages.h"
#include "attach/client/unique_fd.h"
#include "store/base/status.h"
#include "wire/frame_reader.h"

namespace strata::attach {

// Fds passed with one frame at most (a Hello's allocations).
inline constexpr size_t kAttachFdsPerFrameMax = 253;  // the kernel's SCM_MAX_FD

struct Received {
  AttachMessage message;
  std::vector<UniqueFd> fds;  // the fds that arrived with this frame
};

class UnixChannel {
 public:
  explicit UnixChannel(UniqueFd socket);

  // Writes the whole frame, with `fds` on its first byte. A socket write that
  // blocks for longer than the socket's send timeout fails (kUnavailable).
  Status Send(const AttachMessage& message, std::span<const int> fds = {});
  // Reads what is there without waiting: a message once a frame completed,
  // nullopt if none has. Errors: kUnavailable on EOF or a reset (the peer
  // detached or died), kCorruption / kInvalidArgument for a bad frame.
  Result<std::optional<Received>> TryReceive();
  // Waits up to `bound` for the next message (kUnavailable on timeout).
  Result<Received> Receive(std::chrono::milliseconds bound);

  int fd() const { return socket_.get(); }

 private:
  UniqueFd socket_;
  wire::FrameReader reader_;
  size_t filled_ = 0;                  // bytes of reader_.NextBuffer() already read
  std::vector<UniqueFd> pending_fds_;  // arrived during the frame being read
};

// Bounds a blocking socket write (SO_SNDTIMEO).
Status SetSendTimeout(int socket, std::chrono::milliseconds bound);

}  // namespace strata::attach
