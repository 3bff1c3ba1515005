#include "wire/tcp_stream.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>

#include <asio/read.hpp>
#include <asio/write.hpp>

#include "wire/link/link.h"
#include "wire/tls_stream.h"

namespace strata::wire {
namespace internal {

Endpoint ToEndpoint(const asio::ip::tcp::endpoint& endpoint) {
  asio::ip::address address = endpoint.address();
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    address = asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6());
  }
  return Endpoint{address.to_string(), endpoint.port()};
}

TcpStream::TcpStream(asio::ip::tcp::socket socket)
    : socket_(std::move(socket)), fd_(socket_.native_handle()) {
  std::error_code ignored;
  socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
  const asio::ip::tcp::endpoint local = socket_.local_endpoint(ignored);
  if (!ignored) local_ = ToEndpoint(local);
}

void TcpStream::AsyncReadExactly(std::span<std::byte> buffer, IoCallback done) {
  asio::async_read(socket_, asio::buffer(buffer.data(), buffer.size()), std::move(done));
}

void TcpStream::AsyncReadSome(std::span<std::byte> buffer, IoCallback done) {
  socket_.async_read_some(asio::buffer(buffer.data(), buffer.size()), std::move(done));
}

void TcpStream::AsyncWriteAll(std::vector<asio::const_buffer> buffers, IoCallback done) {
  asio::async_write(socket_, buffers, std::move(done));
}

size_t TcpStream::TryWriteNow(std::span<const asio::const_buffer> buffers) {
  constexpr size_t kIovMax = 64;  // a link writes one frame (one buffer) this way
  std::array<iovec, kIovMax> iov{};
  const size_t n = std::min(buffers.size(), kIovMax);
  for (size_t i = 0; i < n; ++i) {
    iov[i].iov_base = const_cast<void*>(buffers[i].data());  // sendmsg does not write it
    iov[i].iov_len = buffers[i].size();
  }
  msghdr message{};
  message.msg_iov = iov.data();
  message.msg_iovlen = n;
  const ssize_t written = ::sendmsg(fd_, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
  return written > 0 ? static_cast<size_t>(written) : 0;
}

void TcpStream::ShutdownSend() {
  std::error_code ignored;  // the peer may be gone already; the read side reports it
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

void TcpStream::Close() {
  std::error_code ignored;
  socket_.close(ignored);
}

TcpConnector::TcpConnector(asio::ip::tcp::endpoint remote, std::chrono::milliseconds timeout)
    : remote_(std::move(remote)), timeout_(timeout) {}

void TcpConnector::Open(asio::io_context& io, OpenCallback done) {
  done_ = std::move(done);
  socket_.emplace(io);
  timer_.emplace(io);
  timer_->expires_after(timeout_);
  timer_->async_wait([this](const std::error_code& error) {
    if (error) return;
    timed_out_ = true;
    std::error_code ignored;
    socket_->close(ignored);
  });
  socket_->async_connect(remote_, [this](const std::error_code& error) {
    timer_->cancel();
    const Endpoint remote = ToEndpoint(remote_);
    if (cancelled_) {
      Finish(Status::Aborted(fmt::format("connect to {} cancelled", remote.ToString())));
    } else if (timed_out_) {
      Finish(Status::Unavailable(
          fmt::format("connect to {} timed out after {} ms", remote.ToString(), timeout_.count())));
    } else if (error) {
      Finish(Status::Unavailable(
          fmt::format("connect to {} failed: {}", remote.ToString(), error.message())));
    } else {
      Finish(std::unique_ptr<Stream>(std::make_unique<TcpStream>(std::move(*socket_))));
    }
  });
}

void TcpConnector::Cancel() {
  if (!socket_ || !done_) return;
  cancelled_ = true;
  std::error_code ignored;
  socket_->close(ignored);
  timer_->cancel();
}

void TcpConnector::Finish(Result<std::unique_ptr<Stream>> result) {
  OpenCallback done = std::move(done_);
  done_ = nullptr;
  done(std::move(result));
}

AcceptedTcp::AcceptedTcp(asio::ip::tcp protocol, asio::ip::tcp::socket::native_handle_type fd)
    : protocol_(protocol), fd_(fd) {}

AcceptedTcp::~AcceptedTcp() {
  if (fd_ >= 0) ::close(fd_);
}

void AcceptedTcp::Open(asio::io_context& io, OpenCallback done) {
  asio::ip::tcp::socket socket(io);
  std::error_code error;
  socket.assign(protocol_, fd_, error);
  if (error) {
    done(Status::IoError("adopting an accepted connection failed: " + error.message()));
    return;  // fd_ stays ours and is closed by the destructor
  }
  fd_ = -1;
  done(std::unique_ptr<Stream>(std::make_unique<TcpStream>(std::move(socket))));
}

}  // namespace internal

Result<std::unique_ptr<Link>> Dial(const Endpoint& remote, LinkOptions options) {
  std::error_code error;
  const asio::ip::address address = asio::ip::make_address(remote.address, error);
  if (error) {
    return Status::InvalidArgument(fmt::format(
        "dial: '{}' is not a numeric IP address (resolve names before dialing)", remote.address));
  }
  if (remote.port == 0) return Status::InvalidArgument("dial: port 0");
  const asio::ip::tcp::endpoint target(address, remote.port);
  const std::chrono::milliseconds timeout = options.connect_timeout;
  std::unique_ptr<internal::StreamOpener> opener =
      std::make_unique<internal::TcpConnector>(target, timeout);
  if (options.tls) {
    opener = std::make_unique<internal::TlsOpener>(std::move(opener), options.tls,
                                                   internal::TlsRole::kClient, timeout);
  }
  return std::make_unique<Link>(std::move(options), internal::ToEndpoint(target),
                                std::move(opener));
}

}  // namespace strata::wire
