// The Asio side of a TlsContext, for Strata code that runs its own Asio
// sockets over TLS (wire/tls_stream.cc, launch/tcp_rendezvous.cc). Includes
// Asio and OpenSSL: never include this from a public header.
#pragma once

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <asio/ssl/context.hpp>
#include <string>
#include <system_error>

#include "wire/tls.h"

namespace strata::wire {

class TlsContext::Impl {
 public:
  Impl(TlsConfig config, asio::ssl::context context)
      : config_(std::move(config)), context_(std::move(context)) {}
  const TlsConfig& config() const { return config_; }
  // OpenSSL's SSL_CTX is safe to share across threads once configured; Asio
  // wants a non-const reference to build a stream from it.
  asio::ssl::context& context() const { return context_; }

 private:
  TlsConfig config_;
  mutable asio::ssl::context context_;
};

// Why a handshake on `ssl` failed with `error`, naming the peer
// certificate's verification failure when there was one.
inline std::string DescribeHandshakeFailure(SSL* ssl, const std::error_code& error) {
  std::string why = "TLS handshake failed: " + error.message();
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) {
    why += std::string(" (peer certificate: ") + X509_verify_cert_error_string(verify) + ")";
  }
  return why;
}

}  // namespace strata::wire
