#include "wire/frame_reader.h"

#include <capnp/serialize.h>
#include <fmt/format.h>

#include <cstring>

#include "wire/messages.h"

namespace strata::wire {

std::string_view FrameRejectionName(FrameRejection rejection) {
  switch (rejection) {
    case FrameRejection::kBadSegmentTable: return "bad segment table";
    case FrameRejection::kOversized: return "oversized";
    case FrameRejection::kMalformed: return "malformed";
    case FrameRejection::kInvalidMessage: return "invalid message";
  }
  return "unknown";
}

FrameReader::FrameReader(size_t frame_bytes_max) : frame_bytes_max_(frame_bytes_max) {}

std::span<std::byte> FrameReader::NextBuffer() {
  std::span<uint64_t> words;
  switch (stage_) {
    case Stage::kFirstWord:
      words_.resize(1);
      words = std::span(words_).first(1);
      break;
    case Stage::kSegmentTable: words = std::span(words_).subspan(1, table_words_ - 1); break;
    case Stage::kBody: words = std::span(words_).subspan(table_words_); break;
    case Stage::kDone: break;
  }
  return std::as_writable_bytes(words);
}

FrameReader::Step FrameReader::Advance() {
  switch (stage_) {
    case Stage::kFirstWord: {
      // The stream encoding starts with (segment count - 1) as a little-endian u32.
      uint32_t count_minus_one;
      std::memcpy(&count_minus_one, words_.data(), sizeof count_minus_one);
      const uint64_t segment_count = uint64_t{count_minus_one} + 1;
      if (segment_count > kFrameSegmentsMax) {
        return Reject(
            FrameRejection::kBadSegmentTable,
            Status::Corruption(fmt::format("frame declares {} segments, at most {} allowed",
                                           segment_count, kFrameSegmentsMax)));
      }
      table_words_ = segment_count / 2 + 1;
      if (table_words_ == 1) return SizeBody();
      words_.resize(table_words_);
      stage_ = Stage::kSegmentTable;
      return Step::kNeedMore;
    }
    case Stage::kSegmentTable: return SizeBody();
    case Stage::kBody: stage_ = Stage::kDone; return Step::kFrameReady;
    case Stage::kDone: break;
  }
  STRATA_ASSERT(false, "FrameReader::Advance after the frame was complete or rejected");
  return Step::kRejected;
}

FrameReader::Step FrameReader::SizeBody() {
  static_assert(sizeof(capnp::word) == sizeof(uint64_t));
  const kj::ArrayPtr<const capnp::word> table(reinterpret_cast<const capnp::word*>(words_.data()),
                                              table_words_);
  const size_t total_words = capnp::expectedSizeInWordsFromPrefix(table);
  if (total_words > frame_bytes_max_ / sizeof(uint64_t)) {
    return Reject(
        FrameRejection::kOversized,
        Status::Corruption(fmt::format("frame declares {} bytes, the limit is {}",
                                       total_words * sizeof(uint64_t), frame_bytes_max_)));
  }
  if (total_words == table_words_) {
    stage_ = Stage::kDone;
    return Step::kFrameReady;
  }
  words_.resize(total_words);
  stage_ = Stage::kBody;
  return Step::kNeedMore;
}

FrameReader::Step FrameReader::Reject(FrameRejection rejection, Status error) {
  rejection_ = rejection;
  error_ = std::move(error);
  stage_ = Stage::kDone;
  return Step::kRejected;
}

void FrameReader::Reset() {
  stage_ = Stage::kFirstWord;
  table_words_ = 0;
  error_ = Status::Ok();
  if (buffer_capacity_bytes() > kRetainedBufferBytes) {
    std::vector<uint64_t>().swap(words_);
  } else {
    words_.clear();
  }
}

}  // namespace strata::wire
