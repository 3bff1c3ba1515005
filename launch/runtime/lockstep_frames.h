// The frames of the synthetic runtime's lockstep channel (runtime_lockstep.h)
// as pure encode/decode: no sockets here.
//
// Every frame: length (u32, little endian, of what follows) | op (u8) | body.
//   kHello   peer -> rank zero: token (64 hex) | rank (u32)
//   kWelcome rank zero -> peer: empty (the hello was admitted)
//   kWork    rank zero -> peer: EncodePageWork
//   kDone    rank zero -> peer: empty (the job's runtime finished)
//   kAnswer  peer -> rank zero, one per kWork or kDone:
//            code (u8, StatusCode) | checked bytes (u64) | message (rest)
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "launch/runtime/page_work.h"
#include "store/base/status.h"

namespace strata {

enum class LockstepOp : unsigned char { kHello = 1, kWelcome, kWork, kDone, kAnswer };

inline constexpr size_t kLockstepHeaderBytes = 5;  // length + op
inline constexpr size_t kLockstepTokenChars = 64;
// A frame's body at most: a page list of kPageWorkPagesMax pages.
inline constexpr size_t kLockstepBodyBytesMax = 64 + kPageWorkPagesMax * 20;

struct LockstepFrame {
  LockstepOp op = LockstepOp::kAnswer;
  std::vector<uint8_t> body{};
};

// The whole frame, header included.
std::vector<uint8_t> EncodeLockstepFrame(const LockstepFrame& frame);
// The header's body length and op; kInvalidArgument when the op is unknown
// or the length above kLockstepBodyBytesMax.
struct LockstepHeader {
  LockstepOp op;
  uint32_t body_bytes;
};
Result<LockstepHeader> DecodeLockstepHeader(std::span<const uint8_t, kLockstepHeaderBytes> header);

std::vector<uint8_t> EncodeLockstepHello(std::string_view token, uint32_t rank);
struct LockstepHello {
  std::string token;
  uint32_t rank = 0;
};
Result<LockstepHello> DecodeLockstepHello(std::span<const uint8_t> body);

// A peer's answer: its report, or the status of its failure.
std::vector<uint8_t> EncodeLockstepAnswer(const Result<PageWorkReport>& answer);
Result<PageWorkReport> DecodeLockstepAnswer(std::span<const uint8_t> body);

}  // namespace strata
