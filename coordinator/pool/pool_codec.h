// Pool messages <-> frames: one wire/pool.capnp Envelope per frame, in the
// standard stream encoding the record links use (wire/codec.h's Frame, read
// back with wire/frame_reader.h). Cap'n Proto stays behind this header.
#pragma once

#include <cstdint>
#include <span>

#include "coordinator/pool/pool_messages.h"
#include "store/base/status.h"
#include "wire/codec.h"

namespace strata::pool {

// Encodes `message`. kInvalidArgument when a list or text exceeds its limit.
Result<wire::Frame> EncodePoolFrame(const PoolMessage& message);

// Decodes exactly one frame. kCorruption: not one readable message (or
// trailing words, or over kPoolFrameBytesMax); kInvalidArgument: an unknown
// union member or enum value, a digest of the wrong size, a list or text over
// its limit, a status code out of range.
Result<PoolMessage> DecodePoolFrame(std::span<const uint64_t> words);

}  // namespace strata::pool
