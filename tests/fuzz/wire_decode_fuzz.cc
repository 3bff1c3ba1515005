// Fuzz target: DecodeFrame (wire/codec.h) on arbitrary frames: the input's
// whole 8-byte words are the frame. Properties:
//  - every error is kCorruption or kInvalidArgument with a message; no
//    exception escapes, nothing crashes or trips a sanitizer;
//  - decoding allocates at most kAllocPerFrameByte per frame byte plus
//    kAllocSlackBytes: in proportion to the bytes received, never to the
//    counts and sizes the frame declares;
//  - a frame over the size limit is refused as kCorruption before decoding;
//  - a decoded message passes CheckMessage, encodes, and decodes from its
//    own encoding to an equal message; encoding is deterministic.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "alloc_meter.h"
#include "fuzz_check.h"
#include "wire/codec.h"

namespace strata::fuzz {
namespace {

// A decoded message costs more than its frame (vectors of fixed-size values,
// one field-name string per list element on the error path), and Cap'n Proto
// lets a frame be traversed twice; 64 bytes per frame byte bounds both.
constexpr size_t kAllocPerFrameByte = 64;
// Exception texts and formatting buffers of a small frame.
constexpr size_t kAllocSlackBytes = 256 * 1024;

void CheckError(const Status& s) {
  FUZZ_CHECK(s.code() == StatusCode::kCorruption || s.code() == StatusCode::kInvalidArgument,
             "decode error of an unexpected kind: " + s.ToString());
  FUZZ_CHECK(!s.message().empty(), "decode error without a message");
}

}  // namespace
}  // namespace strata::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  using namespace strata::wire;
  using namespace strata::fuzz;
  std::vector<uint64_t> words(size / sizeof(uint64_t));
  if (!words.empty()) std::memcpy(words.data(), data, words.size() * sizeof(uint64_t));
  const size_t frame_bytes = words.size() * sizeof(uint64_t);

  Result<Message> decoded = Status::Internal("not decoded");
  {
    AllocMeter meter;
    decoded = DecodeFrame(words);
    const size_t bound = kAllocPerFrameByte * frame_bytes + kAllocSlackBytes;
    FUZZ_CHECK(meter.bytes() <= bound, "decoding a " + std::to_string(frame_bytes) +
                                           " byte frame allocated " +
                                           std::to_string(meter.bytes()) + " bytes");
  }
  if (!words.empty()) {
    const Result<Message> over = DecodeFrame(words, frame_bytes - 1);
    FUZZ_CHECK(!over.ok() && over.status().code() == StatusCode::kCorruption,
               "a frame over the size limit was not refused");
  }
  if (!decoded.ok()) {
    CheckError(decoded.status());
    return 0;
  }
  const Message& message = *decoded;
  FUZZ_CHECK(CheckMessage(message).ok(), "decoded a message that fails CheckMessage");
  Result<Frame> encoded = EncodeFrame(message);
  FUZZ_CHECK(encoded.ok(), "a decoded message does not encode: " + encoded.status().ToString());
  FUZZ_CHECK(encoded->size_bytes() <= kFrameBytesMax, "re-encoded frame over the limit");
  Result<Message> again = DecodeFrame(encoded->words);
  FUZZ_CHECK(again.ok(), "the re-encoded frame does not decode: " + again.status().ToString());
  FUZZ_CHECK(*again == message,
             std::string("round trip changed a ") + std::string(MessageName(message)));
  Result<Frame> encoded_again = EncodeFrame(*again);
  FUZZ_CHECK(encoded_again.ok() && encoded_again->words == encoded->words,
             "encoding the same message twice gave different frames");
  return 0;
}
