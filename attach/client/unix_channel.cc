#include "attach/client/unix_channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <cstring>

#include "attach/client/attach_codec.h"

namespace strata::attach {

UnixChannel::UnixChannel(UniqueFd socket)
    : socket_(std::move(socket)), reader_(kAttachFrameBytesMax) {}

Status UnixChannel::Send(const AttachMessage& message, std::span<const int> fds) {
  if (fds.size() > kAttachFdsPerFrameMax) {
    return Status::InvalidArgument("at most " + std::to_string(kAttachFdsPerFrameMax) +
                                   " fds per frame");
  }
  STRATA_ASSIGN_OR_RETURN(wire::Frame frame, EncodeAttachFrame(message));
  std::span<const std::byte> bytes = frame.bytes();
  std::vector<char> control(CMSG_SPACE(sizeof(int) * kAttachFdsPerFrameMax));
  bool fds_sent = fds.empty();
  while (!bytes.empty()) {
    iovec iov{const_cast<std::byte*>(bytes.data()), bytes.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (!fds_sent) {
      msg.msg_control = control.data();
      msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    const ssize_t n = ::sendmsg(socket_.get(), &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return Status::Unavailable("attach socket: the peer read nothing within the send bound");
      }
      return Status::FromErrno(errno, "attach socket send").WithContext("peer gone");
    }
    fds_sent = true;
    bytes = bytes.subspan(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Result<std::optional<Received>> UnixChannel::TryReceive() {
  while (true) {
    // Stable until Advance: the bytes this stage of the frame still needs.
    std::span<std::byte> buffer = reader_.NextBuffer().subspan(filled_);
    std::vector<char> control(CMSG_SPACE(sizeof(int) * kAttachFdsPerFrameMax));
    iovec iov{buffer.data(), buffer.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    const ssize_t n = ::recvmsg(socket_.get(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return std::optional<Received>();
      return Status::Unavailable("attach socket: " + std::string(std::strerror(errno)));
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        pending_fds_.emplace_back(fd);
      }
    }
    if ((msg.msg_flags & MSG_CTRUNC) != 0) {
      return Status::InvalidArgument("attach socket: more fds than one frame may carry");
    }
    if (n == 0) return Status::Unavailable("attach socket: the peer closed the connection");
    filled_ += static_cast<size_t>(n);
    if (static_cast<size_t>(n) < buffer.size()) continue;  // the rest of this stage's bytes
    filled_ = 0;
    switch (reader_.Advance()) {
      case wire::FrameReader::Step::kNeedMore: continue;
      case wire::FrameReader::Step::kRejected: return reader_.error();
      case wire::FrameReader::Step::kFrameReady: {
        Result<AttachMessage> message = DecodeAttachFrame(reader_.frame());
        reader_.Reset();
        std::vector<UniqueFd> fds = std::move(pending_fds_);
        pending_fds_.clear();
        if (!message.ok()) return message.status();
        return std::optional<Received>(Received{std::move(*message), std::move(fds)});
      }
    }
  }
}

Result<Received> UnixChannel::Receive(std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (true) {
    STRATA_ASSIGN_OR_RETURN(std::optional<Received> r, TryReceive());
    if (r) return std::move(*r);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Status::Unavailable("attach socket: no answer within the bound");
    pollfd p{socket_.get(), POLLIN, 0};
    (void)::poll(&p, 1, static_cast<int>(left.count()) + 1);
  }
}

Status SetSendTimeout(int socket, std::chrono::milliseconds bound) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(bound.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((bound.count() % 1000) * 1000);
  if (::setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
    return Status::FromErrno(errno, "setsockopt SO_SNDTIMEO");
  }
  return Status::Ok();
}

}  // namespace strata::attach
