// Join nonces: 128 random bits rank zero issues to each peer through the
// rendezvous; the peer presents it on its record link. Randomness is injected
// (NonceSource) so tests are deterministic.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include "store/base/status.h"

namespace strata {

inline constexpr size_t kNonceBytes = 16;

struct Nonce {
  std::array<uint8_t, kNonceBytes> bytes{};
  friend bool operator==(const Nonce&, const Nonce&) = default;
};

// Lower-case hex, 32 characters.
std::string NonceHex(const Nonce& nonce);

// Draws one nonce. Called from the thread that runs the rendezvous only.
using NonceSource = std::function<Result<Nonce>()>;

// The OS's random bytes (getrandom(2)); fails with kIoError when the kernel
// refuses.
NonceSource OsNonceSource();

// A deterministic sequence from `seed`: a test double, never for real joins.
NonceSource SeededNonceSource(uint64_t seed);

}  // namespace strata
