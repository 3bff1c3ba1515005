// Throwaway certificates for the TLS tests, made with the OpenSSL C API in a
// scratch directory: a CA, and leaf certificates it signs, valid now or
// already expired (the openssl command line cannot back-date one).
#pragma once

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cstdio>
#include <memory>
#include <string>

#include "wire/tls.h"

namespace strata::testing {

struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct X509Free {
  void operator()(X509* c) const { X509_free(c); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Cert = std::unique_ptr<X509, X509Free>;

// One issued certificate with its key, and the files they were written to.
struct Issued {
  Pkey key;
  Cert cert;
  std::string cert_file;
  std::string key_file;
};

inline void AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  ASSERT_NE(ext, nullptr) << "extension " << value;
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

inline void WritePem(const Issued& issued) {
  FILE* f = std::fopen(issued.cert_file.c_str(), "w");
  ASSERT_NE(f, nullptr) << issued.cert_file;
  PEM_write_X509(f, issued.cert.get());
  std::fclose(f);
  f = std::fopen(issued.key_file.c_str(), "w");
  ASSERT_NE(f, nullptr) << issued.key_file;
  PEM_write_PrivateKey(f, issued.key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
  ASSERT_EQ(chmod(issued.key_file.c_str(), 0600), 0) << issued.key_file;  // as a key should be
}

// Issues `name` into dir/name.{crt,key}, signed by `ca` (self-signed CA when
// null), valid from now + not_before_s to now + not_after_s (seconds).
inline Issued Issue(const std::string& dir, const std::string& name, const Issued* ca,
                    long not_before_s = -3600, long not_after_s = 86400) {
  Issued out;
  out.key.reset(EVP_EC_gen("P-256"));
  out.cert.reset(X509_new());
  X509* cert = out.cert.get();
  X509_set_version(cert, 2);
  static long serial = 1;
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert), not_before_s);
  X509_gmtime_adj(X509_getm_notAfter(cert), not_after_s);
  X509_set_pubkey(cert, out.key.get());
  X509_NAME* subject = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0);
  X509* issuer = ca != nullptr ? ca->cert.get() : cert;
  X509_set_issuer_name(cert, X509_get_subject_name(issuer));
  if (ca == nullptr) {
    AddExtension(cert, issuer, NID_basic_constraints, "critical,CA:TRUE");
    AddExtension(cert, issuer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    AddExtension(cert, issuer, NID_basic_constraints, "critical,CA:FALSE");
    AddExtension(cert, issuer, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
    AddExtension(cert, issuer, NID_ext_key_usage, "serverAuth,clientAuth");
  }
  EVP_PKEY* signer = ca != nullptr ? ca->key.get() : out.key.get();
  EXPECT_GT(X509_sign(cert, signer, EVP_sha256()), 0) << "signing " << name;
  out.cert_file = dir + "/" + name + ".crt";
  out.key_file = dir + "/" + name + ".key";
  WritePem(out);
  return out;
}

inline wire::TlsConfig ConfigOf(const Issued& leaf, const Issued& ca) {
  return {leaf.cert_file, leaf.key_file, ca.cert_file};
}

inline std::shared_ptr<const wire::TlsContext> ContextOf(const Issued& leaf, const Issued& ca) {
  Result<std::shared_ptr<const wire::TlsContext>> made =
      wire::TlsContext::Create(ConfigOf(leaf, ca));
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return made.ok() ? *made : nullptr;
}

}  // namespace strata::testing
