#include "launch/runtime/job_token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>

#include "store/base/assert.h"

namespace strata {

std::string JobToken(const JobSecret& secret, std::string_view label) {
  std::array<uint8_t, EVP_MAX_MD_SIZE> mac{};
  unsigned int mac_bytes = 0;
  const std::span<const uint8_t> key = secret.bytes();
  const uint8_t* out =
      HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const uint8_t*>(label.data()), label.size(), mac.data(), &mac_bytes);
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

bool TokenMatches(std::string_view presented, std::string_view token) {
  // The length is no secret (every token is 64 hex characters).
  return presented.size() == token.size() &&
         CRYPTO_memcmp(presented.data(), token.data(), token.size()) == 0;
}

}  // namespace strata
