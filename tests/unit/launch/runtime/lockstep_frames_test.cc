#include "launch/runtime/lockstep_frames.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

std::array<uint8_t, kLockstepHeaderBytes> HeaderOf(const std::vector<uint8_t>& frame) {
  std::array<uint8_t, kLockstepHeaderBytes> h{};
  std::copy_n(frame.begin(), kLockstepHeaderBytes, h.begin());
  return h;
}

TEST(LockstepFramesTest, HeaderCarriesOpAndBodyLength) {
  const std::vector<uint8_t> frame =
      EncodeLockstepFrame({.op = LockstepOp::kWork, .body = {1, 2, 3}});
  ASSERT_EQ(frame.size(), kLockstepHeaderBytes + 3);
  Result<LockstepHeader> h = DecodeLockstepHeader(HeaderOf(frame));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->op, LockstepOp::kWork);
  EXPECT_EQ(h->body_bytes, 3u);
}

TEST(LockstepFramesTest, RejectsAnUnknownOp) {
  std::vector<uint8_t> frame = EncodeLockstepFrame({.op = LockstepOp::kDone});
  frame[4] = 0;
  EXPECT_FALSE(DecodeLockstepHeader(HeaderOf(frame)).ok());
  frame[4] = static_cast<uint8_t>(LockstepOp::kAnswer) + 1;
  EXPECT_FALSE(DecodeLockstepHeader(HeaderOf(frame)).ok());
}

TEST(LockstepFramesTest, RejectsABodyAboveTheLimit) {
  std::vector<uint8_t> frame = EncodeLockstepFrame({.op = LockstepOp::kWork});
  frame[3] = 0xff;
  EXPECT_FALSE(DecodeLockstepHeader(HeaderOf(frame)).ok());
}

TEST(LockstepFramesTest, HelloCarriesTokenAndRank) {
  const std::string token(kLockstepTokenChars, 'a');
  Result<LockstepHello> h = DecodeLockstepHello(EncodeLockstepHello(token, 7));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->token, token);
  EXPECT_EQ(h->rank, 7u);
}

TEST(LockstepFramesTest, RejectsAHelloOfTheWrongSize) {
  EXPECT_FALSE(DecodeLockstepHello(EncodeLockstepHello("short", 1)).ok());
}

TEST(LockstepFramesTest, AnswerCarriesTheReportOrTheFailure) {
  Result<PageWorkReport> ok =
      DecodeLockstepAnswer(EncodeLockstepAnswer(PageWorkReport{.checked_bytes = 42}));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->checked_bytes, 42u);
  Result<PageWorkReport> bad =
      DecodeLockstepAnswer(EncodeLockstepAnswer(Status::Corruption("byte 3 differs")));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(bad.status().message(), "byte 3 differs");
}

TEST(LockstepFramesTest, RejectsATruncatedAnswerOrAnUnknownCode) {
  std::vector<uint8_t> answer = EncodeLockstepAnswer(PageWorkReport{});
  answer.pop_back();
  EXPECT_FALSE(DecodeLockstepAnswer(answer).ok());
  answer = EncodeLockstepAnswer(PageWorkReport{});
  answer[0] = 0xee;
  EXPECT_FALSE(DecodeLockstepAnswer(answer).ok());
}

}  // namespace
}  // namespace strata
