#include "coordinator/rendezvous/rendezvous_protocol.h"

#include <cstring>

#include "store/base/byte_writer.h"

namespace strata {

namespace {

// Reads little-endian fields from a payload; every read is bounds-checked.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  bool U32(uint32_t* v) {
    if (bytes_.size() - at_ < 4) return false;
    *v = 0;
    for (size_t i = 0; i < 4; ++i) *v |= static_cast<uint32_t>(bytes_[at_ + i]) << (8 * i);
    at_ += 4;
    return true;
  }
  bool Bytes(std::span<uint8_t> out) {
    if (bytes_.size() - at_ < out.size()) return false;
    std::memcpy(out.data(), bytes_.data() + at_, out.size());
    at_ += out.size();
    return true;
  }
  bool String(size_t max, std::string* s) {
    uint32_t n = 0;
    if (!U32(&n) || n > max || bytes_.size() - at_ < n) return false;
    s->assign(reinterpret_cast<const char*>(bytes_.data() + at_), n);
    at_ += n;
    return true;
  }
  bool AtEnd() const { return at_ == bytes_.size(); }

 private:
  std::span<const uint8_t> bytes_;
  size_t at_ = 0;
};

Status Bad(const std::string& what) { return Status::Corruption("rendezvous message: " + what); }

void Header(ByteWriter* w, RendezvousMessageType type) {
  w->Bytes(kRendezvousMagic);
  w->U32(kRendezvousVersion);
  w->U32(static_cast<uint32_t>(type));
}

}  // namespace

std::vector<uint8_t> EncodeRendezvousFrame(const RendezvousMessage& message) {
  ByteWriter w;
  if (const auto* hello = std::get_if<RendezvousHello>(&message)) {
    Header(&w, RendezvousMessageType::kHello);
    w.U32(hello->rank.value);
    w.U32(hello->world_size);
    w.Bytes(hello->proof);
  } else if (const auto* ticket = std::get_if<JoinTicket>(&message)) {
    STRATA_ASSERT(
        !ticket->record_host.empty() && ticket->record_host.size() <= kRendezvousHostBytesMax,
        "ticket host of " + std::to_string(ticket->record_host.size()) + " bytes");
    Header(&w, RendezvousMessageType::kTicket);
    w.U32(ticket->world_size);
    w.U32(ticket->record_port);
    w.Bytes(ticket->nonce.bytes);
    w.String(ticket->record_host);
  } else if (const auto* challenge = std::get_if<RendezvousChallenge>(&message)) {
    Header(&w, RendezvousMessageType::kChallenge);
    w.Bytes(challenge->challenge.bytes);
  } else {
    const std::string& reason = std::get<RendezvousReject>(message).reason;
    Header(&w, RendezvousMessageType::kReject);
    w.String(std::string_view(reason).substr(0, kRendezvousReasonBytesMax));
  }
  ByteWriter frame;
  frame.U32(static_cast<uint32_t>(w.bytes().size()));
  frame.Bytes(w.bytes());
  return frame.bytes();
}

Result<size_t> DecodeRendezvousLength(std::span<const uint8_t, kRendezvousLengthBytes> prefix) {
  uint32_t n = 0;
  Reader(prefix).U32(&n);
  if (n < kRendezvousPayloadBytesMin || n > kRendezvousPayloadBytesMax) {
    return Bad("length " + std::to_string(n) + " outside " +
               std::to_string(kRendezvousPayloadBytesMin) + ".." +
               std::to_string(kRendezvousPayloadBytesMax) + " bytes");
  }
  return static_cast<size_t>(n);
}

Result<RendezvousMessage> DecodeRendezvousPayload(std::span<const uint8_t> payload) {
  Reader r(payload);
  std::array<uint8_t, 4> magic{};
  uint32_t version = 0;
  uint32_t type = 0;
  if (!r.Bytes(magic) || magic != kRendezvousMagic) {
    return Bad("wrong magic (not a Strata rendezvous peer)");
  }
  if (!r.U32(&version)) return Bad("truncated header");
  if (version != kRendezvousVersion) {
    return Status::InvalidArgument(
        "rendezvous protocol version " + std::to_string(version) + "; this build speaks version " +
        std::to_string(kRendezvousVersion) + " (run the same strata version on every rank)");
  }
  if (!r.U32(&type)) return Bad("truncated header");
  RendezvousMessage message;
  switch (static_cast<RendezvousMessageType>(type)) {
    case RendezvousMessageType::kHello: {
      RendezvousHello hello;
      if (!r.U32(&hello.rank.value) || !r.U32(&hello.world_size) || !r.Bytes(hello.proof)) {
        return Bad("truncated hello");
      }
      if (hello.world_size == 0) return Bad("hello with world size 0");
      message = hello;
      break;
    }
    case RendezvousMessageType::kTicket: {
      JoinTicket ticket;
      uint32_t port = 0;
      if (!r.U32(&ticket.world_size) || !r.U32(&port) || !r.Bytes(ticket.nonce.bytes) ||
          !r.String(kRendezvousHostBytesMax, &ticket.record_host)) {
        return Bad("truncated ticket");
      }
      if (port == 0 || port > 65535) return Bad("ticket port " + std::to_string(port));
      if (ticket.record_host.empty()) return Bad("ticket without a host");
      ticket.record_port = static_cast<uint16_t>(port);
      message = ticket;
      break;
    }
    case RendezvousMessageType::kReject: {
      RendezvousReject reject;
      if (!r.String(kRendezvousReasonBytesMax, &reject.reason)) return Bad("truncated reject");
      message = reject;
      break;
    }
    case RendezvousMessageType::kChallenge: {
      RendezvousChallenge challenge;
      if (!r.Bytes(challenge.challenge.bytes)) return Bad("truncated challenge");
      message = challenge;
      break;
    }
    default: return Bad("unknown type " + std::to_string(type));
  }
  if (!r.AtEnd()) return Bad("trailing bytes after the fields");
  return message;
}

}  // namespace strata
