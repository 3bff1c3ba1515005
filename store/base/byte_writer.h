// Little-endian encoding into a growing byte vector: the canonical encodings
// behind fingerprints and identities (docs/formats.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

namespace strata {

class ByteWriter {
 public:
  void U8(uint8_t v) { bytes_.push_back(v); }
  void U32(uint32_t v) { Le(v, 4); }
  void U64(uint64_t v) { Le(v, 8); }
  void Bytes(std::span<const uint8_t> b) { Append(b.data(), b.size()); }
  // A u32 byte length, then the bytes (no terminator).
  void String(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    Append(s.data(), s.size());
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  void Le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  // resize + memcpy rather than vector::insert, which trips a g++ 12
  // -Wstringop-overflow false positive.
  void Append(const void* p, size_t n) {
    if (n == 0) return;
    size_t at = bytes_.size();
    bytes_.resize(at + n);
    std::memcpy(bytes_.data() + at, p, n);
  }
  std::vector<uint8_t> bytes_;
};

}  // namespace strata
