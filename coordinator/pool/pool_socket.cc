#include "coordinator/pool/pool_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

#include "coordinator/pool/pool_codec.h"

namespace strata::pool {

PoolSocket::PoolSocket(attach::UniqueFd socket)
    : socket_(std::move(socket)), reader_(kPoolFrameBytesMax) {}

Status PoolSocket::Send(const PoolMessage& message, std::span<const int> fds) {
  if (fds.size() > kPoolFdsPerFrameMax) {
    return Status::InvalidArgument("at most " + std::to_string(kPoolFdsPerFrameMax) +
                                   " fds per pool frame");
  }
  STRATA_ASSIGN_OR_RETURN(wire::Frame frame, EncodePoolFrame(message));
  std::span<const std::byte> bytes = frame.bytes();
  std::vector<char> control(CMSG_SPACE(sizeof(int) * kPoolFdsPerFrameMax));
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
        return Status::Unavailable("pool socket: the peer read nothing within the send bound");
      }
      return Status::Unavailable("pool socket send: " + std::string(std::strerror(errno)));
    }
    fds_sent = true;
    bytes = bytes.subspan(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Result<std::optional<PoolReceived>> PoolSocket::TryReceive() {
  while (true) {
    std::span<std::byte> buffer = reader_.NextBuffer().subspan(filled_);
    std::vector<char> control(CMSG_SPACE(sizeof(int) * kPoolFdsPerFrameMax));
    iovec iov{buffer.data(), buffer.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    const ssize_t n = ::recvmsg(socket_.get(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return std::optional<PoolReceived>();
      return Status::Unavailable("pool socket: " + std::string(std::strerror(errno)));
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
      return Status::InvalidArgument("pool socket: more fds than one frame may carry");
    }
    if (n == 0) return Status::Unavailable("pool socket: the peer closed the connection");
    filled_ += static_cast<size_t>(n);
    if (static_cast<size_t>(n) < buffer.size()) continue;
    filled_ = 0;
    switch (reader_.Advance()) {
      case wire::FrameReader::Step::kNeedMore: continue;
      case wire::FrameReader::Step::kRejected: return reader_.error();
      case wire::FrameReader::Step::kFrameReady: {
        Result<PoolMessage> message = DecodePoolFrame(reader_.frame());
        reader_.Reset();
        std::vector<attach::UniqueFd> fds = std::move(pending_fds_);
        pending_fds_.clear();
        if (!message.ok()) return message.status();
        return std::optional<PoolReceived>(PoolReceived{std::move(*message), std::move(fds)});
      }
    }
  }
}

Result<PoolReceived> PoolSocket::Receive(std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (true) {
    STRATA_ASSIGN_OR_RETURN(std::optional<PoolReceived> r, TryReceive());
    if (r) return std::move(*r);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Status::Unavailable("pool socket: no answer within the bound");
    pollfd p{socket_.get(), POLLIN, 0};
    (void)::poll(&p, 1, static_cast<int>(left.count()) + 1);
  }
}

namespace {

Result<sockaddr_un> UnixAddress(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return Status::InvalidArgument("pool socket path '" + path + "' is empty or too long");
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

}  // namespace

Result<attach::UniqueFd> ListenUnix(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(sockaddr_un addr, UnixAddress(path));
  attach::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Status::FromErrno(errno, "pool socket");
  (void)::unlink(path.c_str());
  const mode_t old_mask = ::umask(077);
  const int bound = ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  ::umask(old_mask);
  if (bound != 0) return Status::FromErrno(errno, "binding pool socket " + path);
  if (::listen(fd.get(), SOMAXCONN) != 0) return Status::FromErrno(errno, "listen " + path);
  return fd;
}

Result<attach::UniqueFd> ConnectUnix(const std::string& path,
                                     std::chrono::milliseconds send_bound) {
  STRATA_ASSIGN_OR_RETURN(sockaddr_un addr, UnixAddress(path));
  attach::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status::FromErrno(errno, "pool socket");
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    return Status::Unavailable("connecting to pool " + path + ": " + std::strerror(errno));
  }
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(send_bound.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((send_bound.count() % 1000) * 1000);
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
    return Status::FromErrno(errno, "setsockopt SO_SNDTIMEO");
  }
  return fd;
}

}  // namespace strata::pool
