// Fuzz target: FrameReader (wire/frame_reader.h), the incremental parser of a
// link's byte stream, with DecodeFrame on every frame it completes.
//
// Input: a u16 choosing the frame size limit (any byte count from 8 up to
// about 192 KiB, not only multiples of 8), then the stream. Frames are read
// until the stream ends or one is rejected (a link closes on the first
// rejection). The segment table is parsed again here, independently, and:
//  - a frame declaring more than kFrameSegmentsMax segments is rejected as
//    kBadSegmentTable, one declaring more bytes than the limit as kOversized,
//    and every other frame is completed with exactly its declared words,
//    equal to the stream's bytes;
//  - the reader never holds more than max(limit, 2 x the largest segment
//    table) bytes: a frame that declares a huge size costs its table only;
//  - DecodeFrame of a completed frame fails only with kCorruption or
//    kInvalidArgument (the rejections kMalformed / kInvalidMessage).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_check.h"
#include "wire/codec.h"
#include "wire/frame_reader.h"

namespace strata::fuzz {
namespace {

using namespace strata::wire;

constexpr size_t kWordBytes = 8;
constexpr size_t kTableBytesMax = (kFrameSegmentsMax / 2 + 1) * kWordBytes;

uint32_t LoadU32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// What the stream at `p` (with `n` bytes) declares, parsed without Cap'n Proto.
struct Declared {
  bool complete = false;  // the stream holds the whole segment table
  bool bad_table = false;
  uint64_t total_bytes = 0;  // table plus segments
};

Declared Declare(const uint8_t* p, size_t n) {
  Declared d;
  if (n < kWordBytes) return d;
  const uint64_t segments = uint64_t{LoadU32(p)} + 1;
  if (segments > kFrameSegmentsMax) {
    d.complete = true;
    d.bad_table = true;
    return d;
  }
  const uint64_t table_bytes = (segments / 2 + 1) * kWordBytes;
  if (n < table_bytes) return d;
  d.complete = true;
  d.total_bytes = table_bytes;
  for (uint64_t s = 0; s < segments; ++s) {
    d.total_bytes += uint64_t{LoadU32(p + 4 + 4 * s)} * kWordBytes;
  }
  return d;
}

}  // namespace
}  // namespace strata::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  using namespace strata::wire;
  using namespace strata::fuzz;
  if (size < 2) return 0;
  const size_t limit = kWordBytes + size_t{3} * (data[0] | data[1] << 8);
  const uint8_t* stream = data + 2;
  const size_t stream_bytes = size - 2;
  const size_t capacity_max = std::max(limit, 2 * kTableBytesMax);

  FrameReader reader(limit);
  size_t frame_start = 0;
  size_t at = 0;
  for (;;) {
    FUZZ_CHECK(reader.at_frame_start() == (at == frame_start), "at_frame_start is wrong");
    const std::span<std::byte> buffer = reader.NextBuffer();
    FUZZ_CHECK(!buffer.empty(), "NextBuffer is empty inside a frame");
    if (stream_bytes - at < buffer.size()) break;  // the stream ends inside this frame
    std::memcpy(buffer.data(), stream + at, buffer.size());
    at += buffer.size();
    const FrameReader::Step step = reader.Advance();
    FUZZ_CHECK(reader.buffer_capacity_bytes() <= capacity_max,
               "the reader holds " + std::to_string(reader.buffer_capacity_bytes()) +
                   " bytes under a " + std::to_string(limit) + " byte limit");
    const Declared declared = Declare(stream + frame_start, at - frame_start);
    if (step == FrameReader::Step::kNeedMore) {
      FUZZ_CHECK(!declared.bad_table, "a bad segment table was not rejected");
      FUZZ_CHECK(!declared.complete || declared.total_bytes <= limit,
                 "an oversized frame was not rejected");
      continue;
    }
    FUZZ_CHECK(declared.complete, "the reader decided before reading the segment table");
    if (step == FrameReader::Step::kRejected) {
      FUZZ_CHECK(!reader.error().ok(), "a rejection without an error");
      if (declared.bad_table) {
        FUZZ_CHECK(reader.rejection() == FrameRejection::kBadSegmentTable,
                   "a bad segment table was rejected as " +
                       std::string(FrameRejectionName(reader.rejection())));
      } else {
        FUZZ_CHECK(reader.rejection() == FrameRejection::kOversized && declared.total_bytes > limit,
                   "a frame of " + std::to_string(declared.total_bytes) + " bytes under a " +
                       std::to_string(limit) +
                       " byte limit was rejected: " + reader.error().ToString());
      }
      break;
    }
    // kFrameReady: exactly the declared words, as they were in the stream.
    FUZZ_CHECK(!declared.bad_table && declared.total_bytes <= limit,
               "the reader completed a frame it should have rejected");
    const std::span<const uint64_t> frame = reader.frame();
    FUZZ_CHECK(frame.size_bytes() == declared.total_bytes && at - frame_start == frame.size_bytes(),
               "the frame has " + std::to_string(frame.size_bytes()) + " bytes, its table says " +
                   std::to_string(declared.total_bytes));
    FUZZ_CHECK(std::memcmp(frame.data(), stream + frame_start, frame.size_bytes()) == 0,
               "the frame differs from the stream");
    const Result<Message> message = DecodeFrame(frame, limit);
    if (!message.ok()) {
      const StatusCode code = message.status().code();
      FUZZ_CHECK(code == StatusCode::kCorruption || code == StatusCode::kInvalidArgument,
                 "decode error of an unexpected kind: " + message.status().ToString());
    }
    reader.Reset();
    frame_start = at;
  }
  return 0;
}
