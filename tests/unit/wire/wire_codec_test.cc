// Codec: every message round-trips; every malformed field of an incoming
// frame is rejected with an error naming it; outgoing messages obey the same
// rules.
#include "wire/codec.h"

#include <capnp/any.h>
#include <capnp/message.h>
#include <capnp/schema.h>
#include <capnp/serialize.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>

#include "tests/unit/wire/codec_test_util.h"
#include "tests/unit/wire/wire_test_util.h"
#include "wire/strata.capnp.h"

namespace strata::wire {
namespace {

using ::testing::HasSubstr;
using testing::Key;
using testing::SampleHello;
using testing::SampleJob;
using testing::SampleMessages;
namespace s = schema;
using codec_testing::DecodeMutated;
using codec_testing::Encode;
using codec_testing::ExpectRejected;
using codec_testing::ToFrame;

// Writes a raw 16-bit value into a struct's data section at a 16-bit offset
// taken from the schema, for values the typed API cannot express.
template <typename T>
void PokeDiscriminant(typename T::Builder builder, uint32_t offset16, uint16_t value) {
  capnp::AnyStruct::Builder any(kj::mv(builder));
  auto data = any.getDataSection();
  ASSERT_GE(data.size(), (offset16 + 1) * 2u);
  std::memcpy(data.begin() + offset16 * 2, &value, sizeof value);
}

capnp::Data::Reader DataOf(const std::string& bytes) {
  return {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
}

// ---- round trips -------------------------------------------------------------

TEST(WireCodec, EveryMessageRoundTrips) {
  const std::vector<Message> messages = SampleMessages();
  ASSERT_EQ(messages.size(), std::variant_size_v<Message> + 2);  // every type, some twice
  for (const Message& message : messages) {
    Result<Message> decoded = DecodeFrame(Encode(message).words);
    ASSERT_TRUE(decoded.ok()) << MessageName(message) << ": " << decoded.status().ToString();
    EXPECT_EQ(decoded->index(), message.index());
    EXPECT_TRUE(*decoded == message) << MessageName(message);
  }
}

TEST(WireCodec, EmptyListsAndAbsentOptionalsRoundTrip) {
  Job job = SampleJob();
  job.record.kind = RecordJobKind::kStore;  // a row-only root store
  job.record.page_ids.clear();
  job.record.tail_pages = 0;
  job.record.first_page = 0;
  job.record.parent.reset();
  for (const Message& message : std::vector<Message>{ScanSummary{}, Agreement{}, job}) {
    Result<Message> decoded = DecodeFrame(Encode(message).words);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_TRUE(*decoded == message) << MessageName(message);
  }
}

TEST(WireCodec, LargestAllowedMessagesFitInAFrame) {
  ScanSummary summary;
  for (size_t i = 0; i < kScanRecordsPerFrameMax; ++i) {
    summary.records.push_back({Key(i + 2, static_cast<uint8_t>(i)), Key(1, 3),
                               testing::Bytes<16>(5), true, ~uint64_t{0}});
  }
  Job job = SampleJob();
  job.record.page_ids.assign(kJobPageIdsMax, PageId(0xffffffffU));
  job.record.first_page = 0;
  job.record.tail_pages = kJobPageIdsMax;
  Agreement agreement;
  agreement.entries.assign(kAgreementEntriesPerFrameMax, {Key(~uint64_t{0}, 1), Verdict::kDelete});
  for (const Message& message : std::vector<Message>{summary, job, agreement}) {
    Frame frame = Encode(message);
    EXPECT_LE(frame.size_bytes(), kFrameBytesMax) << MessageName(message);
    Result<Message> decoded = DecodeFrame(frame.words);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_TRUE(*decoded == message) << MessageName(message);
  }
}

// ---- frames that are not one readable message ------------------------------------

TEST(WireCodec, RejectsAnEmptyFrame) {
  ExpectRejected(DecodeFrame({}), StatusCode::kCorruption, "Cap'n Proto");
}

TEST(WireCodec, RejectsGarbage) {
  // A valid table (one segment of two words) around garbage pointers.
  const std::vector<uint64_t> garbage = {uint64_t{2} << 32, 0xdeadbeefdeadbeefULL,
                                         0x0123456789abcdefULL};
  ExpectRejected(DecodeFrame(garbage), StatusCode::kCorruption, "Cap'n Proto");
}

TEST(WireCodec, RejectsATruncatedFrame) {
  Frame frame = Encode(SampleJob());
  frame.words.pop_back();
  ExpectRejected(DecodeFrame(frame.words), StatusCode::kCorruption, "Cap'n Proto");
}

TEST(WireCodec, RejectsTrailingWords) {
  Frame frame = Encode(Heartbeat{1});
  frame.words.push_back(0);
  ExpectRejected(DecodeFrame(frame.words), StatusCode::kCorruption, "after the end");
}

TEST(WireCodec, RejectsAFrameOverTheLimit) {
  Frame frame = Encode(SampleJob());
  ExpectRejected(DecodeFrame(frame.words, frame.size_bytes() - 8), StatusCode::kCorruption,
                 "limit");
}

TEST(WireCodec, RejectsAPointerOutOfBounds) {
  Frame frame = Encode(Heartbeat{1});
  // Word 1 is the root struct pointer: point it far past the segment.
  frame.words[1] = (frame.words[1] & ~uint64_t{0xffffffff}) | (uint64_t{0x00ffff00} << 2);
  ExpectRejected(DecodeFrame(frame.words), StatusCode::kCorruption, "Cap'n Proto");
}

TEST(WireCodec, RejectsTextWithoutItsTerminator) {
  Frame frame = Encode(Close{"abcdefg"});
  auto bytes = std::as_writable_bytes(std::span(frame.words));
  const std::string needle("abcdefg\0", 8);
  auto* at = std::search(reinterpret_cast<char*>(bytes.data()),
                         reinterpret_cast<char*>(bytes.data() + bytes.size()), needle.begin(),
                         needle.end());
  ASSERT_NE(at, reinterpret_cast<char*>(bytes.data() + bytes.size()));
  at[7] = 'h';
  ExpectRejected(DecodeFrame(frame.words), StatusCode::kCorruption, "Cap'n Proto");
}

TEST(WireCodec, RejectsAnUnknownMessageType) {
  const uint32_t offset =
      capnp::Schema::from<s::Envelope>().getProto().getStruct().getDiscriminantOffset();
  ExpectRejected(DecodeMutated(Heartbeat{1},
                               [&](s::Envelope::Builder env) {
                                 PokeDiscriminant<s::Envelope>(env, offset, 200);
                               }),
                 StatusCode::kInvalidArgument, "unknown message type 200");
}

// ---- Hello ------------------------------------------------------------------

TEST(WireCodec, RejectsAShortNonce) {
  ExpectRejected(DecodeMutated(SampleHello(),
                               [](s::Envelope::Builder env) {
                                 env.getHello().setNonce(DataOf(std::string(15, 'n')));
                               }),
                 StatusCode::kInvalidArgument, "Hello.nonce: 15 bytes, expected exactly 16");
}

TEST(WireCodec, RejectsAMissingNonce) {
  ExpectRejected(
      DecodeMutated(SampleHello(), [](s::Envelope::Builder env) { env.getHello().disownNonce(); }),
      StatusCode::kInvalidArgument, "Hello.nonce: 0 bytes");
}

TEST(WireCodec, RejectsALongFingerprint) {
  ExpectRejected(DecodeMutated(SampleHello(),
                               [](s::Envelope::Builder env) {
                                 env.getHello().setLayoutFingerprint(DataOf(std::string(17, 'f')));
                               }),
                 StatusCode::kInvalidArgument, "Hello.layout_fingerprint: 17 bytes");
}

TEST(WireCodec, RejectsARankOutsideTheWorld) {
  ExpectRejected(
      DecodeMutated(SampleHello(), [](s::Envelope::Builder env) { env.getHello().setRank(4); }),
      StatusCode::kInvalidArgument, "Hello.rank: 4 is not below world_size 4");
}

TEST(WireCodec, RejectsAnEmptyWorld) {
  ExpectRejected(DecodeMutated(SampleHello(),
                               [](s::Envelope::Builder env) { env.getHello().setWorldSize(0); }),
                 StatusCode::kInvalidArgument, "Hello.world_size");
}

TEST(WireCodec, RejectsAWorldOverTheLimit) {
  ExpectRejected(DecodeMutated(SampleHello(),
                               [](s::Envelope::Builder env) {
                                 env.getHello().setWorldSize(kWorldSizeMax + 1);
                               }),
                 StatusCode::kInvalidArgument, "Hello.world_size");
}

TEST(WireCodec, RejectsProtocolVersionZero) {
  ExpectRejected(
      DecodeMutated(SampleHello(),
                    [](s::Envelope::Builder env) { env.getHello().setProtocolVersion(0); }),
      StatusCode::kInvalidArgument, "Hello.protocol_version");
}

TEST(WireCodec, RejectsALongRejectReason) {
  ExpectRejected(DecodeMutated(HelloReject{"no"},
                               [](s::Envelope::Builder env) {
                                 const std::string reason(kTextBytesMax + 1, 'r');
                                 env.getHelloReject().setReason(reason);
                               }),
                 StatusCode::kInvalidArgument, "HelloReject.reason: 4097 bytes");
}

// ---- ScanSummary and Agreement -----------------------------------------------

Message SampleSummary() { return SampleMessages()[3]; }

TEST(WireCodec, RejectsAKeyDigestOfTheWrongSize) {
  ExpectRejected(DecodeMutated(SampleSummary(),
                               [](s::Envelope::Builder env) {
                                 env.getScanSummary().getRecords()[1].getKey().setDigest(
                                     DataOf(std::string(8, 'd')));
                               }),
                 StatusCode::kInvalidArgument, "ScanSummary.records[1].key.digest: 8 bytes");
}

TEST(WireCodec, RejectsAParentDigestOfTheWrongSize) {
  ExpectRejected(DecodeMutated(SampleSummary(),
                               [](s::Envelope::Builder env) {
                                 env.getScanSummary().getRecords()[1].getParent().setDigest(
                                     DataOf(std::string(32, 'd')));
                               }),
                 StatusCode::kInvalidArgument, "ScanSummary.records[1].parent.digest: 32 bytes");
}

TEST(WireCodec, RejectsAHeaderDigestOfTheWrongSize) {
  ExpectRejected(DecodeMutated(SampleSummary(),
                               [](s::Envelope::Builder env) {
                                 env.getScanSummary().getRecords()[0].disownHeaderDigest();
                               }),
                 StatusCode::kInvalidArgument, "ScanSummary.records[0].header_digest: 0 bytes");
}

TEST(WireCodec, RejectsARecordWithNoTokens) {
  ExpectRejected(DecodeMutated(SampleSummary(),
                               [](s::Envelope::Builder env) {
                                 env.getScanSummary().getRecords()[0].getKey().setConsumed(0);
                               }),
                 StatusCode::kInvalidArgument, "ScanSummary.records[0].key.consumed: zero");
}

TEST(WireCodec, RejectsAParentThatIsNotAPrefix) {
  ExpectRejected(DecodeMutated(SampleSummary(),
                               [](s::Envelope::Builder env) {
                                 env.getScanSummary().getRecords()[1].getParent().setConsumed(100);
                               }),
                 StatusCode::kInvalidArgument, "ScanSummary.records[1].parent.consumed");
}

TEST(WireCodec, RejectsAnEmptyRecordFile) {
  ExpectRejected(DecodeMutated(SampleSummary(),
                               [](s::Envelope::Builder env) {
                                 env.getScanSummary().getRecords()[1].setSizeBytes(0);
                               }),
                 StatusCode::kInvalidArgument, "ScanSummary.records[1].size_bytes: zero");
}

TEST(WireCodec, RejectsTooManyScanRecords) {
  ExpectRejected(DecodeMutated(SampleSummary(),
                               [](s::Envelope::Builder env) {
                                 env.getScanSummary().initRecords(kScanRecordsPerFrameMax + 1);
                               }),
                 StatusCode::kInvalidArgument, "ScanSummary.records: 32769 records");
}

TEST(WireCodec, RejectsAnUnknownVerdict) {
  ExpectRejected(
      DecodeMutated(SampleMessages()[4],
                    [](s::Envelope::Builder env) {
                      env.getAgreement().getEntries()[2].setVerdict(static_cast<s::Verdict>(3));
                    }),
      StatusCode::kInvalidArgument, "Agreement.entries[2].verdict: unknown verdict 3");
}

TEST(WireCodec, RejectsTooManyAgreementEntries) {
  ExpectRejected(DecodeMutated(SampleMessages()[4],
                               [](s::Envelope::Builder env) {
                                 env.getAgreement().initEntries(kAgreementEntriesPerFrameMax + 1);
                               }),
                 StatusCode::kInvalidArgument, "Agreement.entries: 65537 entries");
}

// ---- Job and JobDone ------------------------------------------------------------

TEST(WireCodec, RejectsAnUnknownJobKind) {
  ExpectRejected(DecodeMutated(SampleJob(),
                               [](s::Envelope::Builder env) {
                                 env.getJob().setKind(static_cast<s::JobKind>(77));
                               }),
                 StatusCode::kInvalidArgument, "Job.kind: unknown kind 77");
}

TEST(WireCodec, RejectsAnUnknownRowSlotVariant) {
  const uint32_t offset =
      capnp::Schema::from<s::Job::RowSlot>().getProto().getStruct().getDiscriminantOffset();
  ExpectRejected(DecodeMutated(SampleJob(),
                               [&](s::Envelope::Builder env) {
                                 PokeDiscriminant<s::Job>(env.getJob(), offset, 9);
                               }),
                 StatusCode::kInvalidArgument, "Job.row_slot: unknown variant 9");
}

TEST(WireCodec, RejectsAJobKeyWithoutTokens) {
  ExpectRejected(
      DecodeMutated(SampleJob(),
                    [](s::Envelope::Builder env) { env.getJob().getKey().setConsumed(0); }),
      StatusCode::kInvalidArgument, "Job.key.consumed: zero");
}

TEST(WireCodec, RejectsAJobKeyDigestOfTheWrongSize) {
  ExpectRejected(
      DecodeMutated(SampleJob(),
                    [](s::Envelope::Builder env) { env.getJob().getKey().initDigest(15); }),
      StatusCode::kInvalidArgument, "Job.key.digest: 15 bytes, expected exactly 16");
}

TEST(WireCodec, RejectsAJobParentNotBelowItsKey) {
  ExpectRejected(
      DecodeMutated(SampleJob(),
                    [](s::Envelope::Builder env) { env.getJob().getParent().setConsumed(128); }),
      StatusCode::kInvalidArgument, "Job.parent.consumed: 128 is not below the key's 128");
}

TEST(WireCodec, RejectsABucketOfTheWrongSize) {
  ExpectRejected(
      DecodeMutated(SampleJob(), [](s::Envelope::Builder env) { env.getJob().initBucket(17); }),
      StatusCode::kInvalidArgument, "Job.bucket: 17 bytes, expected exactly 16");
}

TEST(WireCodec, RejectsAFetchWhosePagesDoNotMatchItsRange) {
  ExpectRejected(
      DecodeMutated(SampleJob(), [](s::Envelope::Builder env) { env.getJob().setFirstPage(3); }),
      StatusCode::kInvalidArgument, "a fetch names 4 page ids from page 3 of a 6 page record");
  ExpectRejected(
      DecodeMutated(SampleJob(), [](s::Envelope::Builder env) { env.getJob().setFirstPage(7); }),
      StatusCode::kInvalidArgument, "from page 7 of a 6 page record");
}

TEST(WireCodec, RejectsAStoreThatDoesNotNameItsWholeTail) {
  ExpectRejected(
      DecodeMutated(SampleJob(),
                    [](s::Envelope::Builder env) { env.getJob().setKind(s::JobKind::STORE); }),
      StatusCode::kInvalidArgument, "a store names 4 page ids from page 2 of a 6 page record");
}

TEST(WireCodec, RejectsTooManyPageIds) {
  ExpectRejected(
      DecodeMutated(SampleJob(),
                    [](s::Envelope::Builder env) { env.getJob().initPageIds(kJobPageIdsMax + 1); }),
      StatusCode::kInvalidArgument, "Job.page_ids: 1048577 page ids");
}

TEST(WireCodec, RejectsAnUnlinkThatNamesPages) {
  ExpectRejected(
      DecodeMutated(SampleJob(),
                    [](s::Envelope::Builder env) { env.getJob().setKind(s::JobKind::UNLINK); }),
      StatusCode::kInvalidArgument, "a unlink job names pages or a state slot");
}

TEST(WireCodec, RejectsAStoreThatNamesNothing) {
  ExpectRejected(DecodeMutated(SampleJob(),
                               [](s::Envelope::Builder env) {
                                 auto job = env.getJob();
                                 job.setKind(s::JobKind::STORE);
                                 job.initPageIds(0);
                                 job.getRowSlot().setNone();
                               }),
                 StatusCode::kInvalidArgument, "a store job names no page and no state slot");
}

Message SampleFailedJobDone() { return SampleMessages()[8]; }

TEST(WireCodec, RejectsAnUnknownOutcome) {
  ExpectRejected(DecodeMutated(SampleFailedJobDone(),
                               [](s::Envelope::Builder env) {
                                 env.getJobDone().setOutcome(static_cast<s::Outcome>(12));
                               }),
                 StatusCode::kInvalidArgument, "JobDone: unknown outcome 12");
}

TEST(WireCodec, RejectsErrorTextOnSuccess) {
  ExpectRejected(DecodeMutated(SampleFailedJobDone(),
                               [](s::Envelope::Builder env) {
                                 auto done = env.getJobDone();
                                 done.setOutcome(s::Outcome::OK);
                                 done.setFilesystemFull(false);
                               }),
                 StatusCode::kInvalidArgument, "an OK outcome carries error text");
}

TEST(WireCodec, RejectsFilesystemFullOnSuccess) {
  ExpectRejected(DecodeMutated(SampleFailedJobDone(),
                               [](s::Envelope::Builder env) {
                                 auto done = env.getJobDone();
                                 done.setOutcome(s::Outcome::OK);
                                 done.setErrorText("");
                               }),
                 StatusCode::kInvalidArgument, "JobDone.filesystem_full");
}

TEST(WireCodec, RejectsALongErrorText) {
  ExpectRejected(DecodeMutated(SampleFailedJobDone(),
                               [](s::Envelope::Builder env) {
                                 env.getJobDone().setErrorText(std::string(kTextBytesMax + 1, 'e'));
                               }),
                 StatusCode::kInvalidArgument, "JobDone.error_text: 4097 bytes");
}

TEST(WireCodec, RejectsAnUnknownDrainedOutcome) {
  ExpectRejected(DecodeMutated(Drained{Status::Ok()},
                               [](s::Envelope::Builder env) {
                                 env.getDrained().setOutcome(static_cast<s::Outcome>(400));
                               }),
                 StatusCode::kInvalidArgument, "Drained: unknown outcome 400");
}

// ---- the sending side obeys the same rules -----------------------------------------

TEST(WireCodec, EncodeRejectsWhatDecodeWould) {
  Hello hello = SampleHello();
  hello.rank = RankId(hello.world_size);
  Job unlink = SampleJob();
  unlink.record.kind = RecordJobKind::kUnlink;
  Job bad_kind = SampleJob();
  bad_kind.record.kind = static_cast<RecordJobKind>(9);
  Job bad_range = SampleJob();
  bad_range.record.tail_pages = 5;
  JobDone done{JobId(1), RankId(1), Status::Ok(), true, 0};
  Agreement agreement;
  agreement.entries.push_back({Key(1, 1), static_cast<Verdict>(7)});
  const std::vector<std::pair<Message, std::string>> cases = {
      {hello, "Hello.rank"},
      {unlink, "names pages"},
      {bad_kind, "Job.kind: unknown kind 9"},
      {bad_range, "Job.page_ids: a fetch names 4 page ids from page 2 of a 5 page record"},
      {done, "JobDone.filesystem_full"},
      {agreement, "Agreement.entries[0].verdict: unknown verdict 7"},
      {Close{std::string(kTextBytesMax + 1, 'c')}, "Close.reason"},
  };
  for (const auto& [message, names] : cases) {
    Result<Frame> frame = EncodeFrame(message);
    ASSERT_FALSE(frame.ok()) << names;
    EXPECT_EQ(frame.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(frame.status().message(), HasSubstr(names));
  }
}

}  // namespace
}  // namespace strata::wire
