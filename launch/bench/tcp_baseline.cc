#include "launch/bench/tcp_baseline.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "launch/bench/bench_baseline.h"

namespace strata {

Result<std::unique_ptr<RawTcp>> RawTcp::Open(uint64_t bytes, uint64_t piece_bytes) {
  wire::UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener.valid()) return Status::FromErrno(errno, "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener.get(), 1) != 0 ||
      ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return Status::FromErrno(errno, "listen on loopback");
  }
  wire::UniqueFd sender(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sender.valid() ||
      ::connect(sender.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return Status::FromErrno(errno, "connect on loopback");
  }
  wire::UniqueFd receiver(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!receiver.valid()) return Status::FromErrno(errno, "accept on loopback");
  const int one = 1;  // as the data channel's sockets
  (void)::setsockopt(sender.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  (void)::setsockopt(receiver.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return std::unique_ptr<RawTcp>(
      new RawTcp(std::move(sender), std::move(receiver), bytes, piece_bytes));
}

RawTcp::RawTcp(wire::UniqueFd sender, wire::UniqueFd receiver, uint64_t bytes, uint64_t piece_bytes)
    : sender_(std::move(sender)),
      receiver_(std::move(receiver)),
      piece_bytes_(std::max<uint64_t>(piece_bytes, 1)),
      source_(bytes),
      sink_(bytes),
      thread_([this] { SendLoop(); }) {
  for (size_t i = 0; i < source_.size(); ++i) source_[i] = static_cast<std::byte>(i * 7);
}

RawTcp::~RawTcp() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  go_.NotifyAll();
  (void)::shutdown(sender_.get(), SHUT_RDWR);
  thread_.join();
}

void RawTcp::SendLoop() {
  for (;;) {
    uint64_t bytes = 0;
    {
      MutexLock lock(mu_);
      while (to_send_ == 0 && !stopping_) go_.Wait(lock);
      if (stopping_) return;
      bytes = to_send_;
      to_send_ = 0;
    }
    for (uint64_t at = 0; at < bytes;) {
      const uint64_t n = std::min(piece_bytes_, bytes - at);
      const ssize_t sent = ::send(sender_.get(), source_.data() + at, n, MSG_NOSIGNAL);
      if (sent <= 0) {
        if (sent < 0 && errno == EINTR) continue;
        return;
      }
      at += static_cast<uint64_t>(sent);
    }
  }
}

Result<Sample> RawTcp::Transfer(uint64_t bytes, int nice) {
  bytes = std::min<uint64_t>(bytes, sink_.size());
  Sample sample;
  Status status;
  RunLikeWorkerThreads(nice, [&] {
    const double cpu_before = ProcessCpuSeconds();
    const auto t0 = std::chrono::steady_clock::now();
    {
      MutexLock lock(mu_);
      to_send_ = bytes;
    }
    go_.NotifyAll();
    for (uint64_t at = 0; at < bytes;) {
      const ssize_t got = ::recv(receiver_.get(), sink_.data() + at, bytes - at, 0);
      if (got <= 0) {
        if (got < 0 && errno == EINTR) continue;
        status = Status::Unavailable("the raw TCP baseline's connection failed");
        return;
      }
      at += static_cast<uint64_t>(got);
    }
    sample.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    sample.cpu_seconds = ProcessCpuSeconds() - cpu_before;
    sample.bytes = bytes;
    sample.latency_ms.push_back(sample.seconds * 1e3);
  });
  if (!status.ok()) return status;
  return sample;
}

}  // namespace strata
