#include "wire/tls_stream.h"

#include <fmt/format.h>

#include <asio/read.hpp>
#include <asio/ssl/error.hpp>
#include <asio/write.hpp>

#include "wire/tcp_stream.h"

namespace strata::wire::internal {

TlsStream::TlsStream(std::unique_ptr<asio::ssl::stream<asio::ip::tcp::socket>> stream)
    : stream_(std::move(stream)) {
  std::error_code ignored;
  const asio::ip::tcp::endpoint local = stream_->lowest_layer().local_endpoint(ignored);
  if (!ignored) local_ = ToEndpoint(local);
}

namespace {
// The peer's TCP end without close_notify (see tls_stream.h) reads as EOF.
IoCallback TruncationIsEof(IoCallback done) {
  return [done = std::move(done)](const std::error_code& error, size_t bytes) {
    done(error == asio::ssl::error::stream_truncated ? asio::error::eof : error, bytes);
  };
}
}  // namespace

void TlsStream::AsyncReadExactly(std::span<std::byte> buffer, IoCallback done) {
  asio::async_read(*stream_, asio::buffer(buffer.data(), buffer.size()),
                   TruncationIsEof(std::move(done)));
}

void TlsStream::AsyncReadSome(std::span<std::byte> buffer, IoCallback done) {
  stream_->async_read_some(asio::buffer(buffer.data(), buffer.size()),
                           TruncationIsEof(std::move(done)));
}

void TlsStream::AsyncWriteAll(std::vector<asio::const_buffer> buffers, IoCallback done) {
  asio::async_write(*stream_, buffers, std::move(done));
}

void TlsStream::ShutdownSend() {
  std::error_code ignored;  // the peer may be gone already; the read side reports it
  stream_->lowest_layer().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

void TlsStream::Close() {
  std::error_code ignored;
  stream_->lowest_layer().close(ignored);
}

TlsOpener::TlsOpener(std::unique_ptr<StreamOpener> tcp, std::shared_ptr<const TlsContext> tls,
                     TlsRole role, std::chrono::milliseconds handshake_timeout)
    : tcp_(std::move(tcp)),
      tls_(std::move(tls)),
      role_(role),
      handshake_timeout_(handshake_timeout) {}

void TlsOpener::Open(asio::io_context& io, OpenCallback done) {
  done_ = std::move(done);
  tcp_->Open(io, [this, &io](Result<std::unique_ptr<Stream>> opened) {
    OnTcpOpened(io, std::move(opened));
  });
}

void TlsOpener::OnTcpOpened(asio::io_context& io, Result<std::unique_ptr<Stream>> opened) {
  if (!opened.ok()) {
    Finish(opened.status());
    return;
  }
  auto* tcp = dynamic_cast<TcpStream*>(opened->get());
  STRATA_ASSERT(tcp != nullptr, "TlsOpener over an opener that is not TCP");
  if (cancelled_) {
    (*opened)->Close();
    Finish(Status::Aborted("TLS handshake cancelled"));
    return;
  }
  stream_ = std::make_unique<asio::ssl::stream<asio::ip::tcp::socket>>(std::move(*tcp).TakeSocket(),
                                                                       tls_->impl().context());
  timer_.emplace(io);
  timer_->expires_after(handshake_timeout_);
  timer_->async_wait([this](const std::error_code& error) {
    if (error) return;
    timed_out_ = true;
    std::error_code ignored;
    stream_->lowest_layer().close(ignored);
  });
  const auto type =
      role_ == TlsRole::kClient ? asio::ssl::stream_base::client : asio::ssl::stream_base::server;
  stream_->async_handshake(type, [this](const std::error_code& error) { OnHandshake(error); });
}

void TlsOpener::OnHandshake(const std::error_code& error) {
  timer_->cancel();
  if (cancelled_) {
    Finish(Status::Aborted("TLS handshake cancelled"));
    return;
  }
  if (timed_out_ || error) {
    handshake_failed_ = true;
    std::string why;
    if (timed_out_) {
      why = fmt::format("no TLS handshake within {} ms", handshake_timeout_.count());
    } else {
      why = DescribeHandshakeFailure(stream_->native_handle(), error);
    }
    std::error_code ignored;
    stream_->lowest_layer().close(ignored);
    Finish(Status::Unavailable(why));
    return;
  }
  Finish(std::unique_ptr<Stream>(std::make_unique<TlsStream>(std::move(stream_))));
}

void TlsOpener::Cancel() {
  if (!done_) return;
  cancelled_ = true;
  if (stream_) {
    std::error_code ignored;
    stream_->lowest_layer().close(ignored);
    if (timer_) timer_->cancel();
  } else {
    tcp_->Cancel();
  }
}

void TlsOpener::Finish(Result<std::unique_ptr<Stream>> result) {
  OpenCallback done = std::move(done_);
  done_ = nullptr;
  done(std::move(result));
}

}  // namespace strata::wire::internal
