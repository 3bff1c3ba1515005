#include "launch/runtime/runtime_lockstep.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "launch/runtime/job_token.h"
#include "launch/runtime/lockstep_frames.h"

namespace strata {

namespace {

using Clock = std::chrono::steady_clock;
using attach::UniqueFd;

// A peer whose rank zero is not listening yet tries again this often.
constexpr auto kConnectRetryPause = std::chrono::milliseconds(100);
constexpr int kListenBacklog = 64;

int MillisLeft(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// Waits until `fd` is ready for `events` or `deadline`; false at the deadline.
bool WaitReady(int fd, short events, Clock::time_point deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, MillisLeft(deadline));
    if (n > 0) return true;
    if (n == 0 || errno != EINTR) return false;
  }
}

Status WriteAll(int fd, std::span<const uint8_t> bytes, Clock::time_point deadline) {
  size_t done = 0;
  while (done < bytes.size()) {
    if (!WaitReady(fd, POLLOUT, deadline)) return Status::Unavailable("write timed out");
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::FromErrno(errno, "send");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status ReadExact(int fd, std::span<uint8_t> out, Clock::time_point deadline) {
  size_t done = 0;
  while (done < out.size()) {
    if (!WaitReady(fd, POLLIN, deadline)) return Status::Unavailable("read timed out");
    const ssize_t n = ::recv(fd, out.data() + done, out.size() - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return Status::Unavailable("connection closed");
    if (n < 0) return Status::FromErrno(errno, "recv");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status WriteFrame(int fd, LockstepOp op, std::vector<uint8_t> body, Clock::time_point deadline) {
  return WriteAll(fd, EncodeLockstepFrame({.op = op, .body = std::move(body)}), deadline);
}

Result<LockstepFrame> ReadFrame(int fd, Clock::time_point deadline) {
  std::array<uint8_t, kLockstepHeaderBytes> header{};
  STRATA_RETURN_IF_ERROR(ReadExact(fd, header, deadline));
  STRATA_ASSIGN_OR_RETURN(LockstepHeader h, DecodeLockstepHeader(header));
  LockstepFrame frame{.op = h.op, .body = std::vector<uint8_t>(h.body_bytes)};
  STRATA_RETURN_IF_ERROR(ReadExact(fd, frame.body, deadline));
  return frame;
}

Result<UniqueFd> ListenOn(const std::string& bind, uint16_t port) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (::inet_pton(AF_INET, bind.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    len = sizeof *v4;
  } else if (::inet_pton(AF_INET6, bind.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    len = sizeof *v6;
  } else {
    return Status::InvalidArgument("runtime.service_bind: \"" + bind +
                                   "\" is not a numeric address");
  }
  UniqueFd fd(::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status::FromErrno(errno, "socket");
  const int one = 1;
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    return Status::FromErrno(errno, "bind " + bind + ":" + std::to_string(port));
  }
  if (::listen(fd.get(), kListenBacklog) != 0) return Status::FromErrno(errno, "listen");
  return fd;
}

// One connect attempt; kUnavailable when nobody listens there yet.
Result<UniqueFd> ConnectOnce(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
      rc != 0) {
    return Status::InvalidArgument("cannot resolve " + host + ": " + ::gai_strerror(rc));
  }
  Status last = Status::Unavailable("no address for " + host);
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    UniqueFd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd.valid()) continue;
    if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) == 0) {
      ::freeaddrinfo(found);
      const int one = 1;
      (void)::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return fd;
    }
    last = Status::Unavailable(host + ":" + std::to_string(port) + ": " + std::strerror(errno));
  }
  ::freeaddrinfo(found);
  return last;
}

}  // namespace

LockstepLeader::LockstepLeader(UniqueFd listener, uint16_t port, LockstepOptions options)
    : listener_(std::move(listener)), port_(port), options_(std::move(options)) {}

LockstepLeader::~LockstepLeader() = default;

Result<std::unique_ptr<LockstepLeader>> LockstepLeader::Listen(const std::string& bind,
                                                               uint16_t port,
                                                               const LockstepOptions& options) {
  STRATA_ASSIGN_OR_RETURN(UniqueFd listener, ListenOn(bind, port));
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return Status::FromErrno(errno, "getsockname");
  }
  const uint16_t bound_port =
      ntohs(addr.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&addr)->sin_port
                                      : reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return std::unique_ptr<LockstepLeader>(
      new LockstepLeader(std::move(listener), bound_port, options));
}

Status LockstepLeader::AdmitPeers(uint32_t world_size, std::chrono::milliseconds join_bound) {
  peers_.clear();
  peers_.resize(world_size > 0 ? world_size - 1 : 0);
  size_t admitted = 0;
  const Clock::time_point deadline = Clock::now() + join_bound;
  while (admitted < peers_.size()) {
    if (!WaitReady(listener_.get(), POLLIN, deadline)) {
      return Status::Unavailable("lockstep: " + std::to_string(peers_.size() - admitted) +
                                 " peer runtime(s) did not join within " +
                                 std::to_string(join_bound.count()) + " ms");
    }
    UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!fd.valid()) continue;
    const Clock::time_point hello_deadline = std::min(deadline, Clock::now() + options_.io_bound);
    Result<LockstepFrame> frame = ReadFrame(fd.get(), hello_deadline);
    Result<LockstepHello> hello =
        !frame.ok() ? Result<LockstepHello>(frame.status())
        : frame->op != LockstepOp::kHello
            ? Result<LockstepHello>(Status::InvalidArgument("first frame is not a hello"))
            : DecodeLockstepHello(frame->body);
    if (!hello.ok()) {
      spdlog::warn("lockstep: dropped a connection: {}", hello.status().ToString());
      continue;
    }
    if (!TokenMatches(hello->token, options_.token)) {
      spdlog::warn("lockstep: dropped a hello claiming rank {}: the job's token is not proven",
                   hello->rank);
      continue;
    }
    if (hello->rank == 0 || hello->rank >= world_size || peers_[hello->rank - 1].valid()) {
      spdlog::warn("lockstep: dropped a hello from rank {} (out of range or already joined)",
                   hello->rank);
      continue;
    }
    if (!WriteFrame(fd.get(), LockstepOp::kWelcome, {}, hello_deadline).ok()) continue;
    spdlog::info("lockstep: the runtime of rank {} joined", hello->rank);
    peers_[hello->rank - 1] = std::move(fd);
    ++admitted;
  }
  return Status::Ok();
}

Result<PageWorkReport> LockstepLeader::Apply(const PageWork& work) {
  const Clock::time_point deadline = Clock::now() + options_.io_bound;
  const std::vector<uint8_t> frame =
      EncodeLockstepFrame({.op = LockstepOp::kWork, .body = EncodePageWork(work)});
  for (size_t i = 0; i < peers_.size(); ++i) {
    STRATA_RETURN_IF_ERROR(WriteAll(peers_[i].get(), frame, deadline)
                               .WithContext("lockstep: rank " + std::to_string(i + 1)));
  }
  PageWorkReport total;
  Status first = Status::Ok();
  for (size_t i = 0; i < peers_.size(); ++i) {  // every answer, so the channel stays in step
    Result<LockstepFrame> answer = ReadFrame(peers_[i].get(), deadline);
    Result<PageWorkReport> report =
        !answer.ok() ? Result<PageWorkReport>(answer.status())
        : answer->op != LockstepOp::kAnswer
            ? Result<PageWorkReport>(Status::InvalidArgument("expected an answer"))
            : DecodeLockstepAnswer(answer->body);
    if (report.ok()) {
      total.checked_bytes += report->checked_bytes;
    } else if (first.ok()) {
      first = report.status().WithContext("lockstep: rank " + std::to_string(i + 1));
    }
  }
  if (!first.ok()) return first;
  return total;
}

Status LockstepLeader::Finish() {
  const Clock::time_point deadline = Clock::now() + options_.io_bound;
  Status first = Status::Ok();
  for (size_t i = 0; i < peers_.size(); ++i) {
    Status s = WriteFrame(peers_[i].get(), LockstepOp::kDone, {}, deadline);
    if (s.ok()) s = ReadFrame(peers_[i].get(), deadline).status();
    if (!s.ok() && first.ok()) first = s.WithContext("lockstep: rank " + std::to_string(i + 1));
  }
  return first;
}

Result<std::unique_ptr<LockstepFollower>> LockstepFollower::Join(
    const std::string& host, uint16_t port, uint32_t rank, std::chrono::milliseconds join_bound,
    const LockstepOptions& options, const std::function<bool()>& stopped) {
  const Clock::time_point deadline = Clock::now() + join_bound;
  Result<UniqueFd> fd = ConnectOnce(host, port);
  while (!fd.ok() && fd.status().code() == StatusCode::kUnavailable && Clock::now() < deadline) {
    if (stopped && stopped()) return Status::Aborted("lockstep: stop requested before joining");
    std::this_thread::sleep_for(kConnectRetryPause);  // nothing to wait on: rank zero not up yet
    fd = ConnectOnce(host, port);
  }
  STRATA_RETURN_IF_ERROR(fd.status().WithContext("lockstep: rank zero's runtime"));
  const Clock::time_point hello_deadline = Clock::now() + options.io_bound;
  STRATA_RETURN_IF_ERROR(WriteFrame(fd->get(), LockstepOp::kHello,
                                    EncodeLockstepHello(options.token, rank), hello_deadline));
  STRATA_ASSIGN_OR_RETURN(LockstepFrame welcome, ReadFrame(fd->get(), hello_deadline));
  if (welcome.op != LockstepOp::kWelcome) {
    return Status::InvalidArgument("lockstep: rank zero's runtime did not welcome this rank");
  }
  return std::unique_ptr<LockstepFollower>(new LockstepFollower(std::move(*fd), options));
}

Status LockstepFollower::Serve(const ApplyWork& apply, const std::function<bool()>& stopped,
                               std::chrono::milliseconds stop_check) {
  while (true) {
    if (stopped && stopped()) return Status::Aborted("stop requested");
    if (!WaitReady(fd_.get(), POLLIN, Clock::now() + stop_check)) continue;
    const Clock::time_point deadline = Clock::now() + options_.io_bound;
    STRATA_ASSIGN_OR_RETURN(LockstepFrame frame, ReadFrame(fd_.get(), deadline));
    if (frame.op == LockstepOp::kDone) {
      return WriteFrame(fd_.get(), LockstepOp::kAnswer, EncodeLockstepAnswer(PageWorkReport{}),
                        deadline);
    }
    if (frame.op != LockstepOp::kWork) {
      return Status::InvalidArgument("lockstep: unexpected frame from rank zero");
    }
    Result<PageWork> work = DecodePageWork(frame.body);
    const Result<PageWorkReport> answer = work.ok() ? apply(*work) : work.status();
    STRATA_RETURN_IF_ERROR(
        WriteFrame(fd_.get(), LockstepOp::kAnswer, EncodeLockstepAnswer(answer), deadline));
  }
}

}  // namespace strata
