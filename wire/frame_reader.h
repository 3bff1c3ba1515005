// FrameReader: splits a byte stream into frames without doing any I/O. The
// caller fills NextBuffer() completely, then calls Advance(). The segment
// table is checked before the body is allocated, so a frame that declares
// more than the limit costs eight bytes of table, never its declared size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "store/base/status.h"

namespace strata::wire {

// Why an incoming frame was refused (one link statistic per reason).
enum class FrameRejection : uint8_t {
  kBadSegmentTable,  // declares more than kFrameSegmentsMax segments
  kOversized,        // declares more than the frame size limit
  kMalformed,        // not a readable Cap'n Proto message (DecodeFrame: kCorruption)
  kInvalidMessage,   // a field fails validation (DecodeFrame: kInvalidArgument)
};
inline constexpr size_t kFrameRejectionCount = 4;
std::string_view FrameRejectionName(FrameRejection rejection);

class FrameReader {
 public:
  enum class Step : uint8_t { kNeedMore, kFrameReady, kRejected };

  explicit FrameReader(size_t frame_bytes_max);

  // The limit for frames whose segment table is not yet sized (a link lifts
  // it once its peer's Hello is accepted). Checked before allocation.
  void set_frame_bytes_max(size_t frame_bytes_max) { frame_bytes_max_ = frame_bytes_max; }
  size_t frame_bytes_max() const { return frame_bytes_max_; }

  // Where the next bytes go; never empty while a frame is incomplete.
  std::span<std::byte> NextBuffer();
  // Call after NextBuffer() was filled completely.
  Step Advance();
  // True before the first byte of a frame has been read.
  bool at_frame_start() const { return stage_ == Stage::kFirstWord; }

  // The complete frame; valid after kFrameReady until Reset().
  std::span<const uint64_t> frame() const { return words_; }
  // After kRejected: why, and a message naming the declared sizes.
  FrameRejection rejection() const { return rejection_; }
  const Status& error() const { return error_; }

  // Starts the next frame. Keeps the buffer unless it grew past
  // kRetainedBufferBytes.
  void Reset();

  // Bytes allocated for frame data now (for tests of the allocation rule).
  size_t buffer_capacity_bytes() const { return words_.capacity() * sizeof(uint64_t); }

  static constexpr size_t kRetainedBufferBytes = size_t{1} << 20;

 private:
  enum class Stage : uint8_t { kFirstWord, kSegmentTable, kBody, kDone };

  Step Reject(FrameRejection rejection, Status error);
  Step SizeBody();

  size_t frame_bytes_max_;
  Stage stage_ = Stage::kFirstWord;
  std::vector<uint64_t> words_;
  size_t table_words_ = 0;
  FrameRejection rejection_ = FrameRejection::kMalformed;
  Status error_;
};

}  // namespace strata::wire
