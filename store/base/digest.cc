#include "store/base/digest.h"

#include <blake2.h>

namespace strata {

std::string ToHex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(bytes.size() * 2, '0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xf];
  }
  return out;
}

namespace {
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

Status ParseHex(std::string_view text, std::span<uint8_t> out) {
  if (text.size() != out.size() * 2) {
    return Status::InvalidArgument("expected " + std::to_string(out.size() * 2) +
                                   " hex digits, got " + std::to_string(text.size()) + " in '" +
                                   std::string(text) + "'");
  }
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = HexValue(text[2 * i]);
    int lo = HexValue(text[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return Status::InvalidArgument("not a hex digit at position " +
                                     std::to_string(hi < 0 ? 2 * i : 2 * i + 1) + " of '" +
                                     std::string(text) + "'");
    }
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return Status::Ok();
}

struct Blake2b::State {
  blake2b_state s;
};

Blake2b::Blake2b(size_t out_bytes) : state_(std::make_unique<State>()), out_bytes_(out_bytes) {
  STRATA_ASSERT(out_bytes >= 1 && out_bytes <= BLAKE2B_OUTBYTES, "BLAKE2b output length");
  STRATA_ASSERT(blake2b_init(&state_->s, out_bytes) == 0, "blake2b_init");
}

Blake2b::~Blake2b() = default;

void Blake2b::Update(std::span<const uint8_t> bytes) {
  STRATA_ASSERT(blake2b_update(&state_->s, bytes.data(), bytes.size()) == 0, "blake2b_update");
}

void Blake2b::Final(std::span<uint8_t> out) {
  STRATA_ASSERT(out.size() == out_bytes_, "BLAKE2b output span size");
  STRATA_ASSERT(blake2b_final(&state_->s, out.data(), out.size()) == 0, "blake2b_final");
}

Digest128 Blake2b128(std::span<const uint8_t> bytes) {
  Digest128 d;
  Blake2b h(d.size());
  h.Update(bytes);
  h.Final(d);
  return d;
}

Digest256 Blake2b256(std::span<const uint8_t> bytes) {
  Digest256 d;
  Blake2b h(d.size());
  h.Update(bytes);
  h.Final(d);
  return d;
}

}  // namespace strata
