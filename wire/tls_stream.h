// Internal to wire/: the TLS implementations of Stream and StreamOpener.
// Includes Asio and OpenSSL: never include this from a public header.
//
// Ending the stream: ShutdownSend() ends the TCP sending direction without a
// TLS close_notify, and a read reports the peer's TCP end (Asio's
// stream_truncated) as asio::error::eof. Asio cannot send close_notify while
// a read is outstanding (its shutdown also reads), and a link always reads. The
// framing still catches an end inside a frame (kIoError), and the job
// protocol acknowledges every record, so a forged end between frames can
// close a link early but never make a record look committed.
#pragma once

#include <asio/ip/tcp.hpp>
#include <asio/ssl/context.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <optional>

#include "wire/stream.h"
#include "wire/tls.h"
#include "wire/tls_asio.h"

namespace strata::wire {

namespace internal {

class TlsStream final : public Stream {
 public:
  // `stream` has completed its handshake.
  explicit TlsStream(std::unique_ptr<asio::ssl::stream<asio::ip::tcp::socket>> stream);
  void AsyncReadExactly(std::span<std::byte> buffer, IoCallback done) override;
  void AsyncReadSome(std::span<std::byte> buffer, IoCallback done) override;
  void AsyncWriteAll(std::vector<asio::const_buffer> buffers, IoCallback done) override;
  // Always 0: TLS records are built and written on the link's I/O thread.
  size_t TryWriteNow(std::span<const asio::const_buffer>) override { return 0; }
  void ShutdownSend() override;
  void Close() override;
  Endpoint local_endpoint() const override { return local_; }

 private:
  std::unique_ptr<asio::ssl::stream<asio::ip::tcp::socket>> stream_;
  Endpoint local_;
};

enum class TlsRole : uint8_t { kClient, kServer };

// Opens the TCP stream with `tcp` (which must produce a TcpStream), then runs
// the TLS handshake as `role` within `handshake_timeout`. A handshake that
// fails or times out reports HandshakeFailed() and an error naming why.
class TlsOpener final : public StreamOpener {
 public:
  TlsOpener(std::unique_ptr<StreamOpener> tcp, std::shared_ptr<const TlsContext> tls, TlsRole role,
            std::chrono::milliseconds handshake_timeout);
  void Open(asio::io_context& io, OpenCallback done) override;
  void Cancel() override;
  bool HandshakeFailed() const override { return handshake_failed_; }

 private:
  void OnTcpOpened(asio::io_context& io, Result<std::unique_ptr<Stream>> opened);
  void OnHandshake(const std::error_code& error);
  void Finish(Result<std::unique_ptr<Stream>> result);

  std::unique_ptr<StreamOpener> tcp_;
  const std::shared_ptr<const TlsContext> tls_;
  const TlsRole role_;
  const std::chrono::milliseconds handshake_timeout_;
  std::unique_ptr<asio::ssl::stream<asio::ip::tcp::socket>> stream_;
  std::optional<asio::steady_timer> timer_;
  OpenCallback done_;
  bool timed_out_ = false;
  bool cancelled_ = false;
  bool handshake_failed_ = false;
};

}  // namespace internal
}  // namespace strata::wire
