// Internal to wire/: the TCP implementations of Stream and StreamOpener.
// Includes Asio: never include this from a public header.
#pragma once

#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <optional>

#include "wire/stream.h"

namespace strata::wire::internal {

// Canonical text form; an IPv4-mapped IPv6 address becomes plain IPv4.
Endpoint ToEndpoint(const asio::ip::tcp::endpoint& endpoint);

// A connected TCP socket with TCP_NODELAY set.
class TcpStream final : public Stream {
 public:
  explicit TcpStream(asio::ip::tcp::socket socket);
  void AsyncReadExactly(std::span<std::byte> buffer, IoCallback done) override;
  void AsyncReadSome(std::span<std::byte> buffer, IoCallback done) override;
  void AsyncWriteAll(std::vector<asio::const_buffer> buffers, IoCallback done) override;
  // One non-blocking sendmsg on the descriptor (MSG_DONTWAIT | MSG_NOSIGNAL).
  size_t TryWriteNow(std::span<const asio::const_buffer> buffers) override;
  void ShutdownSend() override;
  void Close() override;
  Endpoint local_endpoint() const override { return local_; }
  // Hands the connected socket to a wrapping stream (TLS); this one is spent.
  asio::ip::tcp::socket TakeSocket() && { return std::move(socket_); }

 private:
  asio::ip::tcp::socket socket_;
  // The descriptor, read once here: TryWriteNow runs off the I/O thread and
  // must not touch the Asio socket object.
  const asio::ip::tcp::socket::native_handle_type fd_;
  Endpoint local_;
};

// Connects to `remote` within `timeout`.
class TcpConnector final : public StreamOpener {
 public:
  TcpConnector(asio::ip::tcp::endpoint remote, std::chrono::milliseconds timeout);
  void Open(asio::io_context& io, OpenCallback done) override;
  void Cancel() override;

 private:
  void Finish(Result<std::unique_ptr<Stream>> result);

  const asio::ip::tcp::endpoint remote_;
  const std::chrono::milliseconds timeout_;
  std::optional<asio::ip::tcp::socket> socket_;
  std::optional<asio::steady_timer> timer_;
  OpenCallback done_;
  bool timed_out_ = false;
  bool cancelled_ = false;
};

// Takes over a socket accepted on another io_context (by its descriptor).
class AcceptedTcp final : public StreamOpener {
 public:
  AcceptedTcp(asio::ip::tcp protocol, asio::ip::tcp::socket::native_handle_type fd);
  ~AcceptedTcp() override;
  AcceptedTcp(const AcceptedTcp&) = delete;
  AcceptedTcp& operator=(const AcceptedTcp&) = delete;
  void Open(asio::io_context& io, OpenCallback done) override;
  void Cancel() override {}

 private:
  asio::ip::tcp protocol_;
  asio::ip::tcp::socket::native_handle_type fd_;
};

}  // namespace strata::wire::internal
