// Fixed-size digests, their hex forms, and BLAKE2b (libb2) over byte spans.
// BLAKE2b is for keys and fingerprints only; it never touches the byte path.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "store/base/status.h"

namespace strata {

using Digest128 = std::array<uint8_t, 16>;
using Digest256 = std::array<uint8_t, 32>;

// Lowercase hex, two characters per byte.
std::string ToHex(std::span<const uint8_t> bytes);
// Parses exactly 2*out.size() lowercase or uppercase hex digits into `out`.
Status ParseHex(std::string_view text, std::span<uint8_t> out);

// Incremental BLAKE2b with an output length of 1..64 bytes.
class Blake2b {
 public:
  explicit Blake2b(size_t out_bytes);
  ~Blake2b();
  Blake2b(const Blake2b&) = delete;
  Blake2b& operator=(const Blake2b&) = delete;

  void Update(std::span<const uint8_t> bytes);
  // Writes out.size() (== out_bytes) bytes. The hasher is spent afterwards.
  void Final(std::span<uint8_t> out);

 private:
  struct State;
  std::unique_ptr<State> state_;
  size_t out_bytes_;
};

Digest128 Blake2b128(std::span<const uint8_t> bytes);
Digest256 Blake2b256(std::span<const uint8_t> bytes);

}  // namespace strata
