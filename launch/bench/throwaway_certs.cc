#include "launch/bench/throwaway_certs.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstdio>
#include <memory>

namespace strata {

namespace {

constexpr long kValidSeconds = 24 * 3600;

struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct X509Free {
  void operator()(X509* c) const { X509_free(c); }
};
struct FileClose {
  void operator()(FILE* f) const { std::fclose(f); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Cert = std::unique_ptr<X509, X509Free>;

Status AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) return Status::Internal(std::string("certificate extension ") + value);
  const int added = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  return added == 1 ? Status::Ok() : Status::Internal(std::string("adding extension ") + value);
}

// A certificate for `key` named `name`, signed by issuer (self-signed when
// issuer_cert is null).
Result<Cert> Sign(EVP_PKEY* key, const char* name, X509* issuer_cert, EVP_PKEY* issuer_key,
                  long serial) {
  Cert cert(X509_new());
  if (!cert) return Status::Internal("X509_new failed");
  X509* c = cert.get();
  X509_set_version(c, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(c), serial);
  X509_gmtime_adj(X509_getm_notBefore(c), -60);
  X509_gmtime_adj(X509_getm_notAfter(c), kValidSeconds);
  X509_set_pubkey(c, key);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(c), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(name), -1, -1, 0);
  X509* issuer = issuer_cert != nullptr ? issuer_cert : c;
  X509_set_issuer_name(c, X509_get_subject_name(issuer));
  if (issuer_cert == nullptr) {
    STRATA_RETURN_IF_ERROR(AddExtension(c, issuer, NID_basic_constraints, "critical,CA:TRUE"));
    STRATA_RETURN_IF_ERROR(AddExtension(c, issuer, NID_key_usage, "critical,keyCertSign,cRLSign"));
  } else {
    STRATA_RETURN_IF_ERROR(AddExtension(c, issuer, NID_basic_constraints, "critical,CA:FALSE"));
    STRATA_RETURN_IF_ERROR(
        AddExtension(c, issuer, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost"));
    STRATA_RETURN_IF_ERROR(AddExtension(c, issuer, NID_ext_key_usage, "serverAuth,clientAuth"));
  }
  if (X509_sign(c, issuer_cert != nullptr ? issuer_key : key, EVP_sha256()) <= 0) {
    return Status::Internal(std::string("signing the certificate of ") + name);
  }
  return cert;
}

Status WritePem(const std::string& path, X509* cert, EVP_PKEY* key) {
  std::unique_ptr<FILE, FileClose> f(std::fopen(path.c_str(), "w"));
  if (!f) return Status::FromErrno(errno, "creating " + path);
  const int written =
      cert != nullptr ? PEM_write_X509(f.get(), cert)
                      : PEM_write_PrivateKey(f.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  if (written != 1) return Status::IoError("writing " + path);
  return Status::Ok();
}

}  // namespace

Result<wire::TlsConfig> MakeThrowawayCerts(const std::string& dir) {
  Pkey ca_key(EVP_EC_gen("P-256"));
  Pkey leaf_key(EVP_EC_gen("P-256"));
  if (!ca_key || !leaf_key) return Status::Internal("generating a P-256 key failed");
  STRATA_ASSIGN_OR_RETURN(Cert ca, Sign(ca_key.get(), "strata throwaway CA", nullptr, nullptr, 1));
  STRATA_ASSIGN_OR_RETURN(Cert leaf,
                          Sign(leaf_key.get(), "strata rank", ca.get(), ca_key.get(), 2));
  wire::TlsConfig config{dir + "/rank.crt", dir + "/rank.key", dir + "/ca.crt"};
  STRATA_RETURN_IF_ERROR(WritePem(config.ca_file, ca.get(), nullptr));
  STRATA_RETURN_IF_ERROR(WritePem(dir + "/ca.key", nullptr, ca_key.get()));
  STRATA_RETURN_IF_ERROR(WritePem(config.cert_file, leaf.get(), nullptr));
  STRATA_RETURN_IF_ERROR(WritePem(config.key_file, nullptr, leaf_key.get()));
  return config;
}

}  // namespace strata
