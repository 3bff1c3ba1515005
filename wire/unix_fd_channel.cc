#include "wire/unix_fd_channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "store/base/assert.h"

namespace strata::wire {
namespace {

// Room for the most fds any channel passes with one frame.
size_t ControlBytes(size_t fds) { return CMSG_SPACE(sizeof(int) * fds); }

}  // namespace

UnixFdChannel::UnixFdChannel(UniqueFd socket, UnixFdChannelLimits limits)
    : socket_(std::move(socket)), limits_(limits), reader_(limits.frame_bytes_max) {
  STRATA_ASSERT(limits.fds_per_frame_max <= kUnixFdsPerFrameKernelMax,
                "the kernel passes at most SCM_MAX_FD fds");
}

Status UnixFdChannel::Send(std::span<const std::byte> frame, std::span<const int> fds) {
  const std::string name(limits_.name);
  if (fds.size() > limits_.fds_per_frame_max) {
    return Status::InvalidArgument(name + ": at most " + std::to_string(limits_.fds_per_frame_max) +
                                   " fds per frame");
  }
  if (tls_ != nullptr) {
    if (!fds.empty()) return Status::InvalidArgument(name + ": no fds pass over TLS");
    return tls_->Write(frame).WithContext(name);
  }
  std::vector<char> control(ControlBytes(fds.size()));
  bool fds_sent = fds.empty();
  while (!frame.empty()) {
    iovec iov{const_cast<std::byte*>(frame.data()), frame.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (!fds_sent) {
      msg.msg_control = control.data();
      msg.msg_controllen = control.size();
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
        return Status::Unavailable(name + ": the peer read nothing within the send bound");
      }
      return Status::Unavailable(name + " send: " + std::strerror(errno) + " (peer gone)");
    }
    fds_sent = true;
    frame = frame.subspan(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Result<bool> UnixFdChannel::ReadUntilFrame() {
  const std::string_view name = limits_.name;
  std::vector<char> control(ControlBytes(limits_.fds_per_frame_max));
  while (true) {
    // Stable until Advance: the bytes this stage of the frame still needs.
    std::span<std::byte> buffer = reader_.NextBuffer().subspan(filled_);
    size_t n = 0;
    if (tls_ != nullptr) {
      Result<size_t> read = tls_->Read(buffer);
      if (!read.ok()) return read.status().WithContext(std::string(name));
      if (*read == 0) return false;
      n = *read;
    } else {
      iovec iov{buffer.data(), buffer.size()};
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control.data();
      msg.msg_controllen = control.size();
      const ssize_t got = ::recvmsg(socket_.get(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
      if (got < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
        return Status::Unavailable(std::string(name) + ": " + std::strerror(errno));
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
        return Status::InvalidArgument(std::string(name) + ": more fds than one frame may carry");
      }
      if (got == 0) {
        return Status::Unavailable(std::string(name) + ": the peer closed the connection");
      }
      n = static_cast<size_t>(got);
    }
    filled_ += n;
    if (n < buffer.size()) continue;  // the rest of this stage's bytes
    filled_ = 0;
    switch (reader_.Advance()) {
      case FrameReader::Step::kNeedMore: continue;
      case FrameReader::Step::kRejected: return reader_.error();
      case FrameReader::Step::kFrameReady: return true;
    }
  }
}

std::vector<UniqueFd> UnixFdChannel::TakeFrame() {
  reader_.Reset();
  std::vector<UniqueFd> fds = std::move(pending_fds_);
  pending_fds_.clear();
  return fds;
}

Status UnixFdChannel::WaitReadable(std::chrono::steady_clock::time_point deadline) const {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) {
    return Status::Unavailable(std::string(limits_.name) + ": no answer within the bound");
  }
  if (tls_ != nullptr && tls_->HasBuffered()) return Status::Ok();
  pollfd p{socket_.get(), POLLIN, 0};
  (void)::poll(&p, 1, static_cast<int>(left.count()) + 1);
  return Status::Ok();
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

}  // namespace strata::wire
