#include "wire/tls.h"

#include <fmt/format.h>
#include <openssl/ssl.h>

#include <cstdio>
#include <fstream>

#include "wire/tls_asio.h"

namespace strata::wire {

namespace {

Status FileError(std::string_view role, const std::string& path, std::string_view why) {
  return Status::InvalidArgument(fmt::format("tls: {} '{}': {}", role, path, why));
}

// Names a missing or unreadable file before OpenSSL's less direct message.
Status CheckReadable(std::string_view role, const std::string& path) {
  if (path.empty()) return FileError(role, path, "no file given");
  std::ifstream file(path);
  if (!file) return FileError(role, path, "cannot open the file");
  return Status::Ok();
}

}  // namespace

Result<std::shared_ptr<const TlsContext>> TlsContext::Create(const TlsConfig& config) {
  STRATA_RETURN_IF_ERROR(CheckReadable("certificate", config.cert_file));
  STRATA_RETURN_IF_ERROR(CheckReadable("private key", config.key_file));
  STRATA_RETURN_IF_ERROR(CheckReadable("CA certificate", config.ca_file));

  asio::ssl::context context(asio::ssl::context::tls);
  SSL_CTX* ctx = context.native_handle();
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
      SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) != 1) {
    return Status::Internal("tls: this OpenSSL cannot restrict connections to TLS 1.3");
  }
  SSL_CTX_set_num_tickets(ctx, 0);  // links never resume sessions
  std::error_code error;
  if (context.use_certificate_chain_file(config.cert_file, error)) {
    return FileError("certificate", config.cert_file,
                     "not a PEM certificate chain: " + error.message());
  }
  if (context.use_private_key_file(config.key_file, asio::ssl::context::pem, error)) {
    return FileError(
        "private key", config.key_file,
        fmt::format("not a PEM private key, or not the key of the certificate '{}': {}",
                    config.cert_file, error.message()));
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return FileError("private key", config.key_file,
                     fmt::format("not the key of the certificate '{}'", config.cert_file));
  }
  if (context.load_verify_file(config.ca_file, error)) {
    return FileError("CA certificate", config.ca_file, "not a PEM certificate: " + error.message());
  }
  context.set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert, error);
  if (error) return Status::Internal("tls: cannot require peer certificates: " + error.message());
  auto impl = std::make_unique<Impl>(config, std::move(context));
  return std::shared_ptr<const TlsContext>(new TlsContext(std::move(impl)));
}

TlsContext::TlsContext(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TlsContext::~TlsContext() = default;
const TlsConfig& TlsContext::config() const { return impl_->config(); }

}  // namespace strata::wire
