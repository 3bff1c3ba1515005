// Fuzz target: EncodeFrame against DecodeFrame and FrameReader (wire/), from
// Message values built out of the input, valid or not. Properties:
//  - EncodeFrame fails exactly when CheckMessage does, with its status;
//  - an encoded frame is at most kFrameBytesMax, the FrameReader splits it
//    out of a byte stream unchanged, and DecodeFrame returns an equal
//    message: what one rank sends, every rank reads back the same.
#include <fuzzer/FuzzedDataProvider.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_check.h"
#include "wire/codec.h"
#include "wire/frame_reader.h"

namespace strata::fuzz {
namespace {

using namespace strata::wire;

template <size_t N>
std::array<uint8_t, N> Bytes(FuzzedDataProvider& in) {
  std::array<uint8_t, N> out{};
  for (uint8_t& b : out) b = in.ConsumeIntegral<uint8_t>();
  return out;
}

// Small values mostly, any value sometimes (zero and limits matter).
template <typename T>
T Number(FuzzedDataProvider& in, T typical_max) {
  return in.ConsumeBool() ? in.ConsumeIntegralInRange<T>(0, typical_max) : in.ConsumeIntegral<T>();
}

std::string Text(FuzzedDataProvider& in) {
  if (in.ConsumeProbability<float>() < 0.02F) {
    return std::string(kTextBytesMax + in.ConsumeIntegralInRange<size_t>(0, 2), 'x');
  }
  return in.ConsumeRandomLengthString(64);
}

PrefixKey Key(FuzzedDataProvider& in) {
  PrefixKey key;
  key.consumed = Number<uint64_t>(in, 4096);
  key.digest = Bytes<16>(in);
  return key;
}

std::optional<PrefixKey> MaybeKey(FuzzedDataProvider& in) {
  if (!in.ConsumeBool()) return std::nullopt;
  return Key(in);
}

Status AnyStatus(FuzzedDataProvider& in) {
  const auto code = static_cast<StatusCode>(
      in.ConsumeIntegralInRange<int>(0, static_cast<int>(StatusCode::kInternal)));
  std::string text = Text(in);
  if (code == StatusCode::kOk && in.ConsumeBool()) text.clear();
  return Status(code, std::move(text));
}

// Lists stay short: the limits are covered by the decode target's bounds
// and by the unit tests; a long list here only slows the fuzzer down.
size_t Count(FuzzedDataProvider& in) { return in.ConsumeIntegralInRange<size_t>(0, 12); }

Job AnyJob(FuzzedDataProvider& in) {
  Job m;
  RecordJob& j = m.record;
  j.id = JobId(in.ConsumeIntegral<uint64_t>());
  j.kind = static_cast<RecordJobKind>(in.ConsumeIntegralInRange<int>(0, 4));
  j.key = Key(in);
  j.parent = MaybeKey(in);
  j.bucket = Bytes<16>(in);
  j.tail_pages = Number<uint32_t>(in, 16);
  j.first_page = Number<uint32_t>(in, 16);
  const size_t pages =
      in.ConsumeBool() ? j.tail_pages - std::min(j.first_page, j.tail_pages) : Count(in);
  for (size_t i = 0; i < std::min<size_t>(pages, 64); ++i) {
    j.page_ids.emplace_back(in.ConsumeIntegral<uint32_t>());
  }
  if (in.ConsumeBool()) j.row_slot = StateSlot(in.ConsumeIntegral<uint32_t>());
  j.replicated_pages = in.ConsumeBool();
  j.replicated_row = in.ConsumeBool();
  return m;
}

Message AnyMessage(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 11)) {
    case 0: {
      Hello m;
      m.protocol_version = Number<uint32_t>(in, 4);
      m.nonce = Bytes<16>(in);
      m.world_size = Number<uint32_t>(in, kWorldSizeMax + 1);
      m.rank = RankId(Number<uint32_t>(in, 16));
      m.layout_fingerprint = Bytes<16>(in);
      m.disk_limit_bytes = in.ConsumeIntegral<uint64_t>();
      m.has_disk_store = in.ConsumeBool();
      return m;
    }
    case 1: return HelloAccept{Number<uint32_t>(in, 4)};
    case 2: return HelloReject{Text(in)};
    case 3: {
      ScanSummary m;
      for (size_t i = Count(in); i > 0; --i) {
        m.records.push_back({Key(in), MaybeKey(in), Bytes<16>(in), in.ConsumeBool(),
                             Number<uint64_t>(in, 1 << 20)});
      }
      m.last = in.ConsumeBool();
      return m;
    }
    case 4: {
      Agreement m;
      for (size_t i = Count(in); i > 0; --i) {
        m.entries.push_back({Key(in), static_cast<Verdict>(in.ConsumeIntegralInRange<int>(0, 3))});
      }
      m.last = in.ConsumeBool();
      return m;
    }
    case 5: return AgreementApplied{AnyStatus(in)};
    case 6: return AnyJob(in);
    case 7: {
      JobDone m;
      m.id = JobId(in.ConsumeIntegral<uint64_t>());
      m.rank = RankId(in.ConsumeIntegral<uint32_t>());
      m.status = AnyStatus(in);
      m.filesystem_full = in.ConsumeBool();
      m.bytes = in.ConsumeIntegral<uint64_t>();
      return m;
    }
    case 8: return Drain{};
    case 9: return Drained{AnyStatus(in)};
    case 10: return Close{Text(in)};
    default: return Heartbeat{in.ConsumeIntegral<uint64_t>()};
  }
}

// Feeds `frame` through a FrameReader as a stream and returns what it split.
std::vector<uint64_t> ReadBack(const Frame& frame) {
  FrameReader reader(kFrameBytesMax);
  const std::span<const std::byte> stream = frame.bytes();
  size_t at = 0;
  for (;;) {
    std::span<std::byte> buffer = reader.NextBuffer();
    FUZZ_CHECK(!buffer.empty() && at + buffer.size() <= stream.size(),
               "the frame reader wants more bytes than the encoded frame has");
    std::memcpy(buffer.data(), stream.data() + at, buffer.size());
    at += buffer.size();
    const FrameReader::Step step = reader.Advance();
    FUZZ_CHECK(step != FrameReader::Step::kRejected,
               "the frame reader rejected an encoded frame: " + reader.error().ToString());
    if (step == FrameReader::Step::kFrameReady) break;
  }
  FUZZ_CHECK(at == stream.size(), "the frame reader stopped inside an encoded frame");
  return {reader.frame().begin(), reader.frame().end()};
}

}  // namespace
}  // namespace strata::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  using namespace strata::wire;
  FuzzedDataProvider in(data, size);
  const Message message = fuzz::AnyMessage(in);
  const Status check = CheckMessage(message);
  Result<Frame> frame = EncodeFrame(message);
  if (!check.ok()) {
    FUZZ_CHECK(!frame.ok() && frame.status() == check,
               "EncodeFrame did not refuse a message CheckMessage refuses: " + check.ToString());
    return 0;
  }
  FUZZ_CHECK(frame.ok(), std::string("EncodeFrame refused a valid ") +
                             std::string(MessageName(message)) + ": " + frame.status().ToString());
  FUZZ_CHECK(frame->size_bytes() <= kFrameBytesMax, "encoded frame over kFrameBytesMax");
  FUZZ_CHECK(fuzz::ReadBack(*frame) == frame->words, "the frame reader changed the frame");
  Result<Message> decoded = DecodeFrame(frame->words);
  FUZZ_CHECK(decoded.ok(), std::string("the reader refuses a ") +
                               std::string(MessageName(message)) +
                               " the writer encoded: " + decoded.status().ToString());
  FUZZ_CHECK(*decoded == message, std::string("decoding an encoded ") +
                                      std::string(MessageName(message)) + " changed it");
  return 0;
}
