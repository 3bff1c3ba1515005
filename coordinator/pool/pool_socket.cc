#include "coordinator/pool/pool_socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>

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

std::string PoolAddress::ToString() const {
  return tcp() ? "tcp://" + host + ":" + std::to_string(port) : unix_path;
}

Result<PoolAddress> ParsePoolAddress(const std::string& text, bool listening) {
  constexpr std::string_view kTcp = "tcp://";
  PoolAddress a;
  if (!text.starts_with(kTcp)) {
    if (text.empty()) return Status::InvalidArgument("the pool address is empty");
    a.unix_path = text;
    return a;
  }
  const std::string rest = text.substr(kTcp.size());
  const size_t colon = rest.rfind(':');
  unsigned port = 0;
  const char* end = rest.data() + rest.size();
  if (colon == std::string::npos || colon == 0 ||
      std::from_chars(rest.data() + colon + 1, end, port).ptr != end || (port == 0 && !listening) ||
      port > 65535) {
    return Status::InvalidArgument("pool address '" + text + "' is not tcp://HOST:PORT");
  }
  a.host = rest.substr(0, colon);
  if (a.host.size() > 2 && a.host.front() == '[' && a.host.back() == ']') {
    a.host = a.host.substr(1, a.host.size() - 2);  // [::1]
  }
  a.port = static_cast<uint16_t>(port);
  return a;
}

namespace {

struct AddrInfoFree {
  void operator()(addrinfo* p) const { ::freeaddrinfo(p); }
};
using AddrInfoPtr = std::unique_ptr<addrinfo, AddrInfoFree>;

Result<AddrInfoPtr> Resolve(const std::string& host, uint16_t port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) {
    // Not resolvable yet (a name not published, a resolver away) may change;
    // anything else is the address itself.
    const std::string why = "cannot resolve pool host '" + host + "': " + ::gai_strerror(rc);
    return rc == EAI_AGAIN || rc == EAI_NONAME || rc == EAI_FAIL || rc == EAI_SYSTEM
               ? Status::Unavailable(why)
               : Status::InvalidArgument(why);
  }
  return AddrInfoPtr(found);
}

}  // namespace

Status SetNoDelay(int fd) {
  const int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
    return Status::FromErrno(errno, "setsockopt TCP_NODELAY");
  }
  return Status::Ok();
}

Status SetNonBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return Status::FromErrno(errno, "fcntl O_NONBLOCK");
  }
  return Status::Ok();
}

Result<wire::UniqueFd> ListenTcp(const std::string& host, uint16_t port, uint16_t* bound_port) {
  STRATA_ASSIGN_OR_RETURN(AddrInfoPtr found, Resolve(host, port, true));
  const addrinfo* ai = found.get();
  wire::UniqueFd fd(::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Status::FromErrno(errno, "pool TCP socket");
  const int one = 1;
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const std::string where = host + ":" + std::to_string(port);
  if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
    return Status::FromErrno(errno, "binding pool TCP address " + where);
  }
  if (::listen(fd.get(), SOMAXCONN) != 0) return Status::FromErrno(errno, "listen " + where);
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
    return Status::FromErrno(errno, "getsockname " + where);
  }
  *bound_port =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port
                                        : reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
  return fd;
}

Result<wire::UniqueFd> ConnectTcp(const std::string& host, uint16_t port,
                                  std::chrono::milliseconds bound) {
  STRATA_ASSIGN_OR_RETURN(AddrInfoPtr found, Resolve(host, port, false));
  const std::string where = "pool tcp://" + host + ":" + std::to_string(port);
  Status last = Status::Unavailable("connecting to " + where + ": no address");
  for (const addrinfo* ai = found.get(); ai != nullptr; ai = ai->ai_next) {
    wire::UniqueFd fd(::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid()) return Status::FromErrno(errno, "pool TCP socket");
    // Non-blocking, so an unreachable host costs at most `bound`.
    int rc = ::connect(fd.get(), ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd.get(), POLLOUT, 0};
      do {
        rc = ::poll(&p, 1, static_cast<int>(bound.count()));
      } while (rc < 0 && errno == EINTR);
      int error = rc == 0 ? ETIMEDOUT : rc < 0 ? errno : 0;
      socklen_t len = sizeof error;
      if (rc > 0) (void)::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &len);
      rc = error == 0 ? 0 : -1;
      errno = error;
    }
    if (rc != 0) {
      last = Status::Unavailable("connecting to " + where + ": " + std::strerror(errno));
      continue;
    }
    const int flags = ::fcntl(fd.get(), F_GETFL);
    if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
      return Status::FromErrno(errno, "fcntl " + where);
    }
    STRATA_RETURN_IF_ERROR(SetNoDelay(fd.get()));
    STRATA_RETURN_IF_ERROR(wire::SetSendTimeout(fd.get(), bound));
    return fd;
  }
  return last;
}

}  // namespace strata::pool
