#include "coordinator/pool/pool_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

#include "coordinator/pool/pool_codec.h"

namespace strata::pool {

PoolSocket::PoolSocket(wire::UniqueFd socket)
    : channel_(std::move(socket), {.frame_bytes_max = kPoolFrameBytesMax,
                                   .fds_per_frame_max = kPoolFdsPerFrameMax,
                                   .name = "pool socket"}) {}

Status PoolSocket::Send(const PoolMessage& message, std::span<const int> fds) {
  STRATA_ASSIGN_OR_RETURN(wire::Frame frame, EncodePoolFrame(message));
  return channel_.Send(frame.bytes(), fds);
}

Result<std::optional<PoolReceived>> PoolSocket::TryReceive() {
  return channel_.TryReceive<PoolMessage>(&DecodePoolFrame);
}

Result<PoolReceived> PoolSocket::Receive(std::chrono::milliseconds bound) {
  return channel_.Receive<PoolMessage>(&DecodePoolFrame, bound);
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

Result<wire::UniqueFd> ListenUnix(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(sockaddr_un addr, UnixAddress(path));
  wire::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Status::FromErrno(errno, "pool socket");
  (void)::unlink(path.c_str());
  const mode_t old_mask = ::umask(077);
  const int bound = ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  ::umask(old_mask);
  if (bound != 0) return Status::FromErrno(errno, "binding pool socket " + path);
  if (::listen(fd.get(), SOMAXCONN) != 0) return Status::FromErrno(errno, "listen " + path);
  return fd;
}

Result<wire::UniqueFd> ConnectUnix(const std::string& path, std::chrono::milliseconds send_bound) {
  STRATA_ASSIGN_OR_RETURN(sockaddr_un addr, UnixAddress(path));
  wire::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status::FromErrno(errno, "pool socket");
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    return Status::Unavailable("connecting to pool " + path + ": " + std::strerror(errno));
  }
  STRATA_RETURN_IF_ERROR(wire::SetSendTimeout(fd.get(), send_bound));
  return fd;
}

}  // namespace strata::pool
