#include "launch/runtime/lockstep_frames.h"

namespace strata {

namespace {

void PutLe(std::vector<uint8_t>& out, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

uint64_t GetLe(std::span<const uint8_t> in, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v |= uint64_t{in[i]} << (8 * i);
  return v;
}

constexpr size_t kAnswerFixedBytes = 1 + 8;
constexpr auto kLastStatusCode = static_cast<uint64_t>(StatusCode::kInternal);

}  // namespace

std::vector<uint8_t> EncodeLockstepFrame(const LockstepFrame& frame) {
  std::vector<uint8_t> out;
  out.reserve(kLockstepHeaderBytes + frame.body.size());
  PutLe(out, frame.body.size(), 4);
  out.push_back(static_cast<uint8_t>(frame.op));
  out.insert(out.end(), frame.body.begin(), frame.body.end());
  return out;
}

Result<LockstepHeader> DecodeLockstepHeader(std::span<const uint8_t, kLockstepHeaderBytes> header) {
  const auto body_bytes = static_cast<uint32_t>(GetLe(header, 4));
  const uint8_t op = header[4];
  if (op < static_cast<uint8_t>(LockstepOp::kHello) ||
      op > static_cast<uint8_t>(LockstepOp::kAnswer)) {
    return Status::InvalidArgument("lockstep frame: unknown op " + std::to_string(op));
  }
  if (body_bytes > kLockstepBodyBytesMax) {
    return Status::InvalidArgument("lockstep frame: body of " + std::to_string(body_bytes) +
                                   " bytes is above the limit");
  }
  return LockstepHeader{.op = static_cast<LockstepOp>(op), .body_bytes = body_bytes};
}

std::vector<uint8_t> EncodeLockstepHello(std::string_view token, uint32_t rank) {
  std::vector<uint8_t> out(token.begin(), token.end());
  PutLe(out, rank, 4);
  return out;
}

Result<LockstepHello> DecodeLockstepHello(std::span<const uint8_t> body) {
  if (body.size() != kLockstepTokenChars + 4) {
    return Status::InvalidArgument("lockstep hello: " + std::to_string(body.size()) +
                                   " bytes, expected " + std::to_string(kLockstepTokenChars + 4));
  }
  return LockstepHello{.token = std::string(body.begin(), body.begin() + kLockstepTokenChars),
                       .rank = static_cast<uint32_t>(GetLe(body.subspan(kLockstepTokenChars), 4))};
}

std::vector<uint8_t> EncodeLockstepAnswer(const Result<PageWorkReport>& answer) {
  std::vector<uint8_t> out;
  out.push_back(static_cast<uint8_t>(answer.ok() ? StatusCode::kOk : answer.status().code()));
  PutLe(out, answer.ok() ? answer->checked_bytes : 0, 8);
  if (!answer.ok()) {
    const std::string m = answer.status().message();
    out.insert(out.end(), m.begin(), m.end());
  }
  return out;
}

Result<PageWorkReport> DecodeLockstepAnswer(std::span<const uint8_t> body) {
  if (body.size() < kAnswerFixedBytes || body[0] > kLastStatusCode) {
    return Status::InvalidArgument("lockstep answer: truncated or unknown status code");
  }
  const auto code = static_cast<StatusCode>(body[0]);
  if (code == StatusCode::kOk) {
    if (body.size() != kAnswerFixedBytes) {
      return Status::InvalidArgument("lockstep answer: trailing bytes");
    }
    return PageWorkReport{.checked_bytes = GetLe(body.subspan(1), 8)};
  }
  return Status(code, std::string(body.begin() + kAnswerFixedBytes, body.end()));
}

}  // namespace strata
