// FrameReader: splits a stream into frames and refuses bad segment tables
// and oversized frames before allocating their bodies.
#include "wire/frame_reader.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <gtest/gtest.h>

#include <cstring>

#include "tests/unit/wire/wire_test_util.h"
#include "wire/codec.h"
#include "wire/link/link.h"
#include "wire/strata.capnp.h"

namespace strata::wire {
namespace {

// Feeds `bytes` to the reader the way a socket would: each NextBuffer()
// filled completely. Returns the last step and how many bytes it consumed.
std::pair<FrameReader::Step, size_t> Feed(FrameReader& reader, std::span<const std::byte> bytes) {
  size_t used = 0;
  for (;;) {
    std::span<std::byte> buffer = reader.NextBuffer();
    if (buffer.size() > bytes.size() - used) return {FrameReader::Step::kNeedMore, used};
    std::memcpy(buffer.data(), bytes.data() + used, buffer.size());
    used += buffer.size();
    const FrameReader::Step step = reader.Advance();
    if (step != FrameReader::Step::kNeedMore) return {step, used};
  }
}

std::vector<uint64_t> Table(std::vector<uint32_t> segment_words) {
  std::vector<uint32_t> halves;
  halves.push_back(static_cast<uint32_t>(segment_words.size() - 1));
  halves.insert(halves.end(), segment_words.begin(), segment_words.end());
  if (halves.size() % 2) halves.push_back(0);
  std::vector<uint64_t> words(halves.size() / 2);
  std::memcpy(words.data(), halves.data(), halves.size() * sizeof(uint32_t));
  return words;
}

std::span<const std::byte> AsBytes(const std::vector<uint64_t>& words) {
  return std::as_bytes(std::span(words));
}

TEST(WireFrameReader, ReadsConsecutiveFrames) {
  const std::vector<Message> messages = testing::SampleMessages();
  std::vector<uint64_t> stream;
  for (const Message& m : messages) {
    Result<Frame> frame = EncodeFrame(m);
    ASSERT_TRUE(frame.ok());
    stream.insert(stream.end(), frame->words.begin(), frame->words.end());
  }
  FrameReader reader(kFrameBytesMax);
  std::span<const std::byte> rest = AsBytes(stream);
  for (const Message& expected : messages) {
    ASSERT_TRUE(reader.at_frame_start());
    auto [step, used] = Feed(reader, rest);
    ASSERT_EQ(step, FrameReader::Step::kFrameReady);
    rest = rest.subspan(used);
    Result<Message> decoded = DecodeFrame(reader.frame());
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_TRUE(*decoded == expected) << MessageName(expected);
    reader.Reset();
  }
  EXPECT_TRUE(rest.empty());
}

TEST(WireFrameReader, ReadsAMultiSegmentFrame) {
  // A tiny fixed segment size forces the list into further segments.
  capnp::MallocMessageBuilder builder(8, capnp::AllocationStrategy::FIXED_SIZE);
  auto job = builder.initRoot<schema::Envelope>().initJob();
  job.setKind(schema::JobKind::STORE);
  const std::array<uint8_t, 16> digest{};
  auto key = job.initKey();
  key.setConsumed(6400);
  key.setDigest(capnp::Data::Reader(digest.data(), digest.size()));
  job.setBucket(capnp::Data::Reader(digest.data(), digest.size()));
  job.setTailPages(100);
  auto ids = job.initPageIds(100);
  for (unsigned i = 0; i < ids.size(); ++i) ids.set(i, i * 3);
  job.initRowSlot().setNone();
  kj::Array<capnp::word> flat = capnp::messageToFlatArray(builder);
  std::vector<uint64_t> words(flat.size());
  std::memcpy(words.data(), flat.begin(), flat.asBytes().size());
  ASSERT_GT(builder.getSegmentsForOutput().size(), 2u);

  FrameReader reader(kFrameBytesMax);
  auto [step, used] = Feed(reader, AsBytes(words));
  ASSERT_EQ(step, FrameReader::Step::kFrameReady);
  EXPECT_EQ(used, words.size() * 8);
  Result<Message> decoded = DecodeFrame(reader.frame());
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  const RecordJob& out = std::get<Job>(*decoded).record;
  ASSERT_EQ(out.page_ids.size(), 100u);
  EXPECT_EQ(out.page_ids[99], PageId(297));
}

TEST(WireFrameReader, RejectsTooManySegmentsAfterOneWord) {
  for (uint32_t count_minus_one : {uint32_t{kFrameSegmentsMax}, 0xffffffffU}) {
    FrameReader reader(kFrameBytesMax);
    std::vector<uint64_t> word = {count_minus_one};
    auto [step, used] = Feed(reader, AsBytes(word));
    ASSERT_EQ(step, FrameReader::Step::kRejected);
    EXPECT_EQ(used, 8u);
    EXPECT_EQ(reader.rejection(), FrameRejection::kBadSegmentTable);
    EXPECT_EQ(reader.error().code(), StatusCode::kCorruption);
    EXPECT_NE(reader.error().message().find("segments"), std::string::npos);
  }
}

TEST(WireFrameReader, AcceptsTheMostSegmentsAllowed) {
  FrameReader reader(kFrameBytesMax);
  std::vector<uint32_t> sizes(kFrameSegmentsMax, 1);
  auto [step, used] = Feed(reader, AsBytes(Table(sizes)));
  EXPECT_EQ(step, FrameReader::Step::kNeedMore);
  EXPECT_EQ(reader.NextBuffer().size(), kFrameSegmentsMax * 8);
}

TEST(WireFrameReader, RejectsAnOversizedSegmentWithoutAllocatingIt) {
  const size_t limit = size_t{1} << 20;
  FrameReader reader(limit);
  // One segment whose words alone reach the limit: table + segment > limit.
  auto [step, used] = Feed(reader, AsBytes(Table({limit / 8})));
  ASSERT_EQ(step, FrameReader::Step::kRejected);
  EXPECT_EQ(used, 8u);  // nothing past the table was asked for
  EXPECT_EQ(reader.rejection(), FrameRejection::kOversized);
  EXPECT_NE(reader.error().message().find("limit"), std::string::npos);
  EXPECT_LE(reader.buffer_capacity_bytes(), 8u);
}

// A link before its peer's Hello is accepted lowers the limit to
// kHelloFrameBytesMax: a 1 MiB frame, fine afterwards, is refused from its
// table and never allocated.
TEST(WireFrameReader, ALoweredLimitRefusesBeforeAllocating) {
  FrameReader reader(kFrameBytesMax);
  reader.set_frame_bytes_max(kHelloFrameBytesMax);
  auto [step, used] = Feed(reader, AsBytes(Table({(1u << 20) / 8})));
  ASSERT_EQ(step, FrameReader::Step::kRejected);
  EXPECT_EQ(used, 8u);
  EXPECT_EQ(reader.rejection(), FrameRejection::kOversized);
  EXPECT_LE(reader.buffer_capacity_bytes(), 8u);

  FrameReader lifted(kHelloFrameBytesMax);
  lifted.set_frame_bytes_max(kFrameBytesMax);
  EXPECT_EQ(Feed(lifted, AsBytes(Table({(1u << 20) / 8}))).first, FrameReader::Step::kNeedMore);
}

// Every Hello fits the pre-Hello limit with room to spare.
TEST(WireFrameReader, AHelloFitsThePreHelloLimit) {
  Result<Frame> hello = EncodeFrame(testing::SampleHello());
  ASSERT_TRUE(hello.ok());
  EXPECT_LT(hello->size_bytes() * 16, kHelloFrameBytesMax);
}

TEST(WireFrameReader, RejectsSegmentsThatOnlyTogetherAreOversized) {
  const size_t limit = size_t{1} << 20;
  FrameReader reader(limit);
  const uint32_t third = static_cast<uint32_t>(limit / 8 / 3 + 1);
  auto [step, used] = Feed(reader, AsBytes(Table({third, third, third})));
  ASSERT_EQ(step, FrameReader::Step::kRejected);
  EXPECT_EQ(reader.rejection(), FrameRejection::kOversized);
  EXPECT_LE(reader.buffer_capacity_bytes(), 16u);
}

TEST(WireFrameReader, RejectsTheHugestDeclaredFrame) {
  FrameReader reader(kFrameBytesMax);
  std::vector<uint32_t> sizes(kFrameSegmentsMax, 0xffffffffU);
  auto [step, used] = Feed(reader, AsBytes(Table(sizes)));
  ASSERT_EQ(step, FrameReader::Step::kRejected);
  EXPECT_EQ(reader.rejection(), FrameRejection::kOversized);
  EXPECT_LE(reader.buffer_capacity_bytes(), 4096u);
}

TEST(WireFrameReader, AcceptsAFrameExactlyAtTheLimit) {
  const size_t limit = size_t{1} << 20;
  FrameReader reader(limit);
  auto [step, used] = Feed(reader, AsBytes(Table({limit / 8 - 1})));
  ASSERT_EQ(step, FrameReader::Step::kNeedMore);
  EXPECT_EQ(reader.NextBuffer().size(), limit - 8);
}

TEST(WireFrameReader, ResetReleasesALargeBuffer) {
  FrameReader reader(kFrameBytesMax);
  const size_t body_words = FrameReader::kRetainedBufferBytes / 8 + 1;
  auto [step, used] = Feed(reader, AsBytes(Table({static_cast<uint32_t>(body_words)})));
  ASSERT_EQ(step, FrameReader::Step::kNeedMore);
  EXPECT_GT(reader.buffer_capacity_bytes(), FrameReader::kRetainedBufferBytes);
  reader.Reset();
  EXPECT_EQ(reader.buffer_capacity_bytes(), 0u);
  EXPECT_TRUE(reader.at_frame_start());
}

}  // namespace
}  // namespace strata::wire
