// Optional mutual TLS for links: the files a rank presents and trusts, and
// the context built from them once and shared by every link and listener.
// A null context (the default in LinkOptions) means plaintext TCP.
//
// What TLS here guarantees: TLS 1.3 only; both sides present a certificate
// chaining to `ca_file` and each verifies the other's (a peer without one,
// or with one from another CA, or expired, fails the handshake). Host names
// and IP addresses in the certificate are not checked: every holder of a
// certificate from the cluster CA is a cluster member, and the rendezvous
// nonce and rank checks above the link decide which member a link belongs to.
#pragma once

#include <memory>
#include <string>

#include "store/base/status.h"

namespace strata::wire {

struct TlsConfig {
  std::string cert_file;  // PEM certificate chain this side presents
  std::string key_file;   // PEM private key of that certificate
  std::string ca_file;    // PEM CA certificate(s) a peer's chain must lead to
};

// Immutable once built; shared (std::shared_ptr<const TlsContext>) by any
// number of links and listeners on any threads.
class TlsContext {
 public:
  // Loads and checks the three files. Errors: kInvalidArgument naming the
  // file (and the key) that could not be read, parsed or matched.
  static Result<std::shared_ptr<const TlsContext>> Create(const TlsConfig& config);

  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  const TlsConfig& config() const;

  class Impl;  // wire-internal: holds the asio::ssl::context
  const Impl& impl() const { return *impl_; }

 private:
  explicit TlsContext(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::wire
