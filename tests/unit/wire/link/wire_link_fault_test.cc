// Links facing hostile or stuck peers: garbage, oversized and truncated
// frames close the link with a counted reason; a peer that never reads fills
// the bounded send queue, and Send() refuses instead of blocking.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <cstring>

#include "tests/unit/wire/link/raw_peer.h"
#include "tests/unit/wire/wire_test_util.h"
#include "wire/codec.h"
#include "wire/link/link.h"

namespace strata::wire {
namespace {

using testing::EncodeWords;
using ::testing::HasSubstr;
using testing::LoopbackListener;
using testing::RawPeer;
using testing::Recorder;

// The link closed for `rejection`, counted once, and no other reason counted.
void ExpectRejectedOnce(const LinkState& state, const LinkStats& stats, FrameRejection rejection) {
  EXPECT_EQ(state.phase, LinkPhase::kClosed);
  EXPECT_EQ(state.cause, CloseCause::kRejectedFrame);
  EXPECT_THAT(state.reason.message(), HasSubstr(std::string(FrameRejectionName(rejection))));
  for (size_t r = 0; r < kFrameRejectionCount; ++r) {
    EXPECT_EQ(stats.rejected_frames[r], r == static_cast<size_t>(rejection) ? 1u : 0u)
        << FrameRejectionName(static_cast<FrameRejection>(r));
  }
}

TEST(WireLinkFault, GarbageClosesTheLinkWithACountedReason) {
  LoopbackListener listener;
  RawPeer peer(listener);
  // First word declares 0x41414142 segments.
  peer.Write(std::as_bytes(std::span("AAAABBBBCCCCDDDDgarbage garbage garbage")));
  const LinkState state = peer.WaitClosed();
  ExpectRejectedOnce(state, peer.link().stats(), FrameRejection::kBadSegmentTable);
  EXPECT_EQ(state.reason.code(), StatusCode::kCorruption);
  EXPECT_TRUE(peer.SeesConnectionEnd());
}

TEST(WireLinkFault, UnreadableFrameClosesTheLink) {
  LoopbackListener listener;
  RawPeer peer(listener);
  // A valid table (one segment of 3 words) around a root pointer far out of bounds.
  peer.WriteWords({uint64_t{3} << 32, 0x0000000100007ff0ULL, 0, 0});
  const LinkState state = peer.WaitClosed();
  ExpectRejectedOnce(state, peer.link().stats(), FrameRejection::kMalformed);
  EXPECT_EQ(state.reason.code(), StatusCode::kCorruption);
}

TEST(WireLinkFault, InvalidMessageClosesTheLinkAfterEarlierFramesArrive) {
  LoopbackListener listener;
  RawPeer peer(listener);
  peer.WriteWords(EncodeWords(Heartbeat{5}));
  Hello hello = testing::SampleHello();
  std::vector<uint64_t> words = EncodeWords(hello);
  // Turn the 16-byte nonce into a 15-byte one by rewriting its list pointer's
  // element count (Data is a byte list: count in the upper 29 bits).
  bool patched = false;
  for (uint64_t& word : words) {
    if ((word & 3) == 1 && (word >> 35) == 16 && ((word >> 32) & 7) == 2) {
      word = (word & ((uint64_t{1} << 35) - 1)) | (uint64_t{15} << 35);
      patched = true;
      break;
    }
  }
  ASSERT_TRUE(patched);
  peer.WriteWords(words);
  std::optional<Message> first = peer.events().messages.Pop();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(std::get<Heartbeat>(*first).sequence, 5u);
  const LinkState state = peer.WaitClosed();
  ExpectRejectedOnce(state, peer.link().stats(), FrameRejection::kInvalidMessage);
  EXPECT_EQ(state.reason.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(state.reason.message(), HasSubstr("Hello.nonce"));
  EXPECT_EQ(peer.link().stats().frames_in, 1u);
}

TEST(WireLinkFault, OversizedFrameClosesBeforeItsBodyIsSent) {
  ListenerOptions options = testing::QuietListening();
  options.link_options.frame_bytes_max = size_t{1} << 20;
  LoopbackListener listener(options);
  RawPeer peer(listener);
  // Only the table: one segment one word over the limit. No body ever follows,
  // so the link can only close by refusing the declared size.
  peer.WriteWords({(uint64_t{1} << 20) / 8 << 32});
  const LinkState state = peer.WaitClosed();
  ExpectRejectedOnce(state, peer.link().stats(), FrameRejection::kOversized);
  EXPECT_THAT(state.reason.message(), HasSubstr("1048584 bytes"));
  EXPECT_EQ(peer.link().stats().bytes_in, 8u);
  EXPECT_TRUE(peer.SeesConnectionEnd());
}

TEST(WireLinkFault, StreamEndingInsideAFrameIsAnIoError) {
  LoopbackListener listener;
  RawPeer peer(listener);
  std::vector<uint64_t> words = EncodeWords(testing::SampleJob());
  words.resize(words.size() / 2);
  peer.WriteWords(words);
  peer.EndStream();
  const LinkState state = peer.WaitClosed();
  EXPECT_EQ(state.cause, CloseCause::kIoError);
  EXPECT_THAT(state.reason.message(), HasSubstr("inside a frame"));
  EXPECT_EQ(peer.link().stats().frames_in, 0u);
}

// The peer accepts the connection but never reads: the kernel buffers fill,
// then the link's queue, then Send() refuses. Every Send() returns at once;
// the loop ends on the first refusal, within a bound on attempts far above
// what kernel buffers can absorb.
TEST(WireLinkFault, PeerThatNeverReadsFillsTheQueueAndSendRefuses) {
  LoopbackListener listener;
  LinkOptions options = testing::QuietLinkOptions();
  options.name = "sender";
  options.send_queue_frames_max = 4;
  options.close_timeout = std::chrono::milliseconds(200);
  auto dialed = Dial(listener.endpoint(), options);
  ASSERT_TRUE(dialed.ok());
  std::unique_ptr<Link> sender = std::move(*dialed);
  Recorder sender_events;
  sender->Start(sender_events.Handlers());
  std::unique_ptr<Link> stuck_peer = listener.NextLink();  // never started: never reads
  ASSERT_NE(stuck_peer, nullptr);

  Job job = testing::SampleJob();
  job.record.page_ids.assign(size_t{1} << 16, PageId(1));  // 256 KiB frames
  job.record.tail_pages = job.record.first_page + (uint32_t{1} << 16);
  constexpr int kAttemptsMax = 4096;  // 1 GiB: far beyond socket buffers
  Status refused;
  int attempts = 0;
  while (attempts < kAttemptsMax) {
    ++attempts;
    Status sent = sender->Send(job);
    if (!sent.ok()) {
      refused = sent;
      break;
    }
  }
  ASSERT_FALSE(refused.ok()) << "Send() accepted " << attempts << " frames nobody reads";
  EXPECT_EQ(refused.code(), StatusCode::kBusy) << refused.ToString();
  EXPECT_THAT(refused.message(), HasSubstr("send queue full"));
  EXPECT_THAT(refused.message(), HasSubstr("sender"));
  EXPECT_EQ(sender->stats().send_queue_full, 1u);
  EXPECT_EQ(sender->state().phase, LinkPhase::kOpen);  // refusing is not failing the link

  // Closing cannot flush to a peer that never reads; it gives up at its deadline.
  sender->Close();
  const LinkState state = sender->state();
  EXPECT_EQ(state.cause, CloseCause::kLocalClose);
  EXPECT_EQ(state.reason.code(), StatusCode::kAborted);
  EXPECT_THAT(state.reason.message(), HasSubstr("close deadline"));
  // Every accepted frame was either written or dropped at the deadline.
  const LinkStats stats = sender->stats();
  EXPECT_EQ(stats.frames_out + stats.frames_dropped, static_cast<uint64_t>(attempts - 1));
}

}  // namespace
}  // namespace strata::wire
