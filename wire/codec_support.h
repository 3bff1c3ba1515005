// What the Cap'n Proto codecs share: the record links' (wire/codec.cc), the
// attach channel's (attach/client/attach_codec.cc) and the pool's
// (coordinator/pool/pool_codec*.cc): field checks that name the field, and
// framing one envelope into a Frame and back under a frame limit.
//
// Includes Cap'n Proto: include it from codec .cc files only, never from an
// interface header.
#pragma once

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <span>
#include <string>
#include <string_view>

#include "store/base/prefix_key.h"
#include "store/base/status.h"
#include "wire/codec.h"
#include "wire/messages.h"

namespace strata::wire::codec {

// kInvalidArgument "<field>: <what>".
Status Invalid(std::string_view field, std::string_view what);
// kInvalidArgument when a list holds more than `max` entries.
Status CheckCount(size_t count, size_t max, std::string_view field);

inline capnp::Data::Reader AsData(std::span<const uint8_t> bytes) {
  return {bytes.data(), bytes.size()};
}
inline capnp::Text::Reader AsText(std::string_view text) { return {text.data(), text.size()}; }

// Checks the length before copying, so an oversized text is never copied.
Result<std::string> GetText(capnp::Text::Reader text, size_t bytes_max, std::string_view field);

// Exactly N bytes (a digest, a nonce).
template <size_t N>
Result<std::array<uint8_t, N>> GetBytes(capnp::Data::Reader data, std::string_view field) {
  if (data.size() != N) {
    return Invalid(field,
                   std::to_string(data.size()) + " bytes, expected exactly " + std::to_string(N));
  }
  std::array<uint8_t, N> out;
  std::memcpy(out.data(), data.begin(), N);
  return out;
}

// A prefix key into / out of any schema's key struct (consumed, digest).
template <typename KeyBuilder>
void PutKey(KeyBuilder out, const PrefixKey& key) {
  out.setConsumed(key.consumed);
  out.setDigest(AsData(key.digest));
}
template <typename KeyReader>
Result<PrefixKey> GetKey(KeyReader in, std::string_view field) {
  PrefixKey key;
  key.consumed = in.getConsumed();
  STRATA_ASSIGN_OR_RETURN(
      key.digest, GetBytes<sizeof key.digest>(in.getDigest(), std::string(field) + ".digest"));
  return key;
}

// A status carried as a StatusCode byte and an error text, into `out`;
// refuses an unknown code and a text over `text_bytes_max`.
Status GetStatus(uint8_t code, capnp::Text::Reader text, size_t text_bytes_max,
                 std::string_view field, Status* out);

// The builder's message as one frame; kInvalidArgument past `frame_bytes_max`
// ("<what> of N bytes over the L byte limit").
Result<Frame> Flatten(capnp::MessageBuilder& builder, size_t frame_bytes_max,
                      std::string_view what);

// Builds one `Envelope` with `put(Envelope::Builder) -> Status` and flattens
// it. Errors: put's, Flatten's, kInternal when Cap'n Proto throws
// ("encoding <what>: ...").
template <typename Envelope, typename Put>
Result<Frame> EncodeEnvelope(size_t frame_bytes_max, std::string_view what, Put put) {
  try {
    capnp::MallocMessageBuilder builder;
    STRATA_RETURN_IF_ERROR(put(builder.initRoot<Envelope>()));
    return Flatten(builder, frame_bytes_max, what);
  } catch (const kj::Exception& e) {
    return Status::Internal("encoding " + std::string(what) + ": " + e.getDescription().cStr());
  } catch (const std::bad_alloc&) {
    return Status::Internal("encoding " + std::string(what) + ": out of memory");
  }
}

// The reader options for one frame of `words`: a traversal limit of twice the
// frame (plus a little for tiny frames) and kNestingLimit.
capnp::ReaderOptions FrameReaderOptions(size_t words);
// kCorruption when `words` is over `frame_bytes_max`, or when the message read
// with `reader` ends before `words` does.
Status CheckFrameSize(std::span<const uint64_t> words, size_t frame_bytes_max,
                      std::string_view what);
Status CheckFrameEnd(const capnp::FlatArrayMessageReader& reader,
                     kj::ArrayPtr<const capnp::word> words);

// Decodes exactly one frame holding one `Envelope` with
// `get(Envelope::Reader) -> Result<Message>`. Errors: kCorruption for a frame
// over the limit, bytes after the message, or one Cap'n Proto cannot read;
// get's (kInvalidArgument for a bad field).
template <typename Envelope, typename Message, typename Get>
Result<Message> DecodeEnvelope(std::span<const uint64_t> words, size_t frame_bytes_max,
                               std::string_view what, Get get) {
  static_assert(sizeof(capnp::word) == sizeof(uint64_t));
  STRATA_RETURN_IF_ERROR(CheckFrameSize(words, frame_bytes_max, what));
  try {
    kj::ArrayPtr<const capnp::word> array(reinterpret_cast<const capnp::word*>(words.data()),
                                          words.size());
    capnp::FlatArrayMessageReader reader(array, FrameReaderOptions(words.size()));
    STRATA_RETURN_IF_ERROR(CheckFrameEnd(reader, array));
    return get(reader.getRoot<Envelope>());
  } catch (const kj::Exception& e) {
    return Status::Corruption(std::string("not a readable Cap'n Proto message: ") +
                              e.getDescription().cStr());
  } catch (const std::bad_alloc&) {
    return Status::Corruption("decoding needed more memory than is available");
  }
}

}  // namespace strata::wire::codec
