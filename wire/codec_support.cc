#include "wire/codec_support.h"

#include <fmt/format.h>

namespace strata::wire::codec {
namespace {

// Extra traversal allowance over twice the frame, for tiny frames.
constexpr uint64_t kTraversalSlackWords = 64;

}  // namespace

Status Invalid(std::string_view field, std::string_view what) {
  return Status::InvalidArgument(fmt::format("{}: {}", field, what));
}

Status CheckCount(size_t count, size_t max, std::string_view field) {
  if (count <= max) return Status::Ok();
  return Invalid(field, fmt::format("{} entries, at most {} allowed", count, max));
}

Result<std::string> GetText(capnp::Text::Reader text, size_t bytes_max, std::string_view field) {
  if (text.size() > bytes_max) {
    return Invalid(field, fmt::format("{} bytes, at most {} allowed", text.size(), bytes_max));
  }
  return std::string(text.cStr(), text.size());
}

Status GetStatus(uint8_t code, capnp::Text::Reader text, size_t text_bytes_max,
                 std::string_view field, Status* out) {
  if (code > static_cast<uint8_t>(StatusCode::kInternal)) {
    return Invalid(field, fmt::format("unknown status code {}", code));
  }
  STRATA_ASSIGN_OR_RETURN(std::string message, GetText(text, text_bytes_max, field));
  *out = code == 0 ? Status::Ok() : Status(static_cast<StatusCode>(code), std::move(message));
  return Status::Ok();
}

Result<Frame> Flatten(capnp::MessageBuilder& builder, size_t frame_bytes_max,
                      std::string_view what) {
  kj::Array<capnp::word> flat = capnp::messageToFlatArray(builder);
  if (flat.asBytes().size() > frame_bytes_max) {
    return Status::InvalidArgument(fmt::format("{} of {} bytes over the {} byte limit", what,
                                               flat.asBytes().size(), frame_bytes_max));
  }
  Frame frame;
  frame.words.resize(flat.size());
  std::memcpy(frame.words.data(), flat.begin(), flat.asBytes().size());
  return frame;
}

capnp::ReaderOptions FrameReaderOptions(size_t words) {
  capnp::ReaderOptions options;
  options.traversalLimitInWords = 2 * words + kTraversalSlackWords;
  options.nestingLimit = kNestingLimit;
  return options;
}

Status CheckFrameSize(std::span<const uint64_t> words, size_t frame_bytes_max,
                      std::string_view what) {
  if (words.size() * sizeof(uint64_t) <= frame_bytes_max) return Status::Ok();
  return Status::Corruption(fmt::format("{} of {} bytes is over the {} byte limit", what,
                                        words.size() * sizeof(uint64_t), frame_bytes_max));
}

Status CheckFrameEnd(const capnp::FlatArrayMessageReader& reader,
                     kj::ArrayPtr<const capnp::word> words) {
  if (reader.getEnd() == words.end()) return Status::Ok();
  return Status::Corruption(
      fmt::format("{} words after the end of the message", words.end() - reader.getEnd()));
}

}  // namespace strata::wire::codec
