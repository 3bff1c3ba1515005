#include "attach/client/unix_channel.h"

#include "attach/client/attach_codec.h"

namespace strata::attach {

UnixChannel::UnixChannel(UniqueFd socket)
    : channel_(std::move(socket), {.frame_bytes_max = kAttachFrameBytesMax,
                                   .fds_per_frame_max = kAttachFdsPerFrameMax,
                                   .name = "attach socket"}) {}

Status UnixChannel::Send(const AttachMessage& message, std::span<const int> fds) {
  STRATA_ASSIGN_OR_RETURN(wire::Frame frame, EncodeAttachFrame(message));
  return channel_.Send(frame.bytes(), fds);
}

Result<std::optional<Received>> UnixChannel::TryReceive() {
  return channel_.TryReceive<AttachMessage>(&DecodeAttachFrame);
}

Result<Received> UnixChannel::Receive(std::chrono::milliseconds bound) {
  return channel_.Receive<AttachMessage>(&DecodeAttachFrame, bound);
}

}  // namespace strata::attach
