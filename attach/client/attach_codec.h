// Attach messages <-> frames: one wire/attach.capnp Envelope per frame, in
// the standard stream encoding the record links use (wire/codec.h's Frame,
// read back with wire/frame_reader.h). Cap'n Proto stays behind this header.
#pragma once

#include <cstdint>
#include <span>

#include "attach/client/attach_messages.h"
#include "store/base/status.h"
#include "wire/codec.h"

namespace strata::attach {

// Encodes `message`. kInvalidArgument when a list or text exceeds its limit.
Result<wire::Frame> EncodeAttachFrame(const AttachMessage& message);

// A ticket's status as the store can report it, either way across the
// channel: a known state, and a pooled endpoint only on a ready ticket
// (kInvalidArgument naming the field otherwise). Both codec halves check it.
Status CheckTicketStatus(const LookupTicketStatus& st);

// Decodes exactly one frame. kCorruption: not one readable message;
// kInvalidArgument: an unknown union member or enum value, a digest that is
// not 16 bytes, a list or text over its limit.
Result<AttachMessage> DecodeAttachFrame(std::span<const uint64_t> words);

}  // namespace strata::attach
