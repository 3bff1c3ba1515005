// Messages <-> frames. A frame is one Cap'n Proto message in the standard
// stream encoding (segment table, then segments) holding one Envelope
// (wire/strata.capnp). Cap'n Proto stays behind this header; its exceptions
// are caught here and become Status values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "store/base/status.h"
#include "wire/messages.h"

namespace strata::wire {

// One encoded frame, 8-byte aligned as Cap'n Proto requires.
struct Frame {
  std::vector<uint64_t> words;

  size_t size_bytes() const { return words.size() * sizeof(uint64_t); }
  std::span<const std::byte> bytes() const { return std::as_bytes(std::span(words)); }
};

// Checks the message (CheckMessage) and encodes it. Errors: kInvalidArgument
// from the check; kInternal if Cap'n Proto fails.
Result<Frame> EncodeFrame(const Message& message);

// Decodes exactly one frame: `words` must hold the whole frame and nothing
// after it. Reads with a traversal limit of twice the frame and
// kNestingLimit. Errors, each naming what is wrong:
//   kCorruption       the words are not one readable Cap'n Proto message
//                     (bad segment table, pointers out of bounds, limits hit,
//                     trailing words, frame over frame_bytes_max)
//   kInvalidArgument  a readable message with an unknown message type or enum
//                     value, a digest or nonce of the wrong size, or a field
//                     that fails CheckMessage
Result<Message> DecodeFrame(std::span<const uint64_t> words,
                            size_t frame_bytes_max = kFrameBytesMax);

}  // namespace strata::wire
