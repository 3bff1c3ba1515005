#include "coordinator/rendezvous/nonce.h"

#include <sys/random.h>

#include <cerrno>
#include <memory>

#include "store/base/splitmix.h"

namespace strata {

std::string NonceHex(const Nonce& nonce) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * kNonceBytes);
  for (uint8_t b : nonce.bytes) {
    hex.push_back(kDigits[b >> 4]);
    hex.push_back(kDigits[b & 0xf]);
  }
  return hex;
}

NonceSource OsNonceSource() {
  return []() -> Result<Nonce> {
    Nonce n;
    size_t filled = 0;
    // getrandom returns at most 256 bytes per call without blocking once the
    // pool is initialized; loop over EINTR and short reads.
    while (filled < n.bytes.size()) {
      const ssize_t got = getrandom(n.bytes.data() + filled, n.bytes.size() - filled, 0);
      if (got < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno(errno, "getrandom for a join nonce");
      }
      filled += static_cast<size_t>(got);
    }
    return n;
  };
}

NonceSource SeededNonceSource(uint64_t seed) {
  auto state = std::make_shared<uint64_t>(seed);
  return [state]() -> Result<Nonce> {
    Nonce n;
    for (size_t i = 0; i < n.bytes.size(); i += 8) {
      const uint64_t z = SplitMix64(*state);
      for (size_t j = 0; j < 8; ++j) n.bytes[i + j] = static_cast<uint8_t>(z >> (8 * j));
    }
    return n;
  };
}

}  // namespace strata
