#include "wire/tls_session.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>

#include <string>
#include <system_error>

#include "wire/tls_asio.h"

namespace strata::wire {
namespace {

// The OpenSSL error queue's first entry, or `fallback`.
std::string TakeSslError(const char* fallback) {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return fallback;
  char text[256];
  ERR_error_string_n(e, text, sizeof text);
  return text;
}

// OpenSSL's socket writes are plain write()s, without MSG_NOSIGNAL: a write
// to a peer that reset the connection would raise SIGPIPE and end the
// process. Every other socket write here passes MSG_NOSIGNAL, so ignoring
// the signal changes nothing else; a handler the embedder installed stays.
void IgnoreSigpipeUnlessHandled() {
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    (void)::signal(SIGPIPE, SIG_IGN);
  }
}

}  // namespace

struct TlsSession::Ssl {
  explicit Ssl(SSL* s) : ssl(s) {}
  ~Ssl() { SSL_free(ssl); }
  SSL* ssl;
};

Result<std::unique_ptr<TlsSession>> TlsSession::Start(std::shared_ptr<const TlsContext> context,
                                                      int socket, TlsSide side,
                                                      std::chrono::milliseconds write_bound) {
  IgnoreSigpipeUnlessHandled();
  SSL* raw = SSL_new(context->impl().context().native_handle());
  if (raw == nullptr) return Status::Internal("tls: " + TakeSslError("SSL_new failed"));
  auto ssl = std::make_unique<Ssl>(raw);
  if (SSL_set_fd(raw, socket) != 1) {
    return Status::Internal("tls: " + TakeSslError("SSL_set_fd failed"));
  }
  if (side == TlsSide::kClient) {
    SSL_set_connect_state(raw);
  } else {
    SSL_set_accept_state(raw);
  }
  return std::unique_ptr<TlsSession>(
      new TlsSession(std::move(context), std::move(ssl), socket, write_bound));
}

TlsSession::TlsSession(std::shared_ptr<const TlsContext> context, std::unique_ptr<Ssl> ssl,
                       int socket, std::chrono::milliseconds write_bound)
    : context_(std::move(context)),
      ssl_(std::move(ssl)),
      socket_(socket),
      write_bound_(write_bound) {}

TlsSession::~TlsSession() = default;

Result<bool> TlsSession::Handshake() {
  if (done_) return true;
  ERR_clear_error();
  const int rc = SSL_do_handshake(ssl_->ssl);
  if (rc == 1) {
    done_ = true;
    return true;
  }
  const int error = SSL_get_error(ssl_->ssl, rc);
  if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) return false;
  const std::string why = error == SSL_ERROR_SYSCALL || error == SSL_ERROR_ZERO_RETURN
                              ? std::string("the peer closed the connection")
                              : TakeSslError("handshake error");
  return Status::Unavailable(
      DescribeHandshakeFailure(ssl_->ssl, std::make_error_code(std::errc::protocol_error)) + ": " +
      why);
}

Status TlsSession::HandshakeWithin(std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (true) {
    STRATA_ASSIGN_OR_RETURN(const bool done, Handshake());
    if (done) return Status::Ok();
    STRATA_RETURN_IF_ERROR(WaitFor(SSL_want_write(ssl_->ssl) == 0, deadline));
  }
}

Result<size_t> TlsSession::Read(std::span<std::byte> buffer) {
  if (buffer.empty()) return size_t{0};
  ERR_clear_error();
  size_t n = 0;
  const int rc = SSL_read_ex(ssl_->ssl, buffer.data(), buffer.size(), &n);
  if (rc == 1) return n;
  const int error = SSL_get_error(ssl_->ssl, rc);
  if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) return size_t{0};
  if (error == SSL_ERROR_ZERO_RETURN || error == SSL_ERROR_SYSCALL) {
    return Status::Unavailable("the peer closed the connection");
  }
  return Status::Unavailable("tls read: " + TakeSslError("stream error"));
}

Status TlsSession::Write(std::span<const std::byte> bytes) {
  const auto deadline = std::chrono::steady_clock::now() + write_bound_;
  while (!bytes.empty()) {
    ERR_clear_error();
    size_t n = 0;
    const int rc = SSL_write_ex(ssl_->ssl, bytes.data(), bytes.size(), &n);
    if (rc == 1) {
      bytes = bytes.subspan(n);
      continue;
    }
    const int error = SSL_get_error(ssl_->ssl, rc);
    if (error == SSL_ERROR_WANT_WRITE || error == SSL_ERROR_WANT_READ) {
      STRATA_RETURN_IF_ERROR(WaitFor(error == SSL_ERROR_WANT_READ, deadline));
      continue;
    }
    return Status::Unavailable("tls write: " + TakeSslError("the peer is gone"));
  }
  return Status::Ok();
}

bool TlsSession::WantsWrite() const { return SSL_want_write(ssl_->ssl) != 0; }

bool TlsSession::HasBuffered() const { return SSL_pending(ssl_->ssl) > 0; }

Status TlsSession::WaitFor(bool read, std::chrono::steady_clock::time_point deadline) const {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0)
    return Status::Unavailable("tls: the peer did not answer within the bound");
  pollfd p{socket_, static_cast<short>(read ? POLLIN : POLLOUT), 0};
  (void)::poll(&p, 1, static_cast<int>(left.count()) + 1);
  return Status::Ok();
}

}  // namespace strata::wire
