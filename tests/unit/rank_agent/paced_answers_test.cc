// Paced host-data sends (SendPaced, PacedAnswers) over a channel the test
// drains by hand: chunks stop while the link queues kPacedQueueBytes, go on
// once it drained, arrive in order and whole, and a fetch's answer follows
// its last chunk; a refused chunk turns the answer into that failure.
#include "rank_agent/paced_answers.h"

#include <gtest/gtest.h>

#include <variant>
#include <vector>

namespace strata {
namespace {

using Bytes = std::vector<std::byte>;

// A channel that queues what it is sent until the test drains it.
class HeldChannel final : public wire::MessageChannel {
 public:
  Status Send(const wire::Message& message) override {
    if (refuse_after && sent.size() >= *refuse_after) return Status::Unavailable("closed");
    if (const auto* d = std::get_if<wire::JobData>(&message)) queued += d->data.size();
    sent.push_back(message);
    return Status::Ok();
  }
  void Close() override {}
  wire::LinkState state() const override { return {}; }
  wire::LinkStats stats() const override { return {}; }
  size_t queued_bytes() const override { return queued; }
  size_t send_queue_bytes_max() const override { return bound; }
  void NotifyWhenDrained() override { ++drain_requests; }

  std::vector<wire::Message> sent;
  size_t queued = 0;
  size_t bound = size_t{64} << 20;
  int drain_requests = 0;
  std::optional<size_t> refuse_after;  // messages it takes before refusing
};

FetchedShare ShareOf(uint64_t bytes) {
  FetchedShare s{.bytes = std::make_unique<AlignedBuffer>(bytes), .buffers = {}};
  for (uint64_t i = 0; i < bytes; ++i) s.bytes->data()[i] = static_cast<std::byte>(i * 29 + 3);
  s.buffers.pages.push_back({s.bytes->data(), bytes});
  return s;
}

size_t ChunksIn(const std::vector<wire::Message>& sent) {
  size_t n = 0;
  for (const wire::Message& m : sent) n += std::holds_alternative<wire::JobData>(m) ? 1 : 0;
  return n;
}

TEST(PacedAnswersTest, ChunksStopAtTheQueueBoundAndTheAnswerFollowsTheLastOne) {
  const uint64_t total = 3 * kPacedQueueBytes + 12345;  // several rounds of the bound
  FetchedShare share = ShareOf(total);
  const Bytes expected(share.bytes->data(), share.bytes->data() + total);
  PacedAnswers answers;
  answers.Add(std::move(share), wire::JobDone{JobId(4), RankId(1), Status::Ok(), false, total});
  HeldChannel link;
  std::vector<wire::JobDone> sent;
  Bytes got;
  for (int round = 0; round < 100 && !answers.empty(); ++round) {
    ASSERT_TRUE(answers.Send(link, sent).ok());
    EXPECT_LE(link.queued, kPacedQueueBytes + wire::kJobDataChunkBytesMax)
        << "more queued than the pacing allows";
    if (!answers.empty()) {
      EXPECT_TRUE(sent.empty()) << "answered before its bytes were all sent";
      ASSERT_FALSE(std::holds_alternative<wire::JobDone>(link.sent.back()));
      EXPECT_EQ(link.drain_requests, round + 1) << "stopped without asking for the drain";
    }
    link.queued = 0;  // the link drained
  }
  ASSERT_TRUE(answers.empty());
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_TRUE(sent[0].status.ok());
  ASSERT_TRUE(std::holds_alternative<wire::JobDone>(link.sent.back()));
  for (const wire::Message& m : link.sent) {
    if (const auto* d = std::get_if<wire::JobData>(&m)) {
      EXPECT_EQ(d->offset, got.size()) << "a chunk out of order";
      EXPECT_EQ(d->total, total);
      got.insert(got.end(), d->data.begin(), d->data.end());
    }
  }
  EXPECT_EQ(got, expected);
  EXPECT_GT(ChunksIn(link.sent), 3u);
}

TEST(PacedAnswersTest, TheLimitLeavesALinksBoundRoomForOneMoreChunk) {
  HeldChannel link;
  EXPECT_EQ(PacedQueueLimit(link), kPacedQueueBytes);  // a 64 MiB queue
  link.bound = size_t{16} << 20;
  const size_t limit = PacedQueueLimit(link);
  EXPECT_LT(limit + wire::kJobDataChunkBytesMax, link.bound);
  EXPECT_GT(limit, 0u);
  link.bound = wire::kJobDataChunkBytesMax;  // room for one chunk: only into an empty queue
  EXPECT_EQ(PacedQueueLimit(link), 1u);
}

TEST(PacedAnswersTest, ARefusedChunkFailsTheAnswerAndARefusedAnswerIsAnError) {
  PacedAnswers answers;
  answers.Add(ShareOf(2 * wire::kJobDataChunkBytesMax),
              wire::JobDone{JobId(7), RankId(2), Status::Ok(), false, 99});
  HeldChannel link;
  link.refuse_after = 1;  // the second chunk is refused
  std::vector<wire::JobDone> sent;
  Status s = answers.Send(link, sent);
  // The answer itself is refused too: the caller ends the session.
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(sent.empty());

  PacedAnswers second;
  second.Add(ShareOf(2 * wire::kJobDataChunkBytesMax),
             wire::JobDone{JobId(8), RankId(2), Status::Ok(), false, 99});
  // Refuses every JobData, takes the answer.
  class DataRefuser final : public wire::MessageChannel {
   public:
    Status Send(const wire::Message& message) override {
      if (std::holds_alternative<wire::JobData>(message)) return Status::Busy("queue full");
      sent.push_back(message);
      return Status::Ok();
    }
    void Close() override {}
    wire::LinkState state() const override { return {}; }
    wire::LinkStats stats() const override { return {}; }
    std::vector<wire::Message> sent;
  } refuser;
  ASSERT_TRUE(second.Send(refuser, sent).ok());
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status.code(), StatusCode::kBusy);
  EXPECT_NE(sent[0].status.message().find("sending the bytes a fetch read"), std::string::npos);
  EXPECT_EQ(sent[0].bytes, 0u);
  EXPECT_TRUE(second.empty());
}

}  // namespace
}  // namespace strata
