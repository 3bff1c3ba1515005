// A throwaway CA and one certificate it signs, written as PEM files, for
// in-process TLS trials (`strata bench links --tls`). Uses the OpenSSL C API
// so nothing depends on the openssl command; launch/make-certs.sh is the
// command-line equivalent for a local cluster. Never for a deployment.
#pragma once

#include <string>

#include "store/base/status.h"
#include "wire/tls.h"

namespace strata {

// Writes dir/ca.crt, dir/ca.key, dir/rank.crt, dir/rank.key (P-256, valid
// for a day, the leaf usable as TLS client and server, SAN 127.0.0.1 and
// localhost). Errors: kIoError naming the file or step that failed.
Result<wire::TlsConfig> MakeThrowawayCerts(const std::string& dir);

}  // namespace strata
