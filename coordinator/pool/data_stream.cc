#include "coordinator/pool/data_stream.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string>

#include "coordinator/pool/pool_codec.h"

namespace strata::pool {
namespace {

Status Gone(const std::string& what) {
  return Status::Unavailable("the pool's data connection " + what);
}

}  // namespace

DataStream::DataStream(wire::UniqueFd socket, std::unique_ptr<wire::TlsSession> tls)
    : socket_(std::move(socket)), tls_(std::move(tls)), reader_(kPoolHelloFrameBytesMax) {
  const int flags = ::fcntl(socket_.get(), F_GETFL);
  if (flags >= 0) (void)::fcntl(socket_.get(), F_SETFL, flags | O_NONBLOCK);
}

DataStream::~DataStream() = default;

void DataStream::Shutdown() { (void)::shutdown(socket_.get(), SHUT_RDWR); }

Status DataStream::Wait(bool read, DataDeadline deadline) const {
  if (read && tls_ != nullptr && tls_->HasBuffered()) return Status::Ok();
  // A TLS read may wait to write (a key update's answer in a full buffer).
  const bool writes = !read || (tls_ != nullptr && tls_->WantsWrite());
  const auto events = static_cast<short>((read ? POLLIN : 0) | (writes ? POLLOUT : 0));
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() < 0) {
      timed_out_ = true;
      return Gone("timed out");
    }
    pollfd p{.fd = socket_.get(), .events = events, .revents = 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, 60'000)));
    if (n < 0 && errno != EINTR) return Gone(std::string("failed: poll: ") + std::strerror(errno));
    if (n > 0) return Status::Ok();  // ready, or HUP/ERR: the next call says which
  }
}

Status DataStream::WriteAll(std::span<const std::span<const std::byte>> parts,
                            DataDeadline deadline) {
  if (tls_ != nullptr) {
    for (std::span<const std::byte> part : parts) {
      if (part.empty()) continue;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        timed_out_ = true;
        return Gone("timed out");
      }
      tls_->set_write_bound(left);
      STRATA_RETURN_IF_ERROR(tls_->Write(part));
    }
    return Status::Ok();
  }
  std::array<iovec, 2> iov{};
  size_t count = 0;
  for (std::span<const std::byte> part : parts) {
    if (part.empty()) continue;
    iov[count++] = {.iov_base = const_cast<std::byte*>(part.data()), .iov_len = part.size()};
  }
  size_t first = 0;
  while (first < count) {
    msghdr msg{};
    msg.msg_iov = iov.data() + first;
    msg.msg_iovlen = count - first;
    const ssize_t sent = ::sendmsg(socket_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        return Gone(std::string("failed: ") + std::strerror(errno));
      STRATA_RETURN_IF_ERROR(Wait(false, deadline));
      continue;
    }
    auto left = static_cast<size_t>(sent);
    while (first < count && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (first < count) {
      iov[first].iov_base = static_cast<std::byte*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return Status::Ok();
}

Status DataStream::Send(const PoolMessage& message, std::span<const std::byte> payload,
                        DataDeadline deadline) {
  timed_out_ = false;
  STRATA_ASSIGN_OR_RETURN(const wire::Frame frame, EncodePoolFrame(message));
  const std::array<std::span<const std::byte>, 2> parts{frame.bytes(), payload};
  return WriteAll(parts, deadline);
}

Status DataStream::ReadBytes(std::span<std::byte> out, DataDeadline deadline) {
  timed_out_ = false;
  size_t filled = 0;
  while (filled < out.size()) {
    const std::span<std::byte> rest = out.subspan(filled);
    if (tls_ != nullptr) {
      STRATA_ASSIGN_OR_RETURN(const size_t got, tls_->Read(rest));
      if (got == 0) STRATA_RETURN_IF_ERROR(Wait(true, deadline));
      filled += got;
      continue;
    }
    const ssize_t got = ::recv(socket_.get(), rest.data(), rest.size(), MSG_DONTWAIT);
    if (got == 0) return Gone("was closed by the peer");
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        return Gone(std::string("failed: ") + std::strerror(errno));
      STRATA_RETURN_IF_ERROR(Wait(true, deadline));
      continue;
    }
    filled += static_cast<size_t>(got);
  }
  return Status::Ok();
}

Result<PoolMessage> DataStream::Receive(DataDeadline deadline,
                                        std::chrono::milliseconds rest_bound) {
  reader_.Reset();
  for (bool first = true;; first = false) {
    // Once a frame began, the rest of it must follow within rest_bound.
    if (!first) deadline = std::min(deadline, std::chrono::steady_clock::now() + rest_bound);
    STRATA_RETURN_IF_ERROR(ReadBytes(reader_.NextBuffer(), deadline));
    switch (reader_.Advance()) {
      case wire::FrameReader::Step::kNeedMore: continue;
      case wire::FrameReader::Step::kRejected: return reader_.error();
      case wire::FrameReader::Step::kFrameReady: return DecodePoolFrame(reader_.frame());
    }
  }
}

}  // namespace strata::pool
