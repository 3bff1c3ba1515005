#include "wire/tls.h"

#include <fmt/format.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

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

std::optional<std::string> PrivateFileWarning(const std::string& path, std::string_view role) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  const mode_t exposed = st.st_mode & (S_IRWXG | S_IRWXO);
  if (exposed == 0) return std::nullopt;
  return fmt::format("{} '{}' has mode {:04o}: its group or others can access it (chmod 600 it)",
                     role, path, st.st_mode & 07777);
}

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
  std::vector<std::string> warnings;
  if (std::optional<std::string> w = PrivateFileWarning(config.key_file, "tls: private key")) {
    spdlog::warn("{}", *w);
    warnings.push_back(std::move(*w));
  }
  auto impl = std::make_unique<Impl>(config, std::move(context));
  return std::shared_ptr<const TlsContext>(new TlsContext(std::move(impl), std::move(warnings)));
}

TlsContext::TlsContext(std::unique_ptr<Impl> impl, std::vector<std::string> warnings)
    : impl_(std::move(impl)), warnings_(std::move(warnings)) {}
TlsContext::~TlsContext() = default;
const TlsConfig& TlsContext::config() const { return impl_->config(); }
const std::vector<std::string>& TlsContext::warnings() const { return warnings_; }

}  // namespace strata::wire
