// How a link cuts its byte stream into frames (wire/link/link_read.cc): reads
// land in a read-ahead buffer and frames are parsed from it, except a frame
// part of at least kReadAheadBytes, which is read straight into the frame.
// Whatever way the peer's writes split or join the frames, each arrives
// whole, once, in order; and the peer's end is told apart from an end
// inside a frame. A raw socket writes the bytes, so the splits are the test's.
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <span>
#include <thread>
#include <vector>

#include "tests/unit/wire/link/raw_peer.h"
#include "tests/unit/wire/wire_test_util.h"
#include "wire/link/link.h"

namespace strata::wire {
namespace {

using testing::EncodeWords;
using testing::LoopbackListener;
using testing::RawPeer;

std::vector<std::byte> Bytes(const Message& message) {
  const std::vector<uint64_t> words = EncodeWords(message);
  const std::span<const std::byte> bytes = std::as_bytes(std::span(words));
  return {bytes.begin(), bytes.end()};
}

// A JobData frame of `size` data bytes, each byte a function of its place.
JobData BigChunk(size_t size) {
  JobData d{.id = JobId(3), .offset = 0, .total = size, .data = {}};
  d.data.reserve(size);
  for (size_t i = 0; i < size; ++i) d.data.push_back(static_cast<std::byte>((i * 131) >> 3));
  return d;
}

// Writes `bytes` in pieces cut at `cuts` (offsets, ascending), pausing
// between pieces so each tends to reach the link in a read of its own.
void WriteCut(RawPeer& peer, std::span<const std::byte> bytes, const std::vector<size_t>& cuts) {
  size_t from = 0;
  for (size_t cut : cuts) {
    peer.Write(bytes.subspan(from, cut - from));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    from = cut;
  }
  peer.Write(bytes.subspan(from));
}

TEST(LinkReadAheadTest, FramesInOneWriteArriveEachWholeAndInOrder) {
  LoopbackListener listener;
  RawPeer peer(listener);
  std::vector<std::byte> all;
  for (uint64_t seq = 1; seq <= 50; ++seq) {
    const std::vector<std::byte> frame = Bytes(Heartbeat{seq});
    all.insert(all.end(), frame.begin(), frame.end());
  }
  peer.Write(all);
  for (uint64_t seq = 1; seq <= 50; ++seq) {
    std::optional<Message> m = peer.events().messages.Pop();
    ASSERT_TRUE(m.has_value()) << "frame " << seq;
    EXPECT_EQ(std::get<Heartbeat>(*m).sequence, seq);
  }
  EXPECT_EQ(peer.link().stats().frames_in, 50u);
  peer.EndStream();  // so closing the link need not wait for it
}

TEST(LinkReadAheadTest, AFrameCutAnywhereArrivesWhole) {
  LoopbackListener listener;
  RawPeer peer(listener);
  const Message job = testing::SampleJob();
  const std::vector<std::byte> frame = Bytes(job);
  ASSERT_GT(frame.size(), 24u);
  // Inside the first word, at its end, inside the body, one byte before the end.
  WriteCut(peer, frame, {3, 8, frame.size() / 2, frame.size() - 1});
  std::optional<Message> m = peer.events().messages.Pop();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(*m, job);
  // And a frame whose first bytes share a write with the end of the one before.
  std::vector<std::byte> two = Bytes(Heartbeat{1});
  const std::vector<std::byte> second = Bytes(Heartbeat{2});
  two.insert(two.end(), second.begin(), second.end());
  WriteCut(peer, two, {two.size() - second.size() + 5});
  for (uint64_t seq = 1; seq <= 2; ++seq) {
    std::optional<Message> h = peer.events().messages.Pop();
    ASSERT_TRUE(h.has_value());
    EXPECT_EQ(std::get<Heartbeat>(*h).sequence, seq);
  }
  peer.EndStream();
}

TEST(LinkReadAheadTest, ALargeFrameBetweenSmallOnesArrivesByteExact) {
  LoopbackListener listener;
  RawPeer peer(listener);
  const JobData big = BigChunk(size_t{1} << 20);  // far past the read-ahead buffer
  std::vector<std::byte> bytes = Bytes(Heartbeat{1});
  const std::vector<std::byte> big_frame = Bytes(big);
  const size_t big_at = bytes.size();
  bytes.insert(bytes.end(), big_frame.begin(), big_frame.end());
  const std::vector<std::byte> after = Bytes(Heartbeat{2});
  bytes.insert(bytes.end(), after.begin(), after.end());
  // The first heartbeat and the big frame's start in one write, its middle
  // in pieces on both sides of the read-ahead size, its end with the last
  // heartbeat's start.
  WriteCut(peer, bytes,
           {big_at + 100, big_at + 100 + (size_t{20} << 10), big_at + (size_t{512} << 10),
            big_at + big_frame.size() + 3});
  std::optional<Message> first = peer.events().messages.Pop();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(std::get<Heartbeat>(*first).sequence, 1u);
  std::optional<Message> chunk = peer.events().messages.Pop();
  ASSERT_TRUE(chunk.has_value());
  ASSERT_TRUE(std::holds_alternative<JobData>(*chunk));
  EXPECT_TRUE(std::get<JobData>(*chunk) == big) << "the large frame's bytes differ";
  std::optional<Message> last = peer.events().messages.Pop();
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(std::get<Heartbeat>(*last).sequence, 2u);
  EXPECT_EQ(peer.link().stats().bytes_in, bytes.size());
  peer.EndStream();
}

TEST(LinkReadAheadTest, TheEndAfterBufferedFramesIsThePeersClose) {
  LoopbackListener listener;
  RawPeer peer(listener);
  std::vector<std::byte> two = Bytes(Heartbeat{1});
  const std::vector<std::byte> second = Bytes(Heartbeat{2});
  two.insert(two.end(), second.begin(), second.end());
  peer.Write(two);
  peer.EndStream();
  const LinkState state = peer.WaitClosed();
  EXPECT_EQ(state.cause, CloseCause::kPeerClosed) << DescribeClose(state);
  EXPECT_EQ(peer.events().messages.size(), 2u) << "frames read with the end were lost";
}

TEST(LinkReadAheadTest, TheEndAfterPartOfAFrameIsAnIoError) {
  LoopbackListener listener;
  RawPeer peer(listener);
  std::vector<std::byte> bytes = Bytes(Heartbeat{1});
  const std::vector<std::byte> second = Bytes(Heartbeat{2});
  bytes.insert(bytes.end(), second.begin(), second.begin() + 3);  // inside its first word
  peer.Write(bytes);
  peer.EndStream();
  const LinkState state = peer.WaitClosed();
  EXPECT_EQ(state.cause, CloseCause::kIoError) << DescribeClose(state);
  EXPECT_EQ(peer.events().messages.size(), 1u);
}

}  // namespace
}  // namespace strata::wire
