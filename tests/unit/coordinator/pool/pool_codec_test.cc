#include "coordinator/pool/pool_codec.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <gtest/gtest.h>

#include <cstring>

#include "wire/pool.capnp.h"

namespace strata::pool {
namespace {

PrefixKey Key(uint64_t consumed, uint8_t tag) {
  PrefixKey k;
  k.consumed = consumed;
  k.digest[3] = tag;
  return k;
}

template <typename T>
T RoundTrip(const T& message) {
  auto frame = EncodePoolFrame(message);
  EXPECT_TRUE(frame.ok()) << frame.status().ToString();
  auto decoded = DecodePoolFrame(frame->words);
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(std::holds_alternative<T>(*decoded));
  return std::get<T>(*decoded);
}

// Encodes a raw Envelope the way a hostile peer could.
template <typename Fill>
std::vector<uint64_t> Raw(Fill fill) {
  capnp::MallocMessageBuilder builder;
  fill(builder.initRoot<wire::pool_schema::Envelope>());
  kj::Array<capnp::word> flat = capnp::messageToFlatArray(builder);
  std::vector<uint64_t> words(flat.size());
  std::memcpy(words.data(), flat.begin(), flat.asBytes().size());
  return words;
}

TEST(PoolCodecTest, HelloRoundTrips) {
  PoolHello hello;
  hello.instance_sources = {"GPU-1", "GPU-2"};
  hello.model_identity[31] = 4;
  hello.layout[15] = 5;
  hello.rank_plane_bytes = {{1, 2, 3}, {4, 5, 6}};
  hello.page_tokens = 64;
  const PoolHello back = RoundTrip(hello);
  EXPECT_EQ(back.instance_sources, hello.instance_sources);
  EXPECT_EQ(back.model_identity, hello.model_identity);
  EXPECT_EQ(back.layout, hello.layout);
  EXPECT_EQ(back.rank_plane_bytes, hello.rank_plane_bytes);
  EXPECT_EQ(back.page_tokens, 64u);
  EXPECT_FALSE(back.proof.has_value()) << "no proof on a Unix socket";

  hello.proof = HelloProof{};
  hello.proof->at(31) = 7;
  hello.client_nonce = Nonce{};
  hello.client_nonce->bytes[0] = 9;
  const PoolHello tcp = RoundTrip(hello);
  EXPECT_EQ(tcp.proof, hello.proof);
  EXPECT_EQ(tcp.client_nonce, hello.client_nonce);
}

TEST(PoolCodecTest, TheTcpHandshakeRoundTrips) {
  PoolChallenge challenge;
  challenge.nonce.bytes[15] = 3;
  EXPECT_EQ(RoundTrip(challenge).nonce, challenge.nonce);
  PoolHelloAccept accept;
  accept.pool_name = "shared";
  accept.arena_path = "/dev/shm/strata-arena";
  accept.proof = HelloProof{};
  accept.proof->at(0) = 4;
  const PoolHelloAccept back = RoundTrip(accept);
  EXPECT_EQ(back.arena_path, accept.arena_path);
  EXPECT_EQ(back.proof, accept.proof);
}

TEST(PoolCodecTest, AChallengeOrProofOfAnotherSizeIsRefused) {
  const auto short_nonce = Raw([](wire::pool_schema::Envelope::Builder env) {
    const uint8_t bytes[8] = {};
    env.initChallenge().setNonce(capnp::Data::Reader(bytes, sizeof bytes));
  });
  EXPECT_FALSE(DecodePoolFrame(short_nonce).ok());
  const auto short_proof = Raw([](wire::pool_schema::Envelope::Builder env) {
    const uint8_t bytes[5] = {};
    env.initHello().setProof(capnp::Data::Reader(bytes, sizeof bytes));
  });
  EXPECT_FALSE(DecodePoolFrame(short_proof).ok());
}

TEST(PoolCodecTest, TheDataChannelsMessagesRoundTrip) {
  PoolHello hello;
  hello.instance_sources = {"GPU-1"};
  hello.rank_plane_bytes = {{1, 2}};
  hello.page_tokens = 64;
  hello.data_channel = true;
  EXPECT_TRUE(RoundTrip(hello).data_channel);

  PoolHelloAccept accept;
  accept.pool_name = "shared";
  accept.data_token = DataToken{};
  accept.data_token->at(15) = 8;
  accept.window_bytes = kPoolWindowBytesMax;
  accept.window_credits = 16;
  const PoolHelloAccept back = RoundTrip(accept);
  EXPECT_EQ(back.data_token, accept.data_token);
  EXPECT_EQ(back.window_bytes, kPoolWindowBytesMax);
  EXPECT_EQ(back.window_credits, 16u);
  EXPECT_FALSE(RoundTrip(PoolHelloAccept{}).data_token.has_value());

  PoolDataHello data_hello;
  data_hello.instance[0] = 1;
  data_hello.token[1] = 2;
  data_hello.proof[31] = 3;
  const PoolDataHello dh = RoundTrip(data_hello);
  EXPECT_EQ(dh.instance, data_hello.instance);
  EXPECT_EQ(dh.token, data_hello.token);
  EXPECT_EQ(dh.proof, data_hello.proof);
  EXPECT_EQ(RoundTrip(PoolDataAccept{.status = Status::NotFound("no such token")}).status.code(),
            StatusCode::kNotFound);

  const PoolSlotWrite w{.request_id = 4, .put = PutId(5), .offset = 6, .bytes = 7};
  const PoolSlotWrite wb = RoundTrip(w);
  EXPECT_EQ(wb.request_id, 4u);
  EXPECT_EQ(wb.put, PutId(5));
  EXPECT_EQ(wb.offset, 6u);
  EXPECT_EQ(wb.bytes, 7u);
  const PoolSlotRead r{
      .request_id = 8, .claim = ClaimId(9), .record = 10, .offset = 11, .bytes = 12};
  const PoolSlotRead rb = RoundTrip(r);
  EXPECT_EQ(rb.claim, ClaimId(9));
  EXPECT_EQ(rb.record, 10u);
  EXPECT_EQ(rb.offset, 11u);
  EXPECT_EQ(rb.bytes, 12u);
  const PoolSlotData d{.request_id = 13, .status = Status::Ok(), .bytes = 14, .progress_epoch = 15};
  const PoolSlotData db = RoundTrip(d);
  EXPECT_EQ(db.request_id, 13u);
  EXPECT_EQ(db.bytes, 14u);
  EXPECT_EQ(db.progress_epoch, 15u);
}

TEST(PoolCodecTest, AWindowOverTheLimitOrAGrantWithoutWindowsIsRefused) {
  for (auto kind : {0, 1, 2}) {
    const auto big = Raw([kind](wire::pool_schema::Envelope::Builder env) {
      const uint64_t over = kPoolWindowBytesMax + 1;
      if (kind == 0) env.initSlotWrite().setBytes(over);
      if (kind == 1) env.initSlotRead().setBytes(over);
      if (kind == 2) env.initSlotData().setBytes(over);
    });
    const auto decoded = DecodePoolFrame(big);
    ASSERT_FALSE(decoded.ok()) << kind;
    EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument) << kind;
  }
  const auto no_windows = Raw([](wire::pool_schema::Envelope::Builder env) {
    auto a = env.initHelloAccept();
    const uint8_t bytes[16] = {};
    a.setScope(capnp::Data::Reader(bytes, sizeof bytes));
    a.setInstance(capnp::Data::Reader(bytes, sizeof bytes));
    a.setDataToken(capnp::Data::Reader(bytes, sizeof bytes));
    a.setWindowBytes(0);
    a.setWindowCredits(16);
  });
  EXPECT_FALSE(DecodePoolFrame(no_windows).ok()) << "a data token without windows";
}

TEST(PoolCodecTest, PutAndClaimRoundTrip) {
  PoolPut put{.request_id = 7,
              .put = PutRequest{.key = Key(128, 1),
                                .parent = Key(64, 2),
                                .bucket_digest = {},
                                .bytes = 999,
                                .kind = PutKind::kOwn}};
  const PoolPut put_back = RoundTrip(put);
  EXPECT_EQ(put_back.request_id, 7u);
  EXPECT_EQ(put_back.put.key, put.put.key);
  EXPECT_EQ(put_back.put.parent, put.put.parent);
  EXPECT_EQ(put_back.put.kind, PutKind::kOwn);

  const PoolCommit commit_back =
      RoundTrip(PoolCommit{.request_id = 9, .put = PutId(4), .checksum = 0xabcdef});
  EXPECT_EQ(commit_back.put, PutId(4));
  EXPECT_EQ(commit_back.checksum, 0xabcdefu) << "the commit carries the checksum";

  PoolPut root = put;
  root.put.parent.reset();
  EXPECT_FALSE(RoundTrip(root).put.parent.has_value()) << "an absent parent stays absent";

  PoolClaimAnswer claim{
      .request_id = 8,
      .status = Status::Ok(),
      .claim = ClaimId(3),
      .budget_ms = 11'000,
      .records = {ClaimedRecord{
          .key = Key(64, 1), .bytes = 10, .checksum = 5, .slots = {SlotId(4), SlotId(2)}}}};
  const PoolClaimAnswer claim_back = RoundTrip(claim);
  EXPECT_EQ(claim_back.claim, ClaimId(3));
  EXPECT_EQ(claim_back.budget_ms, 11'000u);
  ASSERT_EQ(claim_back.records.size(), 1u);
  EXPECT_EQ(claim_back.records[0].slots, claim.records[0].slots);
}

TEST(PoolCodecTest, LookupOfALongHistoryRoundTrips) {
  // Each list is read once: a long history stays inside the traversal limit.
  PoolLookup lookup{.request_id = 2, .tokens = {}, .resident_tokens = 64, .before = 100'000};
  for (uint32_t i = 0; i < 100'000; ++i) lookup.tokens.push_back(i * 7);
  const PoolLookup back = RoundTrip(lookup);
  EXPECT_EQ(back.tokens, lookup.tokens);
  EXPECT_EQ(back.resident_tokens, 64u);
}

TEST(PoolCodecTest, StatusRoundTrips) {
  const PoolDone done{.request_id = 1, .status = Status::Busy("arena full")};
  const PoolDone back = RoundTrip(done);
  EXPECT_EQ(back.status, done.status);
}

TEST(PoolCodecTest, EveryAnswerCarriesTheProgressEpoch) {
  EXPECT_EQ(RoundTrip(PoolDone{.request_id = 1, .status = Status::Ok(), .progress_epoch = 41})
                .progress_epoch,
            41u);
  EXPECT_EQ(RoundTrip(PoolPutAnswer{.request_id = 2,
                                    .status = Status::Busy("arena full"),
                                    .put = {},
                                    .slots = {},
                                    .progress_epoch = 42})
                .progress_epoch,
            42u);
  PoolLookupAnswer lookup;
  lookup.request_id = 3;
  lookup.progress_epoch = 43;
  EXPECT_EQ(RoundTrip(lookup).progress_epoch, 43u);
  EXPECT_EQ(RoundTrip(PoolClaimAnswer{.request_id = 4,
                                      .status = Status::Ok(),
                                      .claim = ClaimId(1),
                                      .budget_ms = 1,
                                      .records = {},
                                      .progress_epoch = 44})
                .progress_epoch,
            44u);
}

TEST(PoolCodecTest, RejectsDigestOfWrongSize) {
  auto words = Raw([](wire::pool_schema::Envelope::Builder env) {
    auto put = env.initPut();
    put.initKey().setDigest(kj::heapArray<kj::byte>(15));
    put.setBucket(kj::heapArray<kj::byte>(16));
  });
  auto decoded = DecodePoolFrame(words);
  EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(decoded.status().message().find("Put.key"), std::string::npos);
}

TEST(PoolCodecTest, LookupAnswerCarriesItsChainSizes) {
  PoolLookupAnswer a;
  a.request_id = 5;
  a.chain = {Key(128, 1), Key(320, 2)};
  a.base_consumed = 64;
  a.tail_pages = {1, 3};
  const PoolLookupAnswer back = RoundTrip(a);
  EXPECT_EQ(back.chain, a.chain);
  EXPECT_EQ(back.base_consumed, 64u);
  EXPECT_EQ(back.tail_pages, (std::vector<uint32_t>{1, 3}));
  // The encoder refuses a tail count that differs from the keys.
  a.tail_pages = {1};
  EXPECT_EQ(EncodePoolFrame(a).status().code(), StatusCode::kInvalidArgument);
}

// A hostile manager's sizes: a tail count other than the keys', or a base
// at or past the chain's first record.
TEST(PoolCodecTest, RejectsLookupAnswerSizesThatDisagreeWithTheChain) {
  auto answer = [](unsigned tails, uint64_t base) {
    return Raw([&](wire::pool_schema::Envelope::Builder env) {
      auto a = env.initLookupAnswer();
      auto key = a.initChain(1)[0];
      key.setConsumed(128);
      key.setDigest(kj::heapArray<kj::byte>(16));
      a.initTailPages(tails);
      a.setBaseConsumed(base);
    });
  };
  EXPECT_TRUE(DecodePoolFrame(answer(1, 64)).ok());
  const auto counted = DecodePoolFrame(answer(2, 64));
  EXPECT_EQ(counted.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(counted.status().message().find("tailPages"), std::string::npos);
  const auto based = DecodePoolFrame(answer(1, 128));
  EXPECT_EQ(based.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(based.status().message().find("baseConsumed"), std::string::npos);
}

TEST(PoolCodecTest, RejectsUnknownStatusCode) {
  auto words =
      Raw([](wire::pool_schema::Envelope::Builder env) { env.initDone().setStatusCode(200); });
  EXPECT_EQ(DecodePoolFrame(words).status().code(), StatusCode::kInvalidArgument);
}

TEST(PoolCodecTest, RejectsTrailingWords) {
  auto frame = EncodePoolFrame(PoolRelease{.request_id = 1, .claim = ClaimId(2)});
  ASSERT_TRUE(frame.ok());
  std::vector<uint64_t> words = frame->words;
  words.push_back(0);
  EXPECT_EQ(DecodePoolFrame(words).status().code(), StatusCode::kCorruption);
}

TEST(PoolCodecTest, RejectsOverlongText) {
  PoolHello hello;
  hello.instance_sources = {std::string(kPoolTextBytesMax + 1, 'x')};
  EXPECT_EQ(EncodePoolFrame(hello).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata::pool

namespace strata::pool {
namespace {

TEST(PoolCodecTest, TheExportMessagesRoundTrip) {
  Digest128 bucket{};
  bucket[5] = 9;
  PoolAnnounce announce{
      .request_id = 4,
      .reset = true,
      .held = {Holding{.key = Key(640, 1), .generation = 3, .bucket_digest = bucket}},
      .withdrawn = {Holding{.key = Key(320, 2), .generation = 2, .bucket_digest = {}},
                    Holding{.key = Key(64, 3), .generation = 1, .bucket_digest = {}}},
      .sizes = {.page_record_bytes = 8192, .row_segment_bytes = 4096}};
  const PoolAnnounce a = RoundTrip(announce);
  EXPECT_EQ(a.request_id, 4u);
  EXPECT_TRUE(a.reset);
  ASSERT_EQ(a.held.size(), 1u);
  EXPECT_EQ(a.held[0].key, Key(640, 1));
  EXPECT_EQ(a.held[0].generation, 3u);
  EXPECT_EQ(a.held[0].bucket_digest, bucket);
  ASSERT_EQ(a.withdrawn.size(), 2u);
  EXPECT_EQ(a.withdrawn[1].key, Key(64, 3));
  EXPECT_EQ(a.withdrawn[1].generation, 1u);
  EXPECT_EQ(a.sizes.page_record_bytes, 8192u);
  EXPECT_EQ(a.sizes.row_segment_bytes, 4096u);

  PoolExportAsk ask{.ask = ExportRequest{.put = PutId(11),
                                         .key = Key(640, 1),
                                         .generation = 3,
                                         .parent = Key(320, 2),
                                         .bucket_digest = bucket,
                                         .start_page = 5,
                                         .bytes = 65536,
                                         .slots = {SlotId(2), SlotId(7)}}};
  const PoolExportAsk back = RoundTrip(ask);
  EXPECT_EQ(back.ask.put, PutId(11));
  EXPECT_EQ(back.ask.key, Key(640, 1));
  EXPECT_EQ(back.ask.parent, Key(320, 2));
  EXPECT_EQ(back.ask.bucket_digest, bucket);
  EXPECT_EQ(back.ask.start_page, 5u);
  EXPECT_EQ(back.ask.bytes, 65536u);
  EXPECT_EQ(back.ask.slots, (std::vector<SlotId>{SlotId(2), SlotId(7)}));
  ask.ask.parent.reset();
  EXPECT_FALSE(RoundTrip(ask).ask.parent.has_value());
}

TEST(PoolCodecTest, HostileExportMessagesAreRefused) {
  const auto parent_above = Raw([](wire::pool_schema::Envelope::Builder env) {
    auto a = env.initExportAsk();
    const uint8_t digest[16] = {};
    a.initKey().setConsumed(64);
    a.getKey().setDigest(capnp::Data::Reader(digest, sizeof digest));
    a.initParent().setConsumed(128);
    a.getParent().setDigest(capnp::Data::Reader(digest, sizeof digest));
    a.setBucket(capnp::Data::Reader(digest, sizeof digest));
  });
  EXPECT_EQ(DecodePoolFrame(parent_above).status().code(), StatusCode::kInvalidArgument);
  const auto huge_sizes = Raw([](wire::pool_schema::Envelope::Builder env) {
    env.initAnnounce().setPageRecordBytes(uint64_t{1} << 60);
  });
  EXPECT_EQ(DecodePoolFrame(huge_sizes).status().code(), StatusCode::kInvalidArgument);
  const auto too_many = Raw([](wire::pool_schema::Envelope::Builder env) {
    env.initAnnounce().initHeld(kPoolHoldingsPerAnnounceMax + 1);
  });
  EXPECT_EQ(DecodePoolFrame(too_many).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata::pool
