// The TCP rendezvous's messages (docs/wire.md, "Rendezvous protocol").
// Every message is one frame: a u32 little-endian payload length, then the
// payload: magic "STRZ", u32 version, u32 type, then the type's fields.
//   Challenge (rank zero -> peer, type 4, first on every connection):
//          16 random bytes
//   Hello  (peer -> rank zero, type 1): u32 rank, u32 world_size, 32-byte
//          proof (ProveHello in job_secret.h, over the connection's challenge)
//   Ticket (rank zero -> peer, type 2): u32 world_size, u32 record_port,
//          16-byte nonce, u32 host length + host bytes (1..255)
//   Reject (rank zero -> peer, type 3): u32 reason length + reason bytes (0..400)
// All integers little-endian; a payload longer than its fields is an error.
// Pure encoding; the sockets are in tcp_rendezvous_server.cc and
// tcp_rendezvous_client.cc.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "coordinator/rendezvous/job_secret.h"
#include "coordinator/rendezvous/rendezvous.h"
#include "store/base/ids.h"
#include "store/base/status.h"

namespace strata {

inline constexpr std::array<uint8_t, 4> kRendezvousMagic = {'S', 'T', 'R', 'Z'};
inline constexpr uint32_t kRendezvousVersion = 2;
inline constexpr size_t kRendezvousLengthBytes = 4;
// Payloads outside [kRendezvousPayloadBytesMin, kRendezvousPayloadBytesMax]
// are refused before they are read.
inline constexpr size_t kRendezvousPayloadBytesMin = 12;
inline constexpr size_t kRendezvousPayloadBytesMax = 512;
inline constexpr size_t kRendezvousHostBytesMax = 255;
inline constexpr size_t kRendezvousReasonBytesMax = 400;

enum class RendezvousMessageType : uint32_t {
  kHello = 1,
  kTicket = 2,
  kReject = 3,
  kChallenge = 4
};

// Fresh random bytes from rank zero that the hello on this connection must
// prove the job secret over (so a recorded hello cannot be replayed).
struct RendezvousChallenge {
  Nonce challenge;
};

struct RendezvousHello {
  RankId rank;
  uint32_t world_size = 0;
  HelloProof proof{};  // ProveHello(secret, the connection's challenge, rank, world_size)
};

struct RendezvousReject {
  std::string reason;
};

using RendezvousMessage =
    std::variant<RendezvousHello, JoinTicket, RendezvousReject, RendezvousChallenge>;

// The whole frame: length prefix and payload. A Reject's reason is cut to
// kRendezvousReasonBytesMax; a Ticket's host must be 1..255 bytes (a bug
// otherwise).
std::vector<uint8_t> EncodeRendezvousFrame(const RendezvousMessage& message);

// The payload length a frame's first four bytes announce; kCorruption when it
// is outside the allowed range.
Result<size_t> DecodeRendezvousLength(std::span<const uint8_t, kRendezvousLengthBytes> prefix);

// One payload (without the length prefix). kCorruption on a wrong magic, an
// unknown type, a field out of range or a length that does not match the
// type; kInvalidArgument on another protocol version (the message says which).
Result<RendezvousMessage> DecodeRendezvousPayload(std::span<const uint8_t> payload);

}  // namespace strata
