#include "launch/runtime/service_guard.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <array>

#include "store/base/assert.h"

namespace strata {

std::string RuntimeServiceToken(const JobSecret& secret) {
  std::array<uint8_t, EVP_MAX_MD_SIZE> mac{};
  unsigned int mac_bytes = 0;
  const std::span<const uint8_t> key = secret.bytes();
  const uint8_t* out = HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
                            reinterpret_cast<const uint8_t*>(kRuntimeServiceTokenLabel.data()),
                            kRuntimeServiceTokenLabel.size(), mac.data(), &mac_bytes);
  STRATA_ASSERT(out != nullptr && mac_bytes == 32, "HMAC-SHA256 failed");
  constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  token.reserve(2 * mac_bytes);
  for (unsigned int i = 0; i < mac_bytes; ++i) {
    token.push_back(kHex[mac[i] >> 4]);
    token.push_back(kHex[mac[i] & 0xf]);
  }
  return token;
}

ServiceAdmission AdmitRequest(std::string_view authorization, std::string_view token) {
  if (!authorization.starts_with(kRuntimeServiceAuthScheme)) return ServiceAdmission::kNoToken;
  const std::string_view presented = authorization.substr(kRuntimeServiceAuthScheme.size());
  // The length is no secret (every token is 64 hex characters).
  if (presented.size() != token.size()) return ServiceAdmission::kWrongToken;
  return CRYPTO_memcmp(presented.data(), token.data(), token.size()) == 0
             ? ServiceAdmission::kAdmit
             : ServiceAdmission::kWrongToken;
}

uint64_t RuntimeServiceBodyMax(const RankGeometry& geometry) {
  uint64_t most = geometry.row.unit_bytes;
  for (const PlaneSpec& p : geometry.page_planes) most = std::max(most, p.unit_bytes);
  return most;
}

}  // namespace strata
