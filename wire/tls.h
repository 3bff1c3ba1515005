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
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
  // What Create found worth telling the operator but not worth refusing (a
  // private key file readable by its group or others); Create also logs each.
  const std::vector<std::string>& warnings() const;

  class Impl;  // wire-internal: holds the asio::ssl::context
  const Impl& impl() const { return *impl_; }

 private:
  TlsContext(std::unique_ptr<Impl> impl, std::vector<std::string> warnings);
  std::unique_ptr<Impl> impl_;
  std::vector<std::string> warnings_;
};

// For a file that must stay private (`role`: "private key", "job secret"):
// a warning naming the file and its mode when its group or others have any
// access to it; nullopt when they have none, or when it cannot be stat'ed (the read that
// follows reports that).
std::optional<std::string> PrivateFileWarning(const std::string& path, std::string_view role);

}  // namespace strata::wire
